import type { Static } from '@sinclair/typebox'
import { topicKind } from '../../../lib/topics.js'
import type { EventAccepted, EventBody } from '../../../schemas/events.js'
import type { Db, Queryable } from '../../infrastructure/db/types.js'
import { errors } from '../../infrastructure/errors.js'
import type { RecordIngest } from '../records/ingest.js'
import type { DeliveryQueueStore } from '../webhooks/delivery-queue-store.js'
import { findByProducerIds, newEvents } from './store.js'

type Event = Static<typeof EventBody>
type Accepted = Static<typeof EventAccepted>

/**
 * The webhooks' part of accepting events: stores new events, in the order given, with a delivery to each matching
 * subscription, in the caller's transaction; answers those it stored (an event whose producer id is stored already
 * is left out).
 */
export type FanOut = DeliveryQueueStore['fanOut']

/**
 * Stores events and their deliveries in the caller's transaction, idempotent on the producer's id: an id stored
 * before (in an earlier request, or earlier in the same batch) stores nothing, and the same event again gets the
 * first result; a different one (topic, tenant or data) under it makes the whole answer `'conflict'`, for the
 * caller to roll back. The results keep the order given.
 */
export async function storeEvents (
  q: Queryable,
  events: Event[],
  fanOut: FanOut,
  createdAt = new Date()
): Promise<Accepted[] | 'conflict'> {
  const rows = newEvents(events, createdAt)
  const stored = new Map((await fanOut(q, rows)).map(a => [a.id, a]))
  const idAt = new Map(rows.map(r => [r.at, r.id]))
  const accepted: Accepted[] = new Array(events.length)
  const seen: Array<{ at: number, event: Event }> = []
  events.forEach((event, at) => {
    const a = stored.get(idAt.get(at)!)
    if (a) accepted[at] = a
    else seen.push({ at, event })
  })
  if (seen.length === 0) return accepted
  const before = await findByProducerIds(q, seen)
  if (before.length !== seen.length) throw new Error('an event was neither stored nor found under its producer id')
  if (before.some(b => !b.same)) return 'conflict'
  for (const b of before) accepted[b.at] = { id: b.id, deliveries: b.deliveries }
  return accepted
}

/** One event: storeEvents of a batch of one. */
export async function storeEvent (
  q: Queryable,
  e: Event,
  fanOut: FanOut,
  createdAt = new Date()
): Promise<Accepted | 'conflict'> {
  const accepted = await storeEvents(q, [e], fanOut, createdAt)
  return accepted === 'conflict' ? accepted : accepted[0]!
}

/** Every unknown topic is named at once; then the first planned one. */
function checkTopics (events: Event[]): void {
  const unknown = [...new Set(events.map(e => e.topic).filter(topic => topicKind(topic) === 'unknown'))]
  if (unknown.length > 0) throw errors.unknownTopic(unknown)
  const planned = events.find(e => topicKind(e.topic) === 'planned')
  if (planned) throw errors.topicNotEmitted(planned.topic)
}

/**
 * Event ingestion (docs/rules.md#event-ingestion), what POST /events calls. Topics and records are checked first;
 * then one transaction writes the records the events carry (the read side), the events and their deliveries: all
 * of them, or none.
 */
export function createEventService (deps: { db: Db, records: RecordIngest, fanOut: FanOut }) {
  async function accept (events: Event[], batch: boolean): Promise<Accepted[]> {
    checkTopics(events)
    deps.records.check(events, batch)
    return deps.db.tx(async q => {
      await deps.records.write(q, events)
      const accepted = await storeEvents(q, events, deps.fanOut)
      // Thrown inside the transaction: the records and the events written before the conflict are rolled back.
      if (accepted === 'conflict') throw errors.eventConflict()
      return accepted
    })
  }

  return {
    /**
     * Stores an event and its deliveries durably before answering, idempotent on the producer's id, and keeps the
     * record it carries in the same transaction. Planned topics are refused: nothing would ever deliver them.
     */
    async publish (event: Event): Promise<Accepted> {
      return (await accept([event], false))[0]!
    },

    /** A batch is one transaction: every event is stored, or none (a bad topic, record or conflict refuses all). */
    async publishBatch (events: Event[]): Promise<Accepted[]> {
      return accept(events, true)
    }
  }
}

export type EventService = ReturnType<typeof createEventService>
