import type { Static } from '@sinclair/typebox'
import { randomToken } from '../../../lib/crypto.js'
import type { EventBody } from '../../../schemas/events.js'
import type { Queryable } from '../../infrastructure/db/types.js'

type Event = Static<typeof EventBody>

/** An event as the table keeps it: the id the service gives it, and the bytes every attempt of it sends. */
export interface NewEvent {
  id: string
  /** The producer's idempotency key; null for events of the service's own (webhook.test). */
  producerId: string | null
  topic: string
  orgRefId: string
  entityRefId: string
  body: string
  createdAt: Date
}

/** An event of a batch whose producer id was stored before: the event stored under it, and whether it is the same. */
export interface StoredBefore {
  /** The event's position in the batch. */
  at: number
  id: string
  deliveries: number
  /** Same topic, tenant and data: a repeat. Anything else under the same producer id is a conflict. */
  same: boolean
}

/** The bytes every attempt of an event sends and signs, retries included (docs/rules.md#delivery). */
function eventBody (id: string, topic: string, createdAt: Date, orgRefId: string, entityRefId: string, data: unknown) {
  return JSON.stringify({
    id, topic, created_at: createdAt.toISOString(), org_ref_id: orgRefId, entity_ref_id: entityRefId, data
  })
}

/** A new event with an id of its own, `data` serialised into the body it is delivered as. */
export function newEvent (
  e: { topic: string, orgRefId: string, entityRefId: string, data: unknown, producerId?: string | undefined },
  createdAt = new Date()
): NewEvent {
  const id = randomToken('evt_', 16)
  return {
    id,
    producerId: e.producerId ?? null,
    topic: e.topic,
    orgRefId: e.orgRefId,
    entityRefId: e.entityRefId,
    body: eventBody(id, e.topic, createdAt, e.orgRefId, e.entityRefId, e.data),
    createdAt
  }
}

/** Producer ids in a fixed order (code units, not locale), events without one last. */
const compareIds = (a: string | null, b: string | null): number =>
  a === b ? 0 : a === null ? 1 : b === null ? -1 : a < b ? -1 : 1

/**
 * A batch as new events, in the order they are to be inserted: by producer id, those without one last (then as
 * given). Two batches that share ids then wait for each other's rows in the same order, instead of each holding
 * one the other needs (a deadlock). `at` is each event's position in the batch as given.
 */
export function newEvents (events: Event[], createdAt = new Date()): Array<NewEvent & { at: number }> {
  return events
    .map((e, at) => {
      const fields = { topic: e.topic, orgRefId: e.org_ref_id, entityRefId: e.entity_ref_id, data: e.data }
      return { ...newEvent({ ...fields, producerId: e.id }, createdAt), at }
    })
    .sort((a, b) => compareIds(a.producerId, b.producerId) || a.at - b.at)
}

/**
 * The events stored before under the producer ids of these events of a batch (`at`: their positions), each compared
 * with the event now given: the same topic, tenant and data is a repeat, anything else a conflict. An event whose
 * producer id is not stored has no row.
 */
export async function findByProducerIds (
  q: Queryable,
  events: Array<{ at: number, event: Event }>
): Promise<StoredBefore[]> {
  const rows = await q.query<{ i: number, id: string, delivery_count: number, same: boolean }>(
    `select u.i, e.id, e.delivery_count,
            (e.topic = u.topic and e.org_ref_id = u.org_ref_id and e.entity_ref_id = u.entity_ref_id
             and e.body::jsonb -> 'data' = u.data::jsonb) as same
       from unnest($1::int[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[])
              as u(i, producer_id, topic, org_ref_id, entity_ref_id, data)
       join webhook_events e on e.producer_id = u.producer_id`,
    [
      events.map(s => s.at),
      events.map(s => s.event.id),
      events.map(s => s.event.topic),
      events.map(s => s.event.org_ref_id),
      events.map(s => s.event.entity_ref_id),
      events.map(s => JSON.stringify(s.event.data))
    ]
  )
  return rows.map(r => ({ at: r.i, id: r.id, deliveries: r.delivery_count, same: r.same }))
}
