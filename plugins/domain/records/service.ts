import { createHash } from 'node:crypto'
import { inRecordYears, isRecordInstant } from '../../../lib/dates.js'
import type { CursorCodec, CursorScope } from '../../../lib/cursor.js'
import type { ListArgs } from '../../../schemas/records.js'
import type { Principal } from '../auth/access-state.js'
import { errors } from '../../infrastructure/errors.js'
import type { RecordKind } from './kinds.js'
import type { Position, RecordStore } from './store.js'

export const DEFAULT_LIMIT = 50

/** A single record: its JSON text as sent, and the entity tag of exactly those bytes. */
export interface RecordRead { body: string, etag: string }

/** Where a page ends: the last record's `updated_at` and id; the cursor's scope names the kind and the order. */
interface CursorPosition { u: string, i: string }

const isPosition = (v: unknown): v is CursorPosition =>
  typeof v === 'object' && v !== null && typeof (v as CursorPosition).i === 'string' &&
  typeof (v as CursorPosition).u === 'string' && isRecordInstant((v as CursorPosition).u)

const cursorScope = (kind: RecordKind, p: Principal, descending: boolean): CursorScope =>
  ({ tenant: [p.orgRefId, p.entityRefId], resource: kind.plural, order: descending ? '-updated_at' : 'updated_at' })

/**
 * The instant of `updated_since`, and `due_before`, checked for what their formats let through and no record can
 * be compared with: `date-time` takes a leap second (23:59:60, no JavaScript Date) and, through an offset, instants
 * of years 0 and 10000; `date` takes year 0. Postgres has none of them (a 500 before).
 */
function bounds (args: ListArgs): Date | undefined {
  const since = args.updated_since === undefined ? undefined : new Date(args.updated_since)
  const details: Array<{ location: string, path: string, message: string }> = []
  const refuse = (path: string, message: string) => details.push({ location: 'querystring', path, message })
  if (since && !inRecordYears(since)) refuse('/updated_since', 'must be an instant of the years 1 to 9999')
  if (args.due_before !== undefined && !inRecordYears(new Date(args.due_before))) {
    refuse('/due_before', 'must be a date of the years 1 to 9999')
  }
  if (details.length > 0) throw errors.validation(details)
  return since
}

/**
 * Postgres can neither store nor compare text with NUL. Such an argument is refused here, before the statement it
 * would make fail is shared with other requests (the store batches the requests of one turn).
 */
function refuseNul (...texts: Array<string | undefined>): void {
  if (texts.some(t => t?.includes('\0'))) throw errors.nulCharacter()
}

/** A strong entity tag: the same bytes, the same tag (a record changes only with a newer updated_at). */
const etagOf = (body: string): string => `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`

/**
 * What the REST routes and the MCP tools both call for one record aggregate, in the caller's tenant only. Answers are
 * the wire JSON text: records are served exactly as the producer sent them, and a page is assembled from their
 * texts without parsing them again.
 */
export function createRecordService (kind: RecordKind, store: RecordStore, cursors: CursorCodec) {
  return {
    kind,

    /** `{"invoices":[...],"next_cursor":...}` for the page the arguments name. */
    async list (p: Principal, args: ListArgs): Promise<string> {
      const descending = args.order === '-updated_at'
      const limit = args.limit ?? DEFAULT_LIMIT
      const partyId = kind.document ? args[kind.document.filter] : undefined
      const scope = cursorScope(kind, p, descending)
      let after: Position | undefined
      if (args.cursor !== undefined) {
        const at = cursors.decode(scope, args.cursor, isPosition)
        if (at === undefined) throw errors.invalidCursor()
        after = { updatedAt: at.u, id: at.i }
      }
      refuseNul(partyId, after?.id)
      const page = await store.list(p.orgRefId, p.entityRefId, {
        updatedSince: bounds(args),
        status: args.status,
        partyId,
        dueBefore: kind.document ? args.due_before : undefined,
        after,
        descending,
        limit
      })
      const next = page.next
        ? JSON.stringify(cursors.encode(scope, { u: page.next.updatedAt.toISOString(), i: page.next.id }))
        : 'null'
      return `{"${kind.plural}":[${page.bodies}],"next_cursor":${next}}`
    },

    /** One record of the tenant; not_found when the tenant has none with this id (another tenant's included). */
    async get (p: Principal, id: string): Promise<RecordRead> {
      refuseNul(id)
      const body = await store.get(p.orgRefId, p.entityRefId, id)
      if (body === undefined) throw errors.recordNotFound(kind.title)
      return { body, etag: etagOf(body) }
    }
  }
}

export type RecordService = ReturnType<typeof createRecordService>
