import { Ajv, type ErrorObject, type ValidateFunction } from 'ajv'
import { isRecordDate, isRecordInstant } from '../../../lib/dates.js'
import {
  decimals, fromUnits, isCurrency, isNegativeZero, minorDigits, roundUnits, toUnits
} from '../../../lib/money.js'
import type { RecordKindName } from '../../../lib/topics.js'
import type { ErrorBody } from '../../../schemas/errors.js'
import { RECORD_KINDS } from './kinds.js'

type Detail = NonNullable<ErrorBody['details']>[number]
type Json = Record<string, unknown>

// Strict like request bodies: no coercion, unknown fields refused, every problem reported.
const ajv = new Ajv({ allErrors: true, strict: false })
const checks = Object.fromEntries(Object.values(RECORD_KINDS).map(k => [k.name, ajv.compile(k.schema)])) as
  Record<RecordKindName, ValidateFunction>

const schemaDetail = (at: string) => (e: ErrorObject): Detail => ({
  location: 'body',
  path: at + e.instancePath,
  message: e.keyword === 'additionalProperties'
    ? `unknown field ${JSON.stringify((e.params as { additionalProperty?: string }).additionalProperty)}`
    : (e.message ?? 'is invalid')
})

/** Text the databases keep as sent: no NUL (Postgres refuses it) and no lone surrogate (it would become U+FFFD). */
function textProblems (value: unknown, path: string, problem: (path: string, message: string) => void): void {
  if (typeof value === 'string') {
    if (value.includes('\0')) problem(path, 'must not contain NUL characters')
    else if (/\p{Cs}/u.test(value)) problem(path, 'must be well-formed Unicode (a lone surrogate is not)')
  } else if (Array.isArray(value)) {
    value.forEach((v, i) => textProblems(v, `${path}/${i}`, problem))
  } else if (value !== null && typeof value === 'object') {
    for (const [k, v] of Object.entries(value)) textProblems(v, `${path}/${k}`, problem)
  }
}

const MONEY = ['subtotal', 'tax_total', 'total', 'amount_paid', 'amount_due'] as const
const LINE_MONEY = ['unit_amount', 'tax_amount', 'amount'] as const
const QUANTITY_SCALE = 4

/**
 * What is wrong with a record of `kind` sent as an event's `data`, each problem at its JSON pointer under `at`
 * (`/data`, or `/3/data` in a batch): first its schema, then what a schema cannot say: text a database keeps as
 * sent, real dates and instants, a real currency, its minor digits, and the sums (docs/producers.md#validation).
 * Empty when it is fine.
 */
export function recordProblems (kind: RecordKindName, data: unknown, at: string): Detail[] {
  const check = checks[kind]
  if (!check(data)) return (check.errors ?? []).map(schemaDetail(at))
  const r = data as Json
  const problems: Detail[] = []
  const problem = (path: string, message: string) => problems.push({ location: 'body', path: at + path, message })
  textProblems(r, '', problem)
  if (problems.length > 0) return problems

  for (const field of ['created_at', 'updated_at', 'paid_at']) {
    const v = r[field]
    if (typeof v === 'string' && !isRecordInstant(v)) problem(`/${field}`, 'must be a real instant')
  }
  const currency = r.currency as string
  if (!isCurrency(currency)) problem('/currency', 'must be an ISO 4217 currency code in circulation')
  if (!RECORD_KINDS[kind].document) return problems

  for (const field of ['issue_date', 'due_date']) {
    if (!isRecordDate(r[field] as string)) problem(`/${field}`, 'must be a real date')
  }
  if (problems.some(p => p.path === `${at}/currency`)) return problems
  const digits = minorDigits(currency)
  const zero = fromUnits(0n, digits)
  const money = (path: string, v: string): bigint | undefined => {
    if (decimals(v) !== digits) {
      const plural = digits === 1 ? '' : 's'
      problem(path, `must have ${digits} decimal${plural} for ${currency} (e.g. "${zero}")`)
    } else if (isNegativeZero(v)) {
      // The sums would hold (-0 = 0), so say it here, once, rather than let it through as sent.
      problem(path, `must not be "${v}": a negative zero is not an amount (zero is "${zero}")`)
    } else {
      return toUnits(v, digits)
    }
    return undefined
  }

  const lines = r.line_items as Json[]
  let subtotal: bigint | undefined = 0n
  lines.forEach((line, i) => {
    const [unit, , amount] = LINE_MONEY.map(f => money(`/line_items/${i}/${f}`, line[f] as string))
    if (unit === undefined || amount === undefined) { subtotal = undefined; return }
    const product = roundUnits(toUnits(line.quantity as string, QUANTITY_SCALE) * unit, QUANTITY_SCALE + digits, digits)
    if (product !== amount) {
      problem(`/line_items/${i}/amount`, `must equal quantity × unit_amount (${fromUnits(product, digits)})`)
    }
    if (subtotal !== undefined) subtotal += amount
  })
  const [sub, tax, total, paid, due] = MONEY.map(f => money(`/${f}`, r[f] as string))
  if (subtotal !== undefined && sub !== undefined && sub !== subtotal) {
    problem('/subtotal', `must equal the sum of line_items[].amount (${fromUnits(subtotal, digits)})`)
  }
  if (sub !== undefined && tax !== undefined && total !== undefined && total !== sub + tax) {
    problem('/total', `must equal subtotal + tax_total (${fromUnits(sub + tax, digits)})`)
  }
  if (total !== undefined && paid !== undefined && due !== undefined && due !== total - paid) {
    problem('/amount_due', `must equal total − amount_paid (${fromUnits(total - paid, digits)})`)
  }
  return problems
}
