import { perTurnByShape } from '../../../lib/per-turn.js'
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
  /**
   * The snapshot the caller already holds this page of: when it is still the one to read, the page is answered
   * `unchanged`, its rows not read again.
   */
  known?: string | undefined
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
  /** The snapshot read (its id), and whether it is the one the query said it knows (then nothing else is read). */
  snapshotId: string
  unchanged: boolean
  totals: AgedSums[]
  /** The page's entries, in rank order. */
  entries: AgedSums[]
  /** Whether more entries follow the page's last. */
  more: boolean
  /**
   * Where the page's sums come from: the snapshot kept for the tenant's version and day (`kept`), one made for this
   * page (`made`), or one another page of this process was making when this one asked (`joined`).
   */
  snapshot: 'kept' | 'made' | 'joined'
}

interface Row {
  /** Which page of the batch the row is of: 1 for the first. */
  k: string
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
 * 014_aged_snapshots.sql). A page is one statement (shared by the pages of one turn of the event loop) that reads
 * the snapshot of the tenant's current version: its entries after the cursor's position, in rank order, and its
 * totals, which cover every contact, not only the page; or only its id, when that is the snapshot the caller
 * already holds the page of (`known`). Without one, the snapshot is made first, in one statement over the
 * open-items index, and read by its id: its sums are the records as they were when that statement began, after the
 * page was asked for.
 */
export function createAgedReportStore (db: Db, report: AgedReportKind) {
  /** Snapshots being made by this process, by tenant, day and the version seen: asked for once, awaited by all. */
  const making = new Map<string, Promise<string | undefined>>()

  /**
   * The pages of one turn of the event loop, read together (`perTurnByShape`): one batch per shape (`shapeOf`), each
   * one statement, so that pages asked for together cost one round trip; on a local socket the write of a statement
   * costs the service more than the page's reading costs Postgres (BENCHMARKS.md). Every page of a batch reads the
   * same few index entries of its own snapshot: none waits on another's work.
   */
  const readTogether = perTurnByShape(shapeOf, async (reads: PageRead[]) => {
    const rows = await db.query<Row>(pageStatement(report.table, reads[0]!), pageParams(reads))
    const byPage = reads.map((): Row[] => [])
    for (const row of rows) byPage[Number(row.k) - 1]!.push(row)
    return byPage
  })

  async function read (
    q: AgedQuery, made?: { id: string, how: 'made' | 'joined' }
  ): Promise<{ page?: AgedPage, version: string }> {
    const rows = await readTogether({ q, snapshot: made?.id })
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
    const page: AgedPage = {
      snapshotId: state.snapshot,
      unchanged: state.snapshot === q.known,
      totals: rows.filter(r => r.part === 'total').map(sums),
      entries: entries.slice(0, q.limit),
      more: entries.length > q.limit,
      snapshot: made?.how ?? 'kept'
    }
    return { page, version: state.version ?? '' }
  }

  async function make (q: AgedQuery, version: string): Promise<{ id: string, how: 'made' | 'joined' } | undefined> {
    const key = JSON.stringify([q.orgRefId, q.entityRefId, q.asOf, version])
    const joined = making.get(key)
    if (joined) return await joined.then(id => id === undefined ? undefined : { id, how: 'joined' as const })
    const { text, params } = snapshotStatement(report.table, q)
    const made = db.query<{ id: string }>(text, params)
      .then(rows => rows[0]?.id, lostRace)
      .finally(() => making.delete(key))
    making.set(key, made)
    const id = await made
    return id === undefined ? undefined : { id, how: 'made' }
  }

  return {
    async page (q: AgedQuery): Promise<AgedPage> {
      for (let attempt = 0; attempt < ATTEMPTS; attempt++) {
        const current = await read(q)
        if (current.page) return current.page
        // Undefined when another process made the same snapshot at the same moment: the next read finds it.
        const made = await make(q, current.version)
        if (made === undefined) continue
        const fresh = await read(q, made)
        if (fresh.page) return fresh.page
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

/** How many snapshots of one tenant's report are kept at its current version: the days added up last. */
const DAYS_KEPT = 8

/** The condition that a row of the versions or snapshots (`t`) is of the tenant's report. */
const ofReport = (t: string, org: string, entity: string, table: string): string =>
  `${t}.org_ref_id = ${org} and ${t}.entity_ref_id = ${entity} and ${t}.report = '${table}'`

/**
 * The statement that makes a snapshot of the tenant's report to `as_of` and answers its id (none when another
 * transaction made the same one at the same moment). One statement, so that the version it records and the sums it
 * keeps are of the same moment: a change committed later moves the version past it. It also drops the tenant's
 * snapshots of earlier versions, and of the days added up before the last few (in the order they were made, not
 * asked for: a page read by id then finds its snapshot gone only when eight others of the tenant were made
 * meanwhile, and asks again).
 */
export function snapshotStatement (table: string, q: AgedQuery): { text: string, params: unknown[] } {
  const params: unknown[] = []
  const param = (value: unknown, type: string) => { params.push(value); return `$${params.length}::${type}` }
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

/** A page to read: from the snapshot of the tenant's current version, or from the one named. */
export interface PageRead { q: AgedQuery, snapshot?: string | undefined }

/** Which statement a page read takes: the snapshot named or not, and the conditions given. */
const shapeOf = ({ q, snapshot }: PageRead): string =>
  `${snapshot === undefined ? 'v' : 'i'}${q.partyId === undefined ? '' : 'p'}${q.currency === undefined ? '' : 'c'}` +
  `${q.after === undefined ? '' : 'a'}`

/**
 * The statement of the page reads of one shape (`shapeOf`), and its arguments (`pageParams`): for each page, in
 * the order of the arguments (`k`), the snapshot it reads (of the tenant's current version, or the one named) with
 * that version, its entries after the cursor's position and its totals. Conditions are written only when the shape
 * has them (a contact, a currency, a cursor's position); the text depends on the shape only, and is prepared once per
 * connection.
 *
 * Ranking is by each bucket descending, then contact and currency ascending: as one row compared ascending, the
 * buckets negated, as the snapshot's rank index holds them. Contacts and currencies compare byte-wise (collation
 * "C"), as record ids do.
 */
export function pageStatement (table: string, shape: PageRead): string {
  const { q } = shape
  const ofTenant = (t: string) => ofReport(t, 'u.org_ref_id', 'u.entity_ref_id', table)
  const found = shape.snapshot === undefined
    ? `select s.id, c.version
         from (select coalesce((select v.version from aged_report_versions v where ${ofTenant('v')}), 0) as version) c
         left join aged_snapshots s on ${ofTenant('s')} and s.as_of = u.as_of and s.version = c.version`
    : `select s.id, null::bigint as version from aged_snapshots s
        where s.id = u.snapshot and ${ofTenant('s')} and s.as_of = u.as_of`
  const filters = [
    ...(q.partyId === undefined ? [] : ['b.party_id = u.party_id']),
    ...(q.currency === undefined ? [] : ['b.currency = u.currency'])
  ].map(c => `and ${c}`).join(' ')
  const rank = '-b.over_90, -b.d61_90, -b.d31_60, -b.d1_30, -b.current, b.party_id collate "C", b.currency collate "C"'
  const after = q.after === undefined
    ? ''
    : `and (${rank}) > (-u.a_over_90, -u.a_d61_90, -u.a_d31_60, -u.a_d1_30, -u.a_current,
                        u.a_party_id collate "C", u.a_currency collate "C")`
  const columns = (b: string) => `${b}.party_id, ${b}.party_name, ${b}.currency, ${b}.over_90::text, ${b}.d61_90::text,
         ${b}.d31_60::text, ${b}.d1_30::text, ${b}.current::text, ${b}.total::text, ${b}.count::int, ${b}.oldest::text`
  // The snapshot's id as a value known before its rows are read, so that the rank index's order serves the page
  // and the scan stops at its end; none when it is the one the caller knows.
  const snapshotOf = 'b.snapshot_id = (select f.id from found f where f.id is distinct from u.known)'
  // A contact's totals add up its entries; without a contact, they are the snapshot's rows of every contact.
  const totals = q.partyId === undefined
    ? `select ${columns('b')} from aged_balances b where ${snapshotOf} and b.party_id is null ${filters}`
    : `select null, null, b.currency, sum(b.over_90)::text, sum(b.d61_90)::text, sum(b.d31_60)::text,
              sum(b.d1_30)::text, sum(b.current)::text, sum(b.total)::text, sum(b.count)::int, min(b.oldest)::text
         from aged_balances b
        where ${snapshotOf} and b.party_id is not null ${filters}
        group by b.currency`
  return `select u.k, p.*
  from unnest($1::text[], $2::text[], $3::date[], $4::bigint[], $5::text[], $6::text[], $7::numeric[],
              $8::numeric[], $9::numeric[], $10::numeric[], $11::numeric[], $12::text[], $13::text[], $14::int[],
              $15::bigint[])
       with ordinality as u(org_ref_id, entity_ref_id, as_of, snapshot, party_id, currency, a_over_90, a_d61_90,
                            a_d31_60, a_d1_30, a_current, a_party_id, a_currency, shown, known, k)
  cross join lateral (
    with found as (${found}),
    page as (
      select ${columns('b')}, row_number() over (order by ${rank}) as n
        from aged_balances b
       where ${snapshotOf} and b.party_id is not null ${filters} ${after}
       order by ${rank}
       limit u.shown + 1
    )
    select 'state' as part, f.version::text as version, f.id::text as snapshot, null as party_id,
           null as party_name, null as currency, null as over_90, null as d61_90, null as d31_60, null as d1_30,
           null as current, null as total, null::int as count, null as oldest, 0::bigint as n
      from found f
    union all
    select 'entry', null, null, p.* from page p
    union all
    select 'total', null, null, t.*, 0 from (${totals}) t) p
 order by u.k, p.part, p.n, p.currency`
}

/** The arguments of `pageStatement`: one array per column of the pages' table, one element per page. */
export function pageParams (reads: PageRead[]): unknown[] {
  const column = (pick: (r: PageRead) => unknown) => reads.map(pick)
  const bucket = (i: number) => column(r => r.q.after?.buckets[i] ?? null)
  return [
    column(r => r.q.orgRefId), column(r => r.q.entityRefId), column(r => r.q.asOf), column(r => r.snapshot ?? null),
    column(r => r.q.partyId ?? null), column(r => r.q.currency ?? null),
    bucket(0), bucket(1), bucket(2), bucket(3), bucket(4),
    column(r => r.q.after?.partyId ?? null), column(r => r.q.after?.currency ?? null),
    column(r => r.q.limit), column(r => r.q.known ?? null)
  ]
}
