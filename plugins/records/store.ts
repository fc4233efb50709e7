import type { Db, Queryable } from '../db/types.js'
import { perTurn } from '../../lib/per-turn.js'
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
 * kind's plural, one of the fixed three). Reads are scoped to one tenant by the key's leading columns, so another
 * tenant's record is simply not there.
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
   * The pages of one turn of the event loop, in one statement per order (`perTurn`): every page's arguments as one
   * element of each array, one lateral read each. The two statements are fixed texts, prepared once per connection.
   */
  const listPages = perTurn(async (calls: PageQuery[]) => {
    const pages: Page[] = []
    for (const descending of [false, true]) {
      const mine = calls.map((c, k) => ({ c, k })).filter(({ c }) => c.f.descending === descending)
      if (mine.length === 0) continue
      // With no cursor, a position before the first record of the order (every updated_at is finite).
      const start = descending ? 'infinity' : '-infinity'
      const column = <T>(value: (c: PageQuery) => T): T[] => mine.map(({ c }) => value(c))
      const rows = await db.query<PageRow>(pageStatement(table, descending), [
        column(c => c.orgRefId),
        column(c => c.entityRefId),
        column(c => c.f.after?.updatedAt ?? start),
        column(c => c.f.after?.id ?? ''),
        column(c => c.f.updatedSince?.toISOString() ?? '-infinity'),
        column(c => c.f.status ?? null),
        column(c => c.f.partyId ?? null),
        column(c => c.f.dueBefore ?? null),
        column(c => c.f.limit)
      ])
      for (const row of rows) {
        pages[mine[Number(row.k) - 1]!.k] = {
          bodies: row.bodies ?? '',
          next: row.more ? { updatedAt: new Date(Number(row.at_ms)), id: row.id! } : undefined
        }
      }
    }
    return pages
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
        `insert into ${table} (org_ref_id, entity_ref_id, id, updated_at, status, party_id, due_date, body)
         select * from unnest($1::text[], $2::text[], $3::text[], $4::timestamptz[], $5::text[], $6::text[],
                              $7::date[], $8::text[])
         on conflict (org_ref_id, entity_ref_id, id) do update
           set updated_at = excluded.updated_at, status = excluded.status, party_id = excluded.party_id,
               due_date = excluded.due_date, body = excluded.body
         where ${table}.updated_at < excluded.updated_at`,
        [col('orgRefId'), col('entityRefId'), col('id'), col('updatedAt'), col('status'), col('partyId'),
          col('dueDate'), col('body')]
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
interface PageRow { k: string, bodies: string | null, more: boolean, at_ms: string | null, id: string | null }

/**
 * The statement of the pages of one order, each a range of the sync index in (updated_at, id) order after a
 * position, whatever the depth (keyset, no OFFSET): the position and `updated_since` bound the index scan, the other
 * filters (null: none) are checked on the rows it reads. One more record than the page holds is read, to know
 * whether another page follows. The database joins each page's bodies into one text, one row a page, instead of a
 * row per record (a node-postgres row, its Date and its strings cost more than the bytes they carry).
 */
function pageStatement (table: string, descending: boolean): string {
  const [direction, after] = descending ? ['desc', '<'] : ['asc', '>']
  const order = `order by updated_at ${direction}, id ${direction}`
  // The last record shown: its instant in whole milliseconds (what a JavaScript Date keeps of it).
  return `select u.k, p.bodies, p.more, p.at_ms, p.id
    from unnest($1::text[], $2::text[], $3::timestamptz[], $4::text[], $5::timestamptz[], $6::text[], $7::text[],
                $8::date[], $9::int[])
         with ordinality
         as u(org_ref_id, entity_ref_id, after_at, after_id, since, status, party_id, due_before, lim, k)
   cross join lateral (
     select string_agg(body, ',' order by n) filter (where n <= u.lim) as bodies,
            count(*) > u.lim as more,
            min(floor(extract(epoch from updated_at) * 1000)::int8) filter (where n = u.lim) as at_ms,
            min(id) filter (where n = u.lim) as id
       from (select t.body, t.updated_at, t.id, row_number() over (${order}) as n
               from ${table} t
              where t.org_ref_id = u.org_ref_id and t.entity_ref_id = u.entity_ref_id
                and (t.updated_at, t.id) ${after} (u.after_at, u.after_id)
                and t.updated_at >= u.since
                and (u.status is null or t.status = u.status)
                and (u.party_id is null or t.party_id = u.party_id)
                and (u.due_before is null or t.due_date < u.due_before)
              ${order} limit u.lim + 1) page) p`
}

export type RecordStore = ReturnType<typeof createRecordStore>
