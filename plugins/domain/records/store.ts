import type { Db, Queryable } from '../../infrastructure/db/types.js'
import { perTurn, perTurnByShape } from '../../../lib/per-turn.js'
import type { RecordKind } from './kinds.js'

/** One kept record: what lists filter and order on, and the JSON text as it was sent. */
export interface RecordRow {
  orgRefId: string
  entityRefId: string
  id: string
  updatedAt: string
  status: string
  partyId: string | null
  dueDate: string | null
  /** The record's currency, and for invoices and bills what the aged reports add up (migrations/013). */
  currency: string
  /** amount_due in the currency's minor units, as an integer's digits; null for customers. */
  amountDueMinor: string | null
  /** The customer's or supplier's name on this record; null for customers. */
  partyName: string | null
  body: string
}

/** A page boundary: the last record shown. */
export interface Position { updatedAt: string, id: string }

export interface ListFilter {
  updatedSince?: Date | undefined
  status?: string | undefined
  partyId?: string | undefined
  dueBefore?: string | undefined
  after?: Position | undefined
  descending: boolean
  /** Records per page. */
  limit: number
}

/**
 * A page as the database assembles it: the bodies of the records shown, in order and joined by commas (empty when
 * none), and, when there are more after them, where the last one shown sits (for the next cursor).
 */
export interface Page { bodies: string, next: { updatedAt: Date, id: string } | undefined }

/**
 * Every statement of one record aggregate (invoices, bills or customers: the same columns, in the table named by the
 * kind's plural, one of the fixed three). Reads are scoped to one tenant (lookups by the primary key's leading
 * columns, pages by bounds on the tenant's key in the sync index), so another tenant's record is simply not there.
 */
export function createRecordStore (db: Db, kind: RecordKind) {
  const table = kind.plural

  /**
   * Single-record lookups of one turn of the event loop, in one statement (`perTurn`). Every argument of a batched
   * statement must be one Postgres takes (no NUL: the service refuses it first), or the others' requests fail too.
   */
  const lookUp = perTurn(async (calls: Array<{ orgRefId: string, entityRefId: string, id: string }>) => {
    const rows = await db.query<{ i: string, body: string }>(
      `select u.i, t.body
         from unnest($1::text[], $2::text[], $3::text[]) with ordinality as u(org_ref_id, entity_ref_id, id, i)
         join ${table} t on t.org_ref_id = u.org_ref_id and t.entity_ref_id = u.entity_ref_id and t.id = u.id`,
      [calls.map(c => c.orgRefId), calls.map(c => c.entityRefId), calls.map(c => c.id)]
    )
    const found = new Map(rows.map(r => [Number(r.i), r.body]))
    return calls.map((_, k) => found.get(k + 1))
  })

  /**
   * The pages of one turn of the event loop, read together (`perTurnByShape`): one batch per shape (order and
   * filters given, `pageStatement`), each in one statement, so a turn costs one round trip per shape, usually one; the
   * shapes' batches go out at once, on connections of their own, and fail apart.
   */
  const listPages = perTurnByShape((page: PageQuery) => shapeOf(page.f), async (pages: PageQuery[]) => {
    type Row = { bodies: string | null, more: boolean, at_ms: string | null, id: string | null }
    const rows = await db.query<Row>(pageStatement(table, pages[0]!.f), pageParams(pages))
    return rows.map((row): Page => ({
      bodies: row.bodies ?? '',
      next: row.more ? { updatedAt: new Date(Number(row.at_ms)), id: row.id! } : undefined
    }))
  })

  return {
    /**
     * Keeps each record unless the kept copy is as new or newer (by `updated_at`): late, repeated and out-of-order
     * events change nothing. One statement for any number of records, inside the caller's transaction. The rows
     * must name each (tenant, id) once.
     */
    async upsert (q: Queryable, rows: RecordRow[]): Promise<void> {
      if (rows.length === 0) return
      const col = <K extends keyof RecordRow>(k: K) => rows.map(r => r[k])
      await q.query(
        `insert into ${table} (org_ref_id, entity_ref_id, id, updated_at, status, party_id, due_date, currency,
                               amount_due_minor, party_name, body)
         select * from unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[], $5::text[], $6::text[],
                              $7::date[], $8::text[], $9::numeric[], $10::text[], $11::text[])
         on conflict (org_ref_id, entity_ref_id, id) do update
           set updated_at = excluded.updated_at, status = excluded.status, party_id = excluded.party_id,
               due_date = excluded.due_date, currency = excluded.currency,
               amount_due_minor = excluded.amount_due_minor, party_name = excluded.party_name, body = excluded.body
         where ${table}.updated_at < excluded.updated_at`,
        [col('orgRefId'), col('entityRefId'), col('id'), col('updatedAt'), col('status'), col('partyId'),
          col('dueDate'), col('currency'), col('amountDueMinor'), col('partyName'), col('body')]
      )
    },

    /**
     * The JSON text of one record of the tenant; undefined when the tenant has none with this id. Lookups asked for
     * in the same turn of the event loop go to the database together, in one statement (`lookUp` above).
     */
    get (orgRefId: string, entityRefId: string, id: string): Promise<string | undefined> {
      return lookUp({ orgRefId, entityRefId, id })
    },

    /**
     * A page of the tenant's records in (updated_at, id) order (`pageStatement`). Pages asked for in the same turn
     * of the event loop are read together (`listPages` above).
     */
    list (orgRefId: string, entityRefId: string, f: ListFilter): Promise<Page> {
      return listPages({ orgRefId, entityRefId, f })
    }
  }
}

interface PageQuery { orgRefId: string, entityRefId: string, f: ListFilter }

/** Which statement a page takes: its order and the filters it has (`pageStatement`). */
const shapeOf = (f: ListFilter): string =>
  `${f.descending ? 'd' : 'a'}${f.status === undefined ? '' : 's'}${f.partyId === undefined ? '' : 'p'}` +
  `${f.dueBefore === undefined ? '' : 'b'}`

/** The sync index's first column (migrations/010_record_tenant_index.sql): the tenant of a row as one text. */
const tenantOf = (row: 't' | 'u'): string => `record_tenant(${row}.org_ref_id, ${row}.entity_ref_id)`

/**
 * The statement of the pages of one shape (order and filters given): one row per page, in the order of the
 * arguments. Each page is a range of the sync index (tenant, updated_at, id) between two bounds,
 * whatever its depth (keyset, no OFFSET), read in index order; one more record than the page holds is read, to know
 * whether another page follows. The database joins the page's bodies into one text and answers one row, instead of
 * a row per record (a node-postgres row, its Date and its strings cost more than the bytes they carry).
 *
 * The text depends on the shape only: it is prepared once per connection, and its plan is made once. The bounds are
 * whole index keys compared as rows, not `tenant = … and updated_at > …`: the planner estimates a range between
 * two row bounds as a fixed share of the table, and reads it in index order under the LIMIT, for a tenant of ten
 * records as for one of millions. With equalities on the tenant, a generic plan estimates rows per tenant from the
 * statistics, and on a table of few, large tenants chose to read the whole tenant and sort it (BENCHMARKS.md).
 * Filters are written only when given: `(… is null or status = …)` made the same estimate fall to a row or two.
 */
function pageStatement (table: string, f: ListFilter): string {
  const direction = f.descending ? 'desc' : 'asc'
  const order = [tenantOf('t'), 't.updated_at', 't.id'].map(c => `${c} ${direction}`).join(', ')
  const filters = [
    ...(f.status === undefined ? [] : ['t.status = u.status']),
    ...(f.partyId === undefined ? [] : ['t.party_id = u.party_id']),
    ...(f.dueBefore === undefined ? [] : ['t.due_date < u.due_before'])
  ].map(c => `and ${c}`).join(' ')
  // The last record shown: its instant in whole milliseconds (what a JavaScript Date keeps of it).
  return `select p.*
  from unnest($1::text[], $2::text[], $3::timestamptz[], $4::text[], $5::timestamptz[], $6::text[], $7::text[],
              $8::text[], $9::date[], $10::int[]) with ordinality
       as u(org_ref_id, entity_ref_id, from_at, from_id, to_at, to_id, status, party_id, due_before, shown, k)
  cross join lateral (
    select string_agg(body, ',' order by n) filter (where n <= u.shown) as bodies,
           count(*) > u.shown as more,
           min(floor(extract(epoch from updated_at) * 1000)::int8) filter (where n = u.shown) as at_ms,
           min(id) filter (where n = u.shown) as id
      from (select t.body, t.updated_at, t.id, row_number() over (order by ${order}) as n
              from ${table} t
             where (${tenantOf('t')}, t.updated_at, t.id) > (${tenantOf('u')}, u.from_at, u.from_id)
               and (${tenantOf('t')}, t.updated_at, t.id) < (${tenantOf('u')}, u.to_at, u.to_id)
               ${filters}
             order by ${order}
             limit u.shown + 1) page) p
 order by u.k`
}

/**
 * The arguments of `pageStatement` for these pages: the bounds of each range, exclusive. Every record id has at
 * least one character, so (t, '') lies before every record of instant t: `updated_since` t is the lower bound
 * (t, ''), and an open end is (-infinity, '') or (infinity, ''). The position after which a page starts is the
 * lower bound in ascending order (the later of it and `updated_since`), the upper bound in descending order.
 */
function pageParams (pages: PageQuery[]): unknown[] {
  const column = (pick: (p: PageQuery) => unknown) => pages.map(pick)
  const bounds = pages.map(({ f }) => {
    let from: [string, string] = f.updatedSince ? [f.updatedSince.toISOString(), ''] : ['-infinity', '']
    let to: [string, string] = ['infinity', '']
    if (f.after && f.descending) to = [f.after.updatedAt, f.after.id]
    if (f.after && !f.descending && !(f.updatedSince && f.updatedSince.getTime() > Date.parse(f.after.updatedAt))) {
      from = [f.after.updatedAt, f.after.id]
    }
    return { from, to }
  })
  return [
    column(p => p.orgRefId), column(p => p.entityRefId),
    bounds.map(b => b.from[0]), bounds.map(b => b.from[1]), bounds.map(b => b.to[0]), bounds.map(b => b.to[1]),
    column(p => p.f.status ?? null), column(p => p.f.partyId ?? null), column(p => p.f.dueBefore ?? null),
    column(p => p.f.limit)
  ]
}

export type RecordStore = ReturnType<typeof createRecordStore>
