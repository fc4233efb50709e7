import type { Static } from '@sinclair/typebox'
import { recordKindOf, type RecordKindName } from '../../../lib/topics.js'
import type { EventBody } from '../../../schemas/events.js'
import type { Queryable } from '../../infrastructure/db/types.js'
import { errors } from '../../infrastructure/errors.js'
import { RECORD_KINDS } from './kinds.js'
import type { RecordRow, RecordStore } from './store.js'
import { recordProblems } from './validate.js'

type Event = Static<typeof EventBody>

/** The read side's part of accepting events: records are checked before, and kept inside, the event's transaction. */
export function createRecordIngest (stores: Record<RecordKindName, RecordStore>) {
  return {
    /**
     * Refuses the events (400 validation_error, every problem named at its JSON pointer) when the record of one of
     * them is not valid; `batch`: the pointers start with the event's index.
     */
    check (events: Event[], batch: boolean): void {
      const details = events.flatMap((e, i) => {
        const kind = recordKindOf(e.topic)
        return kind ? recordProblems(kind, e.data, batch ? `/${i}/data` : '/data') : []
      })
      if (details.length > 0) throw errors.validation(details)
    },

    /** Keeps the newest copy of every record the events carry (checked before), in the caller's transaction. */
    async write (q: Queryable, events: Event[]): Promise<void> {
      const newest = new Map<string, { kind: RecordKindName, row: RecordRow }>()
      for (const e of events) {
        const kind = recordKindOf(e.topic)
        if (!kind) continue
        const row = toRow(kind, e)
        const key = JSON.stringify([kind, row.orgRefId, row.entityRefId, row.id])
        const kept = newest.get(key)
        // One statement may touch a row once: of one record's versions in a batch, the newest (the first of equals).
        if (!kept || kept.row.updatedAt < row.updatedAt) newest.set(key, { kind, row })
      }
      // In key order, kind by kind: two batches that share records then lock them in the same order, instead of
      // each holding one the other needs (a deadlock); the events are written after, in their own fixed order.
      for (const kind of Object.keys(RECORD_KINDS) as RecordKindName[]) {
        const rows = [...newest.values()].filter(n => n.kind === kind).map(n => n.row).sort(byKey)
        await stores[kind].upsert(q, rows)
      }
    }
  }
}

export type RecordIngest = ReturnType<typeof createRecordIngest>

/** Code units, not locale: the order the rows are locked in only has to be the same for every transaction. */
const compare = (a: string, b: string): number => a < b ? -1 : a > b ? 1 : 0
const byKey = (a: RecordRow, b: RecordRow): number =>
  compare(a.orgRefId, b.orgRefId) || compare(a.entityRefId, b.entityRefId) || compare(a.id, b.id)

/** The columns of a checked record. Timestamps are all `YYYY-MM-DDTHH:MM:SS.sssZ`, so they compare as strings. */
function toRow (kind: RecordKindName, e: Event): RecordRow {
  const r = e.data as Record<string, unknown>
  const document = RECORD_KINDS[kind].document
  const currency = r.currency as string
  return {
    orgRefId: e.org_ref_id,
    entityRefId: e.entity_ref_id,
    id: r.id as string,
    updatedAt: r.updated_at as string,
    status: r.status as string,
    partyId: document ? (r[document.party] as { id: string }).id : null,
    dueDate: document ? (r.due_date as string) : null,
    currency,
    // Checked to have exactly the currency's minor digits: without the point, they are the minor units.
    amountDueMinor: document ? (r.amount_due as string).replace('.', '') : null,
    partyName: document ? (r[document.party] as { name: string }).name : null,
    body: JSON.stringify(r)
  }
}
