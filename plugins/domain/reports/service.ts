import type { FastifyInstance } from 'fastify'
import { LRUCache } from 'lru-cache'
import { isRecordDate } from '../../../lib/dates.js'
import type { Clock } from '../../../lib/clock.js'
import type { CursorCodec, CursorScope } from '../../../lib/cursor.js'
import { fromUnits, isCurrency, minorDigits } from '../../../lib/money.js'
import type { AgedArgs } from '../../../schemas/records.js'
import type { Principal } from '../auth/access-state.js'
import { errors } from '../../infrastructure/errors.js'
import type { AgedReportKind } from './kinds.js'
import type { AgedPosition, AgedReportStore, AgedSums, Buckets } from './store.js'

const DEFAULT_LIMIT = 50

/** Characters of answers held per report and instance (docs/records.md): up to 16 MiB, typically 2,000 pages. */
const ANSWERS_HELD = 8_000_000

type AgedReportMetrics = Pick<FastifyInstance['metrics'], 'agedReportPage'>

/** What a report's cursor carries: the day counted to, and the last entry shown. */
interface CursorPosition { d: string, b: Buckets, p: string, c: string }

const MINOR_UNITS = /^-?(0|[1-9]\d*)$/
const isPosition = (v: unknown): v is CursorPosition => {
  const c = v as CursorPosition
  return typeof v === 'object' && v !== null && typeof c.d === 'string' && isRecordDate(c.d) &&
    Array.isArray(c.b) && c.b.length === 5 && c.b.every(x => typeof x === 'string' && MINOR_UNITS.test(x)) &&
    typeof c.p === 'string' && !c.p.includes('\0') && typeof c.c === 'string' && /^[A-Z]{3}$/.test(c.c)
}

/**
 * The cursor's scope: the tenant, the report, and the filters it was issued with (a cursor resumes only the same
 * report). The day counted to is in the cursor itself, so that a report asked for without `as_of` keeps the day
 * of its first page across midnight.
 */
const scopeOf = (report: AgedReportKind, p: Principal, partyId?: string, currency?: string): CursorScope =>
  ({ tenant: [p.orgRefId, p.entityRefId], resource: report.path, order: JSON.stringify([partyId, currency]) })

/** The arguments the schema lets through and no report can answer: a day Postgres has not, an unknown currency. */
function refuseArgs (args: AgedArgs, partyId: string | undefined): void {
  const details: Array<{ location: string, path: string, message: string }> = []
  const refuse = (path: string, message: string) => details.push({ location: 'querystring', path, message })
  if (args.as_of !== undefined && !isRecordDate(args.as_of)) refuse('/as_of', 'must be a date of the years 1 to 9999')
  if (args.currency !== undefined && !isCurrency(args.currency)) {
    refuse('/currency', 'must be an ISO 4217 currency code in circulation')
  }
  if (details.length > 0) throw errors.validation(details)
  // Postgres neither stores nor compares text with NUL: no record has such a contact.
  if (partyId?.includes('\0')) throw errors.nulCharacter()
}

/**
 * The aged receivables (invoices) or payables (bills) of the caller's tenant, for the REST route and the MCP tool
 * alike: open items added up by contact, currency and days overdue, in exact minor units, written as decimal
 * strings with the currency's digits. Answers the wire JSON text.
 */
export function createAgedReportService (
  report: AgedReportKind, store: AgedReportStore, cursors: CursorCodec, clock: Clock, metrics: AgedReportMetrics
) {
  const { party, filter } = report
  /**
   * Answers already written, by page asked for, with the snapshot they were written from. A snapshot never changes,
   * so an answer is right for as long as its snapshot is the one the page reads, which the store says with every
   * page (`known`, `unchanged`): a page asked for again costs the store a look at the tenant's version, not the
   * rows and their writing. At most ANSWERS_HELD characters, the least recently asked for dropped first.
   */
  const answers = new LRUCache<string, { snapshotId: string, text: string }>({
    maxSize: ANSWERS_HELD,
    sizeCalculation: (answer, key) => answer.text.length + key.length
  })
  return {
    report,

    async page (p: Principal, args: AgedArgs): Promise<string> {
      const partyId = args[filter]
      refuseArgs(args, partyId)
      const scope = scopeOf(report, p, partyId, args.currency)
      let asOf = args.as_of ?? new Date(clock.now()).toISOString().slice(0, 10)
      let after: AgedPosition | undefined
      if (args.cursor !== undefined) {
        const at = cursors.decode(scope, args.cursor, isPosition)
        if (at === undefined || (args.as_of !== undefined && args.as_of !== at.d)) throw errors.invalidCursor()
        asOf = at.d
        after = { buckets: at.b, partyId: at.p, currency: at.c }
      }
      const limit = args.limit ?? DEFAULT_LIMIT
      const q = {
        orgRefId: p.orgRefId, entityRefId: p.entityRefId, asOf, partyId, currency: args.currency, after, limit
      }
      const key = JSON.stringify(q)
      const held = answers.get(key)
      const page = await store.page({ ...q, known: held?.snapshotId })
      metrics.agedReportPage(report.path, page.snapshot)
      if (held && page.unchanged) return held.text
      const last = page.entries.at(-1)
      const next = page.more && last
        ? cursors.encode(scope, { d: asOf, b: last.buckets, p: last.partyId!, c: last.currency })
        : null
      const text = JSON.stringify({
        as_of: asOf,
        totals: page.totals.map(t => ({ currency: t.currency, ...money(t) })),
        contacts: page.entries.map(e => ({
          [party]: { id: e.partyId, name: e.partyName },
          currency: e.currency,
          ...money(e),
          oldest_due_date: e.oldestDueDate
        })),
        next_cursor: next
      })
      answers.set(key, { snapshotId: page.snapshotId, text })
      return text
    }
  }
}

export type AgedReportService = ReturnType<typeof createAgedReportService>

/** An entry's or a total's buckets, total and count, as the answer writes them. */
function money (s: AgedSums) {
  const digits = minorDigits(s.currency)
  const amount = (units: string) => fromUnits(BigInt(units), digits)
  const [over90, d61to90, d31to60, d1to30, current] = s.buckets
  return {
    current: amount(current),
    '1_30': amount(d1to30),
    '31_60': amount(d31to60),
    '61_90': amount(d61to90),
    over_90: amount(over90),
    total: amount(s.total),
    count: s.count
  }
}
