import type { Db, Queryable } from '../db/types.js'
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
  limit: number
}

/** A listed record: its body, and where it sits in the order (for the next cursor). */
export interface Listed { body: string, updated_at: Date, id: string }

/**
 * Every statement of one record aggregate (invoices, bills or customers: the same columns, `kind.table` chosen from
 * the fixed three). Reads are scoped to one tenant by the key's leading columns, so another tenant's record is
 * simply not there.
 */
export function createRecordStore (db: Db, kind: RecordKind) {
  const table = kind.table
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

    /** The JSON text of one record of the tenant; undefined when the tenant has none with this id. */
    async get (orgRefId: string, entityRefId: string, id: string): Promise<string | undefined> {
      const [row] = await db.query<{ body: string }>(
        `select body from ${table} where org_ref_id = $1 and entity_ref_id = $2 and id = $3`,
        [orgRefId, entityRefId, id]
      )
      return row?.body
    },

    /**
     * A page of the tenant's records in (updated_at, id) order, after a position: a range of the sync index
     * whatever the depth (keyset, no OFFSET). Only the filters given are in the statement.
     */
    async list (orgRefId: string, entityRefId: string, f: ListFilter): Promise<Listed[]> {
      const params: unknown[] = [orgRefId, entityRefId]
      const where = ['org_ref_id = $1', 'entity_ref_id = $2']
      const add = (sql: (n: string) => string, value: unknown) => {
        params.push(value)
        where.push(sql(`$${params.length}`))
      }
      if (f.updatedSince) add(n => `updated_at >= ${n}`, f.updatedSince)
      if (f.status !== undefined) add(n => `status = ${n}`, f.status)
      if (f.partyId !== undefined) add(n => `party_id = ${n}`, f.partyId)
      if (f.dueBefore !== undefined) add(n => `due_date < ${n}::date`, f.dueBefore)
      if (f.after) {
        params.push(f.after.updatedAt, f.after.id)
        const [at, id] = [`$${params.length - 1}::timestamptz`, `$${params.length}`]
        where.push(`(updated_at, id) ${f.descending ? '<' : '>'} (${at}, ${id})`)
      }
      const direction = f.descending ? 'desc' : 'asc'
      params.push(f.limit)
      return db.query<Listed>(
        `select body, updated_at, id from ${table} where ${where.join(' and ')}
          order by updated_at ${direction}, id ${direction} limit $${params.length}`,
        params
      )
    }
  }
}

export type RecordStore = ReturnType<typeof createRecordStore>
