import { notify, type Db, type Queryable } from '../../infrastructure/db/index.js'
import type { NewEvent } from '../events/store.js'
import { claimFairly } from './fair-claim.js'

export type { Caps, ClaimedDelivery } from './fair-claim.js'

/** Workers LISTEN here; a publish, a retry or a released lease NOTIFYs it so that an idle worker claims at once. */
export const WAKEUP_CHANNEL = 'webhook_wakeup'

/** The outcome of one attempt, as the worker records it. */
export interface AttemptResult {
  deliveryId: string
  subscriptionId: string
  attempt: number
  attemptedAt: Date
  durationMs: number
  /** HTTP status, 0 when there was no HTTP answer. */
  status: number
  responseBody: string | null
  error: string | null
  errorClass: string | null
  requestHeaders: Record<string, string>
  responseHeaders: Record<string, string> | null
  /** Null: done (succeeded or out of attempts). A date: pending again until then. */
  nextAttemptAt: Date | null
  succeeded: boolean
}

/** What one flush of delivery results does to one subscription's counters, attempts taken in order. */
export interface CounterUpdate {
  subscriptionId: string
  lastAt: Date
  lastStatus: number
  /** True when the batch holds a success: the streak restarts from `failures` after it. */
  reset: boolean
  failures: number
  /** When the streak that remains after the batch began (null if it ended on a success). */
  streakStart: Date | null
  gone: boolean
}

/** A subscription's failing streak after a flush, for the thresholds that disable it. */
export interface Streak {
  id: string
  consecutive_failures: number
  failing_since: Date | null
  is_active: boolean
}

/** Rows of `unnest(...)` arguments: one array per column, in the order the SQL names them. */
const columns = <T>(rows: T[], ...pick: Array<(r: T) => unknown>): unknown[][] => pick.map(f => rows.map(f))

/**
 * Stores new events with their fan-out to every matching active subscription (active subscription, active install,
 * the app's key on, same tenant, topic listed) in one statement, so in one round trip: the events, their
 * deliveries and the wake-up notification exist together or not at all, in the caller's transaction (the
 * notification goes out at its commit). The events are inserted in the order given; one whose producer id is
 * stored already (before, or earlier in the same batch) stores nothing and is left out of the answer.
 */
export async function fanOut (q: Queryable, events: NewEvent[]): Promise<Array<{ id: string, deliveries: number }>> {
  const rows = await q.query<{ id: string, delivery_count: number }>(
    `with input as (
       select * from unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::timestamptz[])
         with ordinality as u(id, producer_id, topic, org_ref_id, entity_ref_id, body, created_at, ord)
     ), targets as (
       select u.id as event_id, s.id as subscription_id
         from input u
         join webhook_subscriptions s
           on s.is_active and s.org_ref_id = u.org_ref_id and s.entity_ref_id = u.entity_ref_id
          and u.topic = any(s.topics)
         join installs i on i.install_id = s.install_id and i.status = 'active'
         join apps a on a.client_id = i.client_id and a.api_key_enabled
     ), counts as (
       select event_id, count(*)::int as n from targets group by event_id
     ), event as (
       insert into webhook_events (id, producer_id, topic, org_ref_id, entity_ref_id, body, delivery_count, created_at)
       select u.id, u.producer_id, u.topic, u.org_ref_id, u.entity_ref_id, u.body, coalesce(c.n, 0), u.created_at
         from input u left join counts c on c.event_id = u.id
        order by u.ord
       on conflict (producer_id) do nothing
       returning id, delivery_count
     ), fanout as (
       insert into webhook_deliveries (id, event_id, subscription_id)
       select 'dlv_' || replace(gen_random_uuid()::text, '-', ''), t.event_id, t.subscription_id
         from targets t join event on event.id = t.event_id
     ), wake as (
       select pg_notify($8, id) from event where delivery_count > 0 limit 1
     )
     select id, delivery_count, (select count(*) from wake) as woken from event`,
    [
      ...columns(events, e => e.id, e => e.producerId, e => e.topic, e => e.orgRefId, e => e.entityRefId, e => e.body,
        e => e.createdAt),
      WAKEUP_CHANNEL
    ]
  )
  return rows.map(r => ({ id: r.id, deliveries: r.delivery_count }))
}

/**
 * The delivery queue: the fan-out of events into deliveries, the workers' claims, leases and results, the attempt
 * log, and what operators and receivers do to it (replay, retry, cancel, the gauges). Claims are `FOR UPDATE SKIP
 * LOCKED` with a lease, so any number of workers (processes or machines) share it, and a worker that dies only
 * delays its deliveries until the lease runs out.
 */
export function createDeliveryQueueStore (db: Db) {
  return {
    fanOut,

    /** An event for one subscription only (webhook.test), through the queue like any: one statement, workers woken. */
    async enqueueTest (e: NewEvent, subscriptionId: string): Promise<{ eventId: string, deliveryId: string }> {
      const [row] = await db.query<{ delivery_id: string }>(
        `with event as (
           insert into webhook_events (id, topic, org_ref_id, entity_ref_id, body, delivery_count, created_at)
           values ($1, $2, $3, $4, $5, 1, $6) returning id
         ), delivery as (
           insert into webhook_deliveries (id, event_id, subscription_id)
           select 'dlv_' || replace(gen_random_uuid()::text, '-', ''), event.id, $7 from event
           returning id
         )
         select id as delivery_id, pg_notify($8, $1) is not null as notified from delivery`,
        [e.id, e.topic, e.orgRefId, e.entityRefId, e.body, e.createdAt, subscriptionId, WAKEUP_CHANNEL]
      )
      return { eventId: e.id, deliveryId: row!.delivery_id }
    },

    claim: claimFairly,

    /**
     * Records finished attempts in one statement: appends them to the log, moves their deliveries on (ending their
     * leases), adds them to their apps' hourly activity, and applies the counter updates to their subscriptions;
     * returns the subscriptions' new streaks.
     */
    async record (q: Queryable, results: AttemptResult[], updates: CounterUpdate[]): Promise<Streak[]> {
      if (results.length === 0) return []
      return q.query<Streak>(
        `with attempts as (
           insert into webhook_attempts
             (id, delivery_id, subscription_id, attempt, attempted_at, duration_ms, response_status, response_body,
              error, error_class, request_headers, response_headers)
           select 'att_' || replace(gen_random_uuid()::text, '-', ''), r.delivery_id, r.subscription_id, r.attempt,
                  r.attempted_at, r.duration_ms, r.response_status, r.response_body, r.error, r.error_class,
                  r.request_headers::jsonb, r.response_headers::jsonb
             from unnest($1::text[], $2::text[], $3::int[], $4::timestamptz[], $5::int[], $6::int[], $7::text[],
                         $8::text[], $9::text[], $10::text[], $11::text[])
               as r(delivery_id, subscription_id, attempt, attempted_at, duration_ms, response_status, response_body,
                    error, error_class, request_headers, response_headers)
         ), deliveries as (
           -- A delivery cancelled while its attempt was in flight stays cancelled.
           update webhook_deliveries d set
             attempts = greatest(d.attempts, r.attempt),
             status = case when d.status = 'cancelled' then 'cancelled'
                           when r.succeeded then 'succeeded'
                           when r.next_at is null then 'failed'
                           else 'pending' end,
             next_attempt_at = coalesce(r.next_at, d.next_attempt_at),
             completed_at = case when r.succeeded or r.next_at is null then now() else null end,
             locked_by = null,
             locked_until = null
           from unnest($1::text[], $3::int[], $12::bool[], $13::timestamptz[]) as r(id, attempt, succeeded, next_at)
           where d.id = r.id
         ), activity as (
           -- The app's hourly figures (the dashboard's), in key order so that concurrent flushes lock alike. Hours
           -- of UTC, as the pages count them, whatever the session's time zone.
           insert into webhook_activity_hours as h (client_id, hour, succeeded, failed, exhausted)
           select i.client_id, date_trunc('hour', r.attempted_at, 'UTC'),
                  count(*) filter (where r.succeeded), count(*) filter (where not r.succeeded),
                  count(*) filter (where not r.succeeded and r.next_at is null)
             from unnest($2::text[], $4::timestamptz[], $12::bool[], $13::timestamptz[])
               as r(subscription_id, attempted_at, succeeded, next_at)
             join webhook_subscriptions s on s.id = r.subscription_id
             join installs i on i.install_id = s.install_id
            group by 1, 2
            order by 1, 2
           on conflict (client_id, hour) do update set
             succeeded = h.succeeded + excluded.succeeded,
             failed = h.failed + excluded.failed,
             exhausted = h.exhausted + excluded.exhausted
         )
         update webhook_subscriptions s set
           last_delivery_at = r.last_at,
           last_delivery_status = r.last_status,
           consecutive_failures = case when r.reset then r.failures else s.consecutive_failures + r.failures end,
           failing_since = case when r.reset then r.streak_start else coalesce(s.failing_since, r.streak_start) end
         from unnest($14::text[], $15::timestamptz[], $16::int[], $17::bool[], $18::int[], $19::timestamptz[])
           as r(id, last_at, last_status, reset, failures, streak_start)
         where s.id = r.id
         returning s.id, s.consecutive_failures, s.failing_since, s.is_active`,
        [
          ...columns(
            results,
            r => r.deliveryId,
            r => r.subscriptionId,
            r => r.attempt,
            r => r.attemptedAt,
            r => r.durationMs,
            r => r.status,
            r => r.responseBody,
            r => r.error,
            r => r.errorClass,
            r => JSON.stringify(r.requestHeaders),
            r => (r.responseHeaders ? JSON.stringify(r.responseHeaders) : null),
            r => r.succeeded,
            r => r.nextAttemptAt
          ),
          ...columns(
            updates,
            u => u.subscriptionId,
            u => u.lastAt,
            u => u.lastStatus,
            u => u.reset,
            u => u.failures,
            u => u.streakStart
          )
        ]
      )
    },

    /** Clears leases that expired (their worker died); returns how many. */
    async reap (): Promise<number> {
      const rows = await db.query(
        `update webhook_deliveries set locked_by = null, locked_until = null
          where status = 'pending' and locked_until < now() returning id`
      )
      return rows.length
    },

    /** Cancels deliveries that can no longer go out (their subscription or install is inactive). */
    async cancel (deliveryIds: string[]): Promise<void> {
      if (deliveryIds.length === 0) return
      await db.query(
        `update webhook_deliveries set status = 'cancelled', completed_at = now(), locked_by = null, locked_until = null
          where id = any($1) and status = 'pending'`,
        [deliveryIds]
      )
    },

    /** Cancels what these subscriptions still have pending (they were just disabled), in the caller's transaction. */
    async cancelPending (q: Queryable, subscriptionIds: string[]): Promise<void> {
      await q.query(
        `update webhook_deliveries set status = 'cancelled', completed_at = now(), locked_by = null, locked_until = null
          where subscription_id = any($1) and status = 'pending'`,
        [subscriptionIds]
      )
    },

    /** Makes a delivery of this subscription due now; false when there is no such delivery. */
    async retryNow (subscriptionId: string, deliveryId: string): Promise<boolean> {
      return db.tx(async q => {
        const rows = await q.query(
          `update webhook_deliveries set status = 'pending', next_attempt_at = now(), completed_at = null
            where id = $1 and subscription_id = $2 returning id`,
          [deliveryId, subscriptionId]
        )
        if (rows.length > 0) await notify(q, WAKEUP_CHANNEL, '')
        return rows.length > 0
      })
    },

    /**
     * Enqueues again, as new deliveries, the events this subscription was sent between `since` and `until` (event
     * time) whose last delivery ended in `statuses`, at most `limit`, oldest first. With an idempotency key the
     * first answer is kept and returned to a repeat; the same key with other parameters is 'conflict'.
     */
    async replay (
      subscriptionId: string,
      r: { since: Date, until: Date, statuses: string[], limit: number, key: string | undefined, fingerprint: string }
    ): Promise<{ replayed: number, truncated: boolean, until: Date } | 'conflict'> {
      return db.tx(async q => {
        if (r.key !== undefined) {
          const [claimed] = await q.query(
            `insert into webhook_replays (subscription_id, idempotency_key, fingerprint) values ($1, $2, $3)
             on conflict do nothing returning 1`,
            [subscriptionId, r.key, r.fingerprint])
          if (!claimed) {
            // The first request with this key has committed (its row lock is held until then): its answer stands.
            type First = { fingerprint: string, replayed: number, truncated: boolean, until_at: Date }
            const [first] = await q.query<First>(
              `select fingerprint, replayed, truncated, until_at from webhook_replays
                where subscription_id = $1 and idempotency_key = $2`, [subscriptionId, r.key])
            if (first!.fingerprint !== r.fingerprint) return 'conflict'
            return { replayed: first!.replayed, truncated: first!.truncated, until: first!.until_at }
          }
        }
        const [row] = await q.query<{ replayed: number, matched: number }>(
          `with latest as (
             select distinct on (d.event_id) d.event_id, d.status, e.created_at
               from webhook_deliveries d join webhook_events e on e.id = d.event_id
              where d.subscription_id = $1 and e.created_at >= $2 and e.created_at < $3
              order by d.event_id, d.created_at desc
           ), picked as (
             select event_id from latest where status = any($4) order by created_at limit $5 + 1
           ), inserted as (
             insert into webhook_deliveries (id, event_id, subscription_id)
             select 'dlv_' || replace(gen_random_uuid()::text, '-', ''), event_id, $1
               from (select event_id from picked limit $5) p
             returning 1
           )
           select (select count(*)::int from inserted) as replayed, (select count(*)::int from picked) as matched`,
          [subscriptionId, r.since, r.until, r.statuses, r.limit])
        const result = { replayed: row!.replayed, truncated: row!.matched > r.limit, until: r.until }
        if (r.key !== undefined) {
          await q.query(
            `update webhook_replays set replayed = $3, truncated = $4, until_at = $5
              where subscription_id = $1 and idempotency_key = $2`,
            [subscriptionId, r.key, result.replayed, result.truncated, r.until])
        }
        if (result.replayed > 0) await notify(q, WAKEUP_CHANNEL, '')
        return result
      })
    },

    /** The backlog, for operators: pending deliveries and the age of the oldest (the partial index covers it). */
    async backlog (): Promise<{ pending: number, oldestAgeS: number }> {
      const [row] = await db.query<{ pending: number, oldest_age_s: number | null }>(
        `select count(*)::int as pending,
                extract(epoch from now() - min(created_at))::float8 as oldest_age_s
           from webhook_deliveries where status = 'pending'`
      )
      return { pending: row!.pending, oldestAgeS: Math.max(0, row!.oldest_age_s ?? 0) }
    },

    /**
     * The queue per subscription, for operators' gauges: pending deliveries and attempts in flight (leased), with
     * the subscription's tenant. One grouped pass over the pending rows; one row per subscription with work.
     */
    async queueBySubscription (): Promise<Array<{ tenant: string, pending: number, inFlight: number }>> {
      const rows = await db.query<{ tenant: string, pending: number, in_flight: number }>(
        `select s.org_ref_id || '/' || s.entity_ref_id as tenant, q.pending, q.in_flight
           from (select subscription_id, count(*)::int as pending,
                        count(*) filter (where locked_until >= now())::int as in_flight
                   from webhook_deliveries where status = 'pending' group by subscription_id) q
           join webhook_subscriptions s on s.id = q.subscription_id`
      )
      return rows.map(r => ({ tenant: r.tenant, pending: r.pending, inFlight: r.in_flight }))
    }
  }
}

export type DeliveryQueueStore = ReturnType<typeof createDeliveryQueueStore>
