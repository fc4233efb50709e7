// Attempts of a subscription's log without the worker: rows written with SQL (fast: a long log in one statement
// per table), or results recorded through the delivery queue's own `record`, as the worker records them (the log,
// the deliveries' states, the subscription's counters and the app's hourly activity).
import { randomBytes } from 'node:crypto'
import {
  createDeliveryQueueStore, type AttemptResult, type ClaimedDelivery
} from '../../plugins/domain/webhooks/delivery-queue-store.js'
import { counterUpdates } from '../../plugins/domain/webhooks/worker.js'
import type { Db, Queryable } from '../../plugins/infrastructure/db/index.js'

/** The result of an attempt at `c`, as the worker records it: a success unless `over` says otherwise. */
export const attemptResult = (c: ClaimedDelivery, over: Partial<AttemptResult> = {}): AttemptResult => ({
  deliveryId: c.id,
  subscriptionId: c.subscriptionId,
  attempt: c.attempts + 1,
  attemptedAt: new Date(),
  durationMs: 3,
  status: 200,
  responseBody: 'ok',
  error: null,
  errorClass: null,
  requestHeaders: { 'webhook-id': c.eventId },
  responseHeaders: {},
  succeeded: true,
  nextAttemptAt: null,
  ...over
})

/** The subscription the rows belong to: its id and tenant. */
export interface LogSubscription { id: string, orgRefId: string, entityRefId: string }

const id = (prefix: string): string => `${prefix}_${randomBytes(12).toString('hex')}`

export interface SeedSpec {
  at: Date
  /** Default `invoice.paid`. */
  topic?: string
  /** The HTTP status the attempt got (0: no answer); default 200. */
  status?: number
  /**
   * A failed attempt whose delivery waits for a retry (a day from now at the earliest, so that no worker takes it);
   * default: the delivery failed for good.
   */
  pending?: boolean
  /** Another attempt of a delivery seeded before (its `attempt` then says which). */
  deliveryId?: string
  /** A delivery of an event seeded before (a replay's, say). */
  eventId?: string
  /** Default 1. */
  attempt?: number
  responseBody?: string
}

export interface Seeded {
  attemptId: string
  deliveryId: string
  eventId: string
  at: Date
  topic: string
  status: number
  attempt: number
  /** What the log calls it, once every attempt of its delivery is seeded. */
  outcome: 'succeeded' | 'pending' | 'failed'
  /** The next retry of a pending delivery, shown on its latest attempt only. */
  nextAttemptAt: Date | null
}

const DAY_MS = 86_400_000

/**
 * Writes attempts straight into the log of `s`: an event and a delivery for each (unless the spec names earlier
 * ones), the delivery's state that of its latest attempt. Nothing is left for a worker to claim (a pending
 * delivery's retry is an hour after its attempt), and the app's hourly activity is not touched.
 */
export async function seedAttempts (db: Queryable, s: LogSubscription, specs: SeedSpec[]): Promise<Seeded[]> {
  const seeded = specs.map(spec => {
    const status = spec.status ?? 200
    return {
      attemptId: id('att'),
      deliveryId: spec.deliveryId ?? id('dlv'),
      eventId: spec.eventId ?? id('evt'),
      at: spec.at,
      topic: spec.topic ?? 'invoice.paid',
      status,
      attempt: spec.attempt ?? 1,
      ok: status >= 200 && status < 300,
      pending: spec.pending ?? false,
      nextAt: new Date(Math.max(spec.at.getTime() + 3_600_000, Date.now() + DAY_MS)),
      responseBody: spec.responseBody ?? (status === 0 ? null : 'ok')
    }
  })
  const events = new Map<string, (typeof seeded)[number]>()
  const deliveries = new Map<string, (typeof seeded)[number]>()
  for (const a of seeded) {
    if (!events.has(a.eventId)) events.set(a.eventId, a)
    const latest = deliveries.get(a.deliveryId)
    if (!latest || latest.attempt < a.attempt) deliveries.set(a.deliveryId, a)
  }
  const existing = new Set((await db.query<{ id: string }>('select id from webhook_events where id = any($1)',
    [[...events.keys()]])).map(r => r.id))
  const newEvents = [...events.values()].filter(e => !existing.has(e.eventId))
  await db.query(
    `insert into webhook_events (id, topic, org_ref_id, entity_ref_id, body, delivery_count, created_at)
     select u.id, u.topic, $3, $4, u.body, 1, u.at from unnest($1::text[], $2::text[], $5::text[], $6::timestamptz[])
       as u(id, topic, body, at)`,
    [newEvents.map(e => e.eventId), newEvents.map(e => e.topic), s.orgRefId, s.entityRefId,
      newEvents.map(e => JSON.stringify({ id: e.eventId, topic: e.topic, data: { seeded: true } })),
      newEvents.map(e => e.at)]
  )
  const known = new Set((await db.query<{ id: string }>('select id from webhook_deliveries where id = any($1)',
    [[...deliveries.keys()]])).map(r => r.id))
  const state = (d: (typeof seeded)[number]) => d.ok ? 'succeeded' : d.pending ? 'pending' : 'failed'
  const all = [...deliveries.values()]
  // A delivery seeded before takes the state of its latest attempt now.
  await db.query(
    `update webhook_deliveries d set status = u.status, attempts = u.attempts,
            next_attempt_at = u.next_at, completed_at = case when u.status = 'pending' then null else u.at end
       from unnest($1::text[], $2::text[], $3::int[], $4::timestamptz[], $5::timestamptz[])
         as u(id, status, attempts, next_at, at)
      where d.id = u.id`,
    [all.map(d => d.deliveryId), all.map(state), all.map(d => d.attempt),
      all.map(d => d.nextAt), all.map(d => d.at)]
  )
  const fresh = all.filter(d => !known.has(d.deliveryId))
  await db.query(
    `insert into webhook_deliveries (id, event_id, subscription_id, status, attempts, next_attempt_at, created_at,
                                     completed_at)
     select u.id, u.event_id, $3, u.status, u.attempts, u.next_at, u.at,
            case when u.status = 'pending' then null else u.at end
       from unnest($1::text[], $2::text[], $4::text[], $5::int[], $6::timestamptz[], $7::timestamptz[])
         as u(id, event_id, status, attempts, at, next_at)`,
    [fresh.map(d => d.deliveryId), fresh.map(d => d.eventId), s.id, fresh.map(state), fresh.map(d => d.attempt),
      fresh.map(d => d.at), fresh.map(d => d.nextAt)]
  )
  await db.query(
    `insert into webhook_attempts (id, delivery_id, subscription_id, attempt, attempted_at, duration_ms,
                                   response_status, response_body, error, error_class, request_headers,
                                   response_headers)
     select u.id, u.delivery_id, $3, u.attempt, u.at, 12, u.status, u.body,
            case when u.status between 200 and 299 then null when u.status = 0 then 'connection refused'
                 else 'HTTP ' || u.status end,
            case when u.status between 200 and 299 then null when u.status = 0 then 'connection_refused'
                 else 'http_status' end,
            jsonb_build_object('webhook-id', u.event_id), '{}'::jsonb
       from unnest($1::text[], $2::text[], $4::int[], $5::timestamptz[], $6::int[], $7::text[], $8::text[])
         as u(id, delivery_id, attempt, at, status, body, event_id)`,
    [seeded.map(a => a.attemptId), seeded.map(a => a.deliveryId), s.id, seeded.map(a => a.attempt),
      seeded.map(a => a.at), seeded.map(a => a.status), seeded.map(a => a.responseBody),
      seeded.map(a => a.eventId)]
  )
  return seeded.map(a => {
    const latest = deliveries.get(a.deliveryId)!
    const pending = state(latest) === 'pending'
    return {
      attemptId: a.attemptId,
      deliveryId: a.deliveryId,
      eventId: a.eventId,
      at: a.at,
      topic: a.topic,
      status: a.status,
      attempt: a.attempt,
      outcome: a.ok ? 'succeeded' : pending ? 'pending' : 'failed',
      nextAttemptAt: pending && latest === a ? a.nextAt : null
    }
  })
}

/** The log's order: newest first, then by id (descending), as the store pages it. */
export const newestFirst = <T extends { at: Date, attemptId: string }>(rows: T[]): T[] =>
  [...rows].sort((a, b) => b.at.getTime() - a.at.getTime() || (a.attemptId < b.attemptId ? 1 : -1))

export interface RecordSpec {
  at: Date
  /** Default true. */
  succeeded?: boolean
  /** A failure that is retried (pending again); default: out of attempts, the delivery failed for good. */
  retry?: boolean
  /** Default 200 when it succeeded, else 500. */
  status?: number
  topic?: string
}

/**
 * Attempts at new deliveries of `s`, recorded through the queue's `record` as the worker records them. Each
 * delivery is made leased (so that no worker claims it first) and its event's time is the attempt's.
 */
export async function recordAttempts (db: Db, s: LogSubscription, specs: RecordSpec[]): Promise<AttemptResult[]> {
  const rows = specs.map(spec =>
    ({ eventId: id('evt'), deliveryId: id('dlv'), topic: spec.topic ?? 'invoice.paid', spec }))
  await db.query(
    `insert into webhook_events (id, topic, org_ref_id, entity_ref_id, body, delivery_count, created_at)
     select u.id, u.topic, $3, $4, '{}', 1, u.at from unnest($1::text[], $2::text[], $5::timestamptz[])
       as u(id, topic, at)`,
    [rows.map(r => r.eventId), rows.map(r => r.topic), s.orgRefId, s.entityRefId, rows.map(r => r.spec.at)]
  )
  await db.query(
    `insert into webhook_deliveries (id, event_id, subscription_id, locked_by, locked_until)
     select u.id, u.event_id, $3, 'test', now() + interval '1 hour'
       from unnest($1::text[], $2::text[]) as u(id, event_id)`,
    [rows.map(r => r.deliveryId), rows.map(r => r.eventId), s.id]
  )
  const results: AttemptResult[] = rows.map(({ eventId, deliveryId, spec }) => {
    const succeeded = spec.succeeded ?? true
    const status = spec.status ?? (succeeded ? 200 : 500)
    return {
      deliveryId,
      subscriptionId: s.id,
      attempt: 1,
      attemptedAt: spec.at,
      durationMs: 5,
      status,
      responseBody: succeeded ? 'ok' : 'no',
      error: succeeded ? null : `HTTP ${status}`,
      errorClass: succeeded ? null : 'http_status',
      requestHeaders: { 'webhook-id': eventId },
      responseHeaders: {},
      succeeded,
      // A retry no worker takes during the test.
      nextAttemptAt: !succeeded && spec.retry ? new Date(Math.max(spec.at.getTime(), Date.now()) + DAY_MS) : null
    }
  })
  const queue = createDeliveryQueueStore(db)
  await db.tx(q => queue.record(q, results, counterUpdates(results)))
  return results
}
