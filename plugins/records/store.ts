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

  /** The pages of one turn of the event loop, in one statement: one branch of a `union all` each (`perTurn`). */
  const listPages = perTurn(async (calls: PageQuery[]) => {
    const params: unknown[] = []
    const branches = calls.map((c, k) => `select ${k} as k, p.* from (${pageStatement(table, c, params)}) p`)
    type Row = { k: number, bodies: string | null, more: boolean, at_ms: string | null, id: string | null }
    // A text of its own for every mix of pages: sent unnamed, not kept prepared.
    const rows = await db.query<Row>(branches.join('\nunion all\n'), params, { once: true })
    const byCall: Page[] = []
    for (const row of rows) {
      byCall[row.k] = {
        bodies: row.bodies ?? '',
        next: row.more ? { updatedAt: new Date(Number(row.at_ms)), id: row.id! } : undefined
      }
    }
    return byCall
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
     * of the event loop are read together, in one statement (`listPages` above).
     */
    list (orgRefId: string, entityRefId: string, f: ListFilter): Promise<Page> {
      return listPages({ orgRefId, entityRefId, f })
    }
  }
}

interface PageQuery { orgRefId: string, entityRefId: string, f: ListFilter }

/**
 * The statement of one page, its parameters appended to `params`: a range of the sync index in (updated_at, id)
 * order after a position, whatever the depth (keyset, no OFFSET), with only the filters given. One more record than
 * the page holds is read, to know whether another page follows. The database joins the page's bodies into one text
 * and answers one row, instead of a row per record (a node-postgres row, its Date and its strings cost more than the
 * bytes they carry).
 */
function pageStatement (table: string, { orgRefId, entityRefId, f }: PageQuery, params: unknown[]): string {
  const $ = (value: unknown): string => `$${params.push(value)}`
  const where = [`org_ref_id = ${$(orgRefId)}`, `entity_ref_id = ${$(entityRefId)}`]
  if (f.updatedSince) where.push(`updated_at >= ${$(f.updatedSince)}`)
  if (f.status !== undefined) where.push(`status = ${$(f.status)}`)
  if (f.partyId !== undefined) where.push(`party_id = ${$(f.partyId)}`)
  if (f.dueBefore !== undefined) where.push(`due_date < ${$(f.dueBefore)}::date`)
  if (f.after) {
    where.push(`(updated_at, id) ${f.descending ? '<' : '>'} (${$(f.after.updatedAt)}::timestamptz, ${$(f.after.id)})`)
  }
  const direction = f.descending ? 'desc' : 'asc'
  const order = `order by updated_at ${direction}, id ${direction}`
  const [read, shown] = [$(f.limit + 1), $(f.limit)]
  // The last record shown: its instant in whole milliseconds (what a JavaScript Date keeps of it).
  return `select string_agg(body, ',' order by n) filter (where n <= ${shown}) as bodies,
                 count(*) > ${shown} as more,
                 min(floor(extract(epoch from updated_at) * 1000)::int8) filter (where n = ${shown}) as at_ms,
                 min(id) filter (where n = ${shown}) as id
            from (select body, updated_at, id, row_number() over (${order}) as n
                    from ${table} where ${where.join(' and ')} ${order} limit ${read}) page`
}

export type RecordStore = ReturnType<typeof createRecordStore>
