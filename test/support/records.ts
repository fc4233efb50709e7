import { fromUnits, minorDigits, roundUnits, toUnits } from '../../lib/money.js'
import { RECORD_SAMPLES } from '../../schemas/records.js'

/**
 * Valid records for tests: the schemas' own examples with what a test changes, and the sums made right again
 * (unless `sums: false`, for tests of wrong sums).
 */
type Json = Record<string, unknown>
export interface Line { description?: string, quantity: string, unit_amount: string, tax_amount: string }

const stamp = (n: number): string => new Date(Date.UTC(2026, 10, 1) + n * 1000).toISOString()

/** A document with its sums computed from its lines (amount, subtotal, total, amount_due). */
function document (base: Json, over: Json, sums: boolean): Json {
  const r: Json = { ...structuredClone(base), ...over }
  if (!sums) return r
  const digits = minorDigits(r.currency as string)
  const lines = (r.line_items as Line[]).map(l => {
    const amount = roundUnits(toUnits(l.quantity, 4) * toUnits(l.unit_amount, digits), 4 + digits, digits)
    return { description: l.description ?? 'Item', ...l, amount: fromUnits(amount, digits) }
  })
  const sub = lines.reduce((s, l) => s + toUnits(l.amount, digits), 0n)
  const tax = lines.reduce((s, l) => s + toUnits(l.tax_amount, digits), 0n)
  const total = sub + tax
  const paid = 'amount_paid' in over ? toUnits(over.amount_paid as string, digits) : r.status === 'paid' ? total : 0n
  return {
    ...r,
    line_items: lines,
    subtotal: fromUnits(sub, digits),
    tax_total: fromUnits(tax, digits),
    total: fromUnits(total, digits),
    amount_paid: fromUnits(paid, digits),
    amount_due: fromUnits(total - paid, digits)
  }
}

/** An invoice; `n` gives it its own id and updated_at (n seconds after 2026-11-01). */
export const invoice = (over: Json = {}, { sums = true } = {}): Json =>
  document(RECORD_SAMPLES.invoice, over, sums)

export const bill = (over: Json = {}, { sums = true } = {}): Json => document(RECORD_SAMPLES.bill, over, sums)

export const customer = (over: Json = {}): Json => ({ ...structuredClone(RECORD_SAMPLES.customer), ...over })

/** The n-th of a series: its own id and an updated_at n seconds after 2026-11-01. */
export const nth = (prefix: string, n: number): Json =>
  ({ id: `${prefix}_${String(n).padStart(5, '0')}`, updated_at: stamp(n), created_at: stamp(0) })
