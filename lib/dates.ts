/**
 * The dates and instants records carry, checked as both databases can keep them. ISO 8601 and JavaScript have a
 * year 0, Postgres does not: a record, bound or cursor of it would fail in the database, a 500.
 */

/** Whether an instant is of the years 1 to 9999 (false for an invalid Date). */
export const inRecordYears = (d: Date): boolean => d.getUTCFullYear() >= 1 && d.getUTCFullYear() <= 9999

/** `YYYY-MM-DD` of a day that exists (2026-02-30 does not), of the years 1 to 9999. */
export function isRecordDate (v: string): boolean {
  const d = new Date(`${v}T00:00:00.000Z`)
  return /^\d{4}-\d{2}-\d{2}$/.test(v) && inRecordYears(d) && d.toISOString().startsWith(v)
}

/** An instant written exactly as `toISOString` writes it (UTC, milliseconds), of the years 1 to 9999. */
export function isRecordInstant (v: string): boolean {
  const d = new Date(v)
  return inRecordYears(d) && d.toISOString() === v
}

/**
 * An instant a person typed: ISO 8601 with a zone (`2026-11-28T09:30:00Z`, `+01:00`), or without one, as a
 * `datetime-local` field sends it (`2026-11-28T09:30`), read as UTC. Undefined when it is neither, names a day that
 * does not exist, or is outside the years 1 to 9999.
 */
export function parseTypedInstant (v: string): Date | undefined {
  const m = /^(\d{4}-\d{2}-\d{2})[T ](\d{2}:\d{2}(?::\d{2}(?:\.\d{1,3})?)?)(Z|[+-]\d{2}:\d{2})?$/i.exec(v.trim())
  if (!m || !isRecordDate(m[1]!)) return undefined
  const d = new Date(`${m[1]}T${m[2]}${m[3]?.toUpperCase() ?? 'Z'}`)
  return Number.isNaN(d.getTime()) || !inRecordYears(d) ? undefined : d
}
