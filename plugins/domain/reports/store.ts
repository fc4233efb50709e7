import { DatabaseUnavailableError, type Db } from '../../infrastructure/db/types.js'
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
  /** `state`: the tenant's version and the snapshot read (one row); then the page's entries and the totals. */
  part: 'state' | 'entry' | 'total'
  version: string | null
  snapshot: string | null
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

/** How many times a page asks again when the snapshot it was to read was replaced under it, before giving up. */
const ATTEMPTS = 3

/**
 * The aged report of invoices (receivables) or bills (payables), read from a snapshot: the tenant's open items
 * added up by contact and currency to one day, once per change of the tenant's documents (migrations/
 * 014_aged_snapshots.sql). A page is one statement that reads the snapshot of the tenant's current version (its
 * entries after the cursor's position, in rank order, and its totals, which cover every contact, not only the
 * page). Without one, the snapshot is made first, in one statement over the open-items index, and read by its id:
 * its sums are the records as they were when that statement began, after the page was asked for.
 */
export function createAgedReportStore (db: Db, report: AgedReportKind) {
  /** Snapshots being made by this process, by tenant, day and the version seen: asked for once, awaited by all. */
  const making = new Map<string, Promise<string | undefined>>()

  async function read (q: AgedQuery, snapshot?: string): Promise<{ page?: AgedPage, version: string }> {
    const { text, params } = pageStatement(report.table, q, snapshot)
    const rows = await db.query<Row>(text, params)
    // No state when the snapshot named was dropped since (a newer version's snapshot replaced it).
    const state = rows.find(r => r.part === 'state')
    if (!state?.snapshot) return { version: state?.version ?? '' }
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
    const page = {
      totals: rows.filter(r => r.part === 'total').map(sums),
      entries: entries.slice(0, q.limit),
      more: entries.length > q.limit
    }
    return { page, version: state.version ?? '' }
  }

  function make (q: AgedQuery, version: string): Promise<string | undefined> {
    const key = JSON.stringify([q.orgRefId, q.entityRefId, q.asOf, version])
    let made = making.get(key)
    if (!made) {
      const { text, params } = snapshotStatement(report.table, q)
      made = db.query<{ id: string }>(text, params)
        .then(rows => rows[0]?.id, lostRace)
        .finally(() => making.delete(key))
      making.set(key, made)
    }
    return made
  }

  return {
    async page (q: AgedQuery): Promise<AgedPage> {
      for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
        const current = await read(q)
        if (current.page) return current.page
        // Undefined when another process made the same snapshot at the same moment: the next read finds it.
        const id = await make(q, current.version)
        if (id === undefined) continue
        const made = await read(q, id)
        if (made.page) return made.page
      }
      // Each snapshot made was replaced before it could be read (a tenant's days asked for faster than kept).
      throw new DatabaseUnavailableError('aged report snapshots replaced while read', { cause: undefined })
    }
  }
}

export type AgedReportStore = ReturnType<typeof createAgedReportStore>

/**
 * Two processes making snapshots of one tenant's report at the same moment can each wait for a row the other
 * dropped (a deadlock, or in a stricter isolation a serialization failure): the snapshot is then asked for again.
 */
function lostRace (err: unknown): undefined {
  const code = (err as { code?: unknown }).code
  if (code === '40P01' || code === '40001') return undefined
  throw err
}

/** How many snapshots of one tenant's report are kept at its current version: the days asked for most recently. */
const DAYS_KEPT = 8

/** The condition that a row of the versions or snapshots (`t`) is of the tenant's report. */
const ofReport = (t: string, org: string, entity: string, table: string): string =>
  `${t}.org_ref_id = ${org} and ${t}.entity_ref_id = ${entity} and ${t}.report = '${table}'`

/** The `$n` placeholders of a statement, typed, and their values in order. */
function parameters () {
  const params: unknown[] = []
  const param = (value: unknown, type: string) => { params.push(value); return `$${params.length}::${type}` }
  return { params, param }
}

/**
 * The statement that makes a snapshot of the tenant's report to `as_of` and answers its id (none when another
 * transaction made the same one at the same moment). One statement, so that the version it records and the sums it
 * keeps are of the same moment: a change committed later moves the version past it. It also drops the tenant's
 * snapshots of earlier versions, and of days asked for less recently than the last few.
 */
export function snapshotStatement (table: string, q: AgedQuery): { text: string, params: unknown[] } {
  const { params, param } = parameters()
  const org = param(q.orgRefId, 'text')
  const entity = param(q.entityRefId, 'text')
  const asOf = param(q.asOf, 'date')
  const ofTenant = (t: string) => ofReport(t, org, entity, table)
  const tenant = (t: string) => `record_tenant(${t}.org_ref_id, ${t}.entity_ref_id) = record_tenant(${org}, ${entity})`
  // The bucket of an item by its due date: days overdue = as_of - due_date.
  const bucket = (cond: string) => `coalesce(sum(t.amount_due_minor) filter (where ${cond}), 0)`
  const text = `with current as (
  select coalesce((select v.version from aged_report_versions v where ${ofTenant('v')}), 0) as version
), snapshot as (
  insert into aged_snapshots (org_ref_id, entity_ref_id, report, as_of, version)
  select ${org}, ${entity}, '${table}', ${asOf}, c.version from current c
  on conflict do nothing
  returning id
), entries as (
  select t.party_id, t.currency,
         ${bucket(`t.due_date < ${asOf} - 90`)} as over_90,
         ${bucket(`t.due_date between ${asOf} - 90 and ${asOf} - 61`)} as d61_90,
         ${bucket(`t.due_date between ${asOf} - 60 and ${asOf} - 31`)} as d31_60,
         ${bucket(`t.due_date between ${asOf} - 30 and ${asOf} - 1`)} as d1_30,
         ${bucket(`t.due_date >= ${asOf}`)} as current,
         sum(t.amount_due_minor) as total, count(*) as count, min(t.due_date) as oldest
    from ${table} t
   where ${tenant('t')} and t.status = 'authorised' and t.amount_due_minor <> 0
   group by t.party_id, t.currency
), kept as (
  insert into aged_balances (snapshot_id, party_id, party_name, currency, over_90, d61_90, d31_60, d1_30, current,
                             total, count, oldest)
  select s.id, e.party_id, n.party_name, e.currency, e.over_90, e.d61_90, e.d31_60, e.d1_30, e.current, e.total,
         e.count, e.oldest
    from snapshot s cross join entries e
    cross join lateral (
      select r.party_name from ${table} r
       where ${tenant('r')} and r.party_id = e.party_id
       order by r.updated_at desc, r.id desc
       limit 1) n
  union all
  select s.id, null, null, e.currency, sum(e.over_90), sum(e.d61_90), sum(e.d31_60), sum(e.d1_30), sum(e.current),
         sum(e.total), sum(e.count), min(e.oldest)
    from snapshot s cross join entries e
   group by s.id, e.currency
), dropped as (
  delete from aged_snapshots o
   where ${ofTenant('o')}
     and (o.version < (select c.version from current c)
          or o.id not in (select k.id from aged_snapshots k
                           where ${ofTenant('k')} and k.version = (select c.version from current c)
                           order by k.id desc limit ${DAYS_KEPT - 1}))
)
select id::text from snapshot`
  return { text, params }
}

/**
 * The statement of a page and its parameters: the snapshot of the tenant's current version (or the one named), its
 * entries after the cursor's position and its totals. Conditions are written only when given (a contact, a
 * currency, a cursor's position); the text depends on which are given, not on their values, and is prepared once
 * per connection for each such shape.
 *
 * Ranking is by each bucket descending, then contact and currency ascending: as one row compared ascending, the
 * buckets negated, as the snapshot's rank index holds them. Contacts and currencies compare byte-wise (collation
 * "C"), as record ids do.
 */
export function pageStatement (table: string, q: AgedQuery, snapshot?: string): { text: string, params: unknown[] } {
  const { params, param } = parameters()
  let found: string
  if (snapshot === undefined) {
    const org = param(q.orgRefId, 'text')
    const entity = param(q.entityRefId, 'text')
    const ofTenant = (t: string) => ofReport(t, org, entity, table)
    found = `select s.id, c.version
               from (select coalesce((select v.version from aged_report_versions v where ${ofTenant('v')}), 0)
                              as version) c
               left join aged_snapshots s
                 on ${ofTenant('s')} and s.as_of = ${param(q.asOf, 'date')} and s.version = c.version`
  } else {
    found = `select s.id, null::bigint as version from aged_snapshots s where s.id = ${param(snapshot, 'bigint')}`
  }
  const filters = [
    ...(q.partyId === undefined ? [] : [`b.party_id = ${param(q.partyId, 'text')}`]),
    ...(q.currency === undefined ? [] : [`b.currency = ${param(q.currency, 'text')}`])
  ].map(c => `and ${c}`).join(' ')
  const rank = '-b.over_90, -b.d61_90, -b.d31_60, -b.d1_30, -b.current, b.party_id collate "C", b.currency collate "C"'
  const a = q.after
  const after = a === undefined
    ? ''
    : `and (${rank}) > (${a.buckets.map(x => `-${param(x, 'numeric')}`).join(', ')},
                        ${param(a.partyId, 'text')} collate "C", ${param(a.currency, 'text')} collate "C")`
  const limit = param(q.limit + 1, 'int')
  const columns = (b: string) => `${b}.party_id, ${b}.party_name, ${b}.currency, ${b}.over_90::text, ${b}.d61_90::text,
         ${b}.d31_60::text, ${b}.d1_30::text, ${b}.current::text, ${b}.total::text, ${b}.count::int, ${b}.oldest::text`
  // A contact's totals add up its entries; without a contact, they are the snapshot's rows of every contact.
  const totals = q.partyId === undefined
    ? `select ${columns('b')} from aged_balances b
        where b.snapshot_id = (select f.id from found f) and b.party_id is null ${filters}`
    : `select null, null, b.currency, sum(b.over_90)::text, sum(b.d61_90)::text, sum(b.d31_60)::text,
              sum(b.d1_30)::text, sum(b.current)::text, sum(b.total)::text, sum(b.count)::int, min(b.oldest)::text
         from aged_balances b
        where b.snapshot_id = (select f.id from found f) and b.party_id is not null ${filters}
        group by b.currency`
  // The snapshot's id as a value known before its rows are read (an init plan), so that the rank index's order
  // serves the page and the scan stops at its end.
  const text = `with found as (${found}),
page as (
  select ${columns('b')}
    from aged_balances b
   where b.snapshot_id = (select f.id from found f) and b.party_id is not null ${filters} ${after}
   order by ${rank}
   limit ${limit}
)
select 'state' as part, f.version::text as version, f.id::text as snapshot, null as party_id, null as party_name,
       null as currency, null as over_90, null as d61_90, null as d31_60, null as d1_30, null as current,
       null as total, null::int as count, null as oldest, 0::bigint as k
  from found f
union all
select 'entry', null, null, p.*, row_number() over () from page p
union all
select 'total', null, null, t.*, 0 from (${totals}) t
 order by 1, 15, 6`
  return { text, params }
}
