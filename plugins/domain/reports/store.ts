import type { Db } from '../../infrastructure/db/types.js'
import type { AgedReportKind } from './kinds.js'

/** The five buckets in the order entries are ranked by: the most overdue first. Sums are minor units, as digits. */
export type Buckets = [over90: string, d61to90: string, d31to60: string, d1to30: string, current: string]

/** Where a page of entries ends: the last entry's buckets, contact and currency. */
export interface AgedPosition { buckets: Buckets, partyId: string, currency: string }

export interface AgedQuery {
  orgRefId: string
  entityRefId: string
  /** YYYY-MM-DD: days overdue are counted to this day. */
  asOf: string
  partyId?: string | undefined
  currency?: string | undefined
  after?: AgedPosition | undefined
  limit: number
}

/** One contact in one currency, or (without a contact) one currency's totals over every contact. */
export interface AgedSums {
  partyId: string | null
  partyName: string | null
  currency: string
  buckets: Buckets
  total: string
  count: number
  oldestDueDate: string | null
}

export interface AgedPage {
  totals: AgedSums[]
  /** The page's entries, in rank order. */
  entries: AgedSums[]
  /** Whether more entries follow the page's last. */
  more: boolean
}

interface Row {
  part: 'entry' | 'total'
  party_id: string | null
  party_name: string | null
  currency: string
  over_90: string
  d61_90: string
  d31_60: string
  d1_30: string
  current: string
  total: string
  count: number
  oldest: string | null
}

/**
 * The aged report of invoices (receivables) or bills (payables): one statement per page, over the open items the
 * records keep beside their JSON (migrations/013_aged_reports.sql). The tenant's open items are added up by
 * contact and currency in the order the open-items index holds them; the page is the entries after the cursor's
 * position in rank order, and the totals add up every entry, so they cover all contacts, not only the page.
 */
export function createAgedReportStore (db: Db, report: AgedReportKind) {
  return {
    async page (q: AgedQuery): Promise<AgedPage> {
      const { text, params } = agedStatement(report.table, q)
      const rows = await db.query<Row>(text, params)
      const sums = (r: Row): AgedSums => ({
        partyId: r.party_id,
        partyName: r.party_name,
        currency: r.currency,
        buckets: [r.over_90, r.d61_90, r.d31_60, r.d1_30, r.current],
        total: r.total,
        count: Number(r.count),
        oldestDueDate: r.oldest
      })
      const entries = rows.filter(r => r.part === 'entry').map(sums)
      return {
        totals: rows.filter(r => r.part === 'total').map(sums),
        entries: entries.slice(0, q.limit),
        more: entries.length > q.limit
      }
    }
  }
}

export type AgedReportStore = ReturnType<typeof createAgedReportStore>

/**
 * The statement of a page and its parameters. Conditions are written only when given (a contact, a currency, a
 * cursor's position), so that a contact's report reads only that contact's range of the open-items index; the text
 * depends on which are given, not on their values, and is prepared once per connection for each such shape.
 *
 * Ranking is by each bucket descending, then contact and currency ascending: as one row compared ascending, the
 * buckets negated. Contacts and currencies compare byte-wise (collation "C"), as record ids do.
 */
function agedStatement (table: string, q: AgedQuery): { text: string, params: unknown[] } {
  const params: unknown[] = []
  const param = (value: unknown, type: string) => { params.push(value); return `$${params.length}::${type}` }
  const org = param(q.orgRefId, 'text')
  const entity = param(q.entityRefId, 'text')
  const asOf = param(q.asOf, 'date')
  const tenant = (t: string) => `record_tenant(${t}.org_ref_id, ${t}.entity_ref_id) = record_tenant(${org}, ${entity})`
  const filters = [
    ...(q.partyId === undefined ? [] : [`t.party_id = ${param(q.partyId, 'text')}`]),
    ...(q.currency === undefined ? [] : [`t.currency = ${param(q.currency, 'text')}`])
  ].map(c => `and ${c}`).join(' ')
  const rank = '-e.over_90, -e.d61_90, -e.d31_60, -e.d1_30, -e.current, e.party_id collate "C", e.currency collate "C"'
  const a = q.after
  const after = a === undefined
    ? ''
    : `where (${rank}) > (${a.buckets.map(b => `-${param(b, 'numeric')}`).join(', ')},
                          ${param(a.partyId, 'text')} collate "C", ${param(a.currency, 'text')} collate "C")`
  const limit = param(q.limit + 1, 'int')
  // The bucket of an item by its due date: days overdue = as_of - due_date.
  const bucket = (cond: string) => `coalesce(sum(t.amount_due_minor) filter (where ${cond}), 0)`
  const text = `with entries as (
  select t.party_id, t.currency,
         ${bucket(`t.due_date < ${asOf} - 90`)} as over_90,
         ${bucket(`t.due_date between ${asOf} - 90 and ${asOf} - 61`)} as d61_90,
         ${bucket(`t.due_date between ${asOf} - 60 and ${asOf} - 31`)} as d31_60,
         ${bucket(`t.due_date between ${asOf} - 30 and ${asOf} - 1`)} as d1_30,
         ${bucket(`t.due_date >= ${asOf}`)} as current,
         sum(t.amount_due_minor) as total, count(*) as count, min(t.due_date) as oldest
    from ${table} t
   where ${tenant('t')}
     and t.status = 'authorised' and t.amount_due_minor <> 0
     ${filters}
   group by t.party_id, t.currency
), page as (
  select e.*, row_number() over (order by ${rank}) as k
    from entries e
   ${after}
   order by ${rank}
   limit ${limit}
)
select 'entry' as part, p.party_id, n.party_name, p.currency, p.over_90::text, p.d61_90::text, p.d31_60::text,
       p.d1_30::text, p.current::text, p.total::text, p.count::int, p.oldest::text, p.k
  from page p
  cross join lateral (
    select r.party_name from ${table} r
     where ${tenant('r')} and r.party_id = p.party_id
     order by r.updated_at desc, r.id desc
     limit 1) n
union all
select 'total', null, null, e.currency, sum(e.over_90)::text, sum(e.d61_90)::text, sum(e.d31_60)::text,
       sum(e.d1_30)::text, sum(e.current)::text, sum(e.total)::text, sum(e.count)::int, min(e.oldest)::text, null
  from entries e
 group by e.currency
 order by 1 desc, 13, 4`
  return { text, params }
}
