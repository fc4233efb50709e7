import fp from 'fastify-plugin'
import { notify, type Queryable } from '../db/index.js'

export const WAKEUP_CHANNEL = 'webhook_wakeup'

/** A delivery a worker holds a lease on, with everything its attempt needs. */
export interface ClaimedDelivery {
  id: string
  attempts: number
  eventId: string
  topic: string
  body: string
  subscriptionId: string
  targetUrl: string
  secretCiphertext: string
  /** False when the subscription or its install is no longer active: cancel, don't send. */
  deliverable: boolean
}

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
  /** Null: done (succeeded or out of attempts). A date: pending again until then. */
  nextAttemptAt: Date | null
  succeeded: boolean
}

export interface AttemptLogEntry {
  id: string
  deliveryId: string
  eventId: string
  topic: string
  attempt: number
  attemptedAt: Date
  durationMs: number
  responseStatus: number
  responseBody: string | null
  error: string | null
  deliveryStatus: string
}

interface ClaimRow {
  id: string
  attempts: number
  event_id: string
  topic: string
  body: string
  subscription_id: string
  target_url: string
  secret_ciphertext: string
  deliverable: boolean
}

declare module 'fastify' {
  interface FastifyInstance {
    webhookQueue: {
      claim(workerId: string, limit: number, leaseSeconds: number): Promise<ClaimedDelivery[]>
      record(q: Queryable, results: AttemptResult[]): Promise<void>
      cancel(q: Queryable, deliveryIds: string[]): Promise<void>
      cancelPending(q: Queryable, subscriptionIds: string[]): Promise<void>
      /** Clears leases that expired (their worker died); returns how many. */
      reap(): Promise<number>
      attempts(subscriptionId: string, limit: number): Promise<AttemptLogEntry[]>
      /** Makes a delivery of this subscription due now; false when there is no such delivery. */
      retryNow(subscriptionId: string, deliveryId: string): Promise<boolean>
      pendingCount(): Promise<number>
    }
  }
}

/**
 * The durable delivery queue in Postgres: claims are `FOR UPDATE SKIP LOCKED` with a lease, so any number of
 * workers (processes or machines) can share it, and a worker that dies only delays its deliveries by the lease.
 */
export default fp(async (app) => {
  const { db } = app

  app.decorate('webhookQueue', {
    async claim (workerId: string, limit: number, leaseSeconds: number) {
      const rows = await db.query<ClaimRow>(
        `with due as (
           select id from webhook_deliveries
            where status = 'pending' and next_attempt_at <= now() and (locked_until is null or locked_until < now())
            order by next_attempt_at
            limit $1
            for update skip locked
         ), claimed as (
           update webhook_deliveries d set locked_by = $2, locked_until = now() + make_interval(secs => $3)
             from due where d.id = due.id
           returning d.id, d.attempts, d.event_id, d.subscription_id
         )
         select c.id, c.attempts, c.event_id, e.topic, e.body, c.subscription_id, s.target_url, s.secret_ciphertext,
                (s.is_active and i.status = 'active') as deliverable
           from claimed c
           join webhook_events e on e.id = c.event_id
           join webhook_subscriptions s on s.id = c.subscription_id
           join installs i on i.install_id = s.install_id`,
        [limit, workerId, leaseSeconds])
      return rows.map(r => ({
        id: r.id,
        attempts: r.attempts,
        eventId: r.event_id,
        topic: r.topic,
        body: r.body,
        subscriptionId: r.subscription_id,
        targetUrl: r.target_url,
        secretCiphertext: r.secret_ciphertext,
        deliverable: r.deliverable
      }))
    },

    async record (q: Queryable, results: AttemptResult[]) {
      if (results.length === 0) return
      await q.query(
        `insert into webhook_attempts (id, delivery_id, subscription_id, attempt, attempted_at, duration_ms, response_status, response_body, error)
         select 'att_' || replace(gen_random_uuid()::text, '-', ''), r.*
           from unnest($1::text[], $2::text[], $3::int[], $4::timestamptz[], $5::int[], $6::int[], $7::text[], $8::text[])
             as r(delivery_id, subscription_id, attempt, attempted_at, duration_ms, response_status, response_body, error)`,
        [results.map(r => r.deliveryId), results.map(r => r.subscriptionId), results.map(r => r.attempt),
          results.map(r => r.attemptedAt), results.map(r => r.durationMs), results.map(r => r.status),
          results.map(r => r.responseBody), results.map(r => r.error)])
      // A delivery cancelled while its attempt was in flight stays cancelled.
      await q.query(
        `update webhook_deliveries d set
           attempts = greatest(d.attempts, r.attempt),
           status = case when d.status = 'cancelled' then 'cancelled'
                         when r.succeeded then 'succeeded'
                         when r.next_at is null then 'failed'
                         else 'pending' end,
           next_attempt_at = coalesce(r.next_at, d.next_attempt_at),
           completed_at = case when r.succeeded or r.next_at is null then now() else null end,
           locked_by = null,
           locked_until = null
         from unnest($1::text[], $2::int[], $3::bool[], $4::timestamptz[]) as r(id, attempt, succeeded, next_at)
         where d.id = r.id`,
        [results.map(r => r.deliveryId), results.map(r => r.attempt), results.map(r => r.succeeded), results.map(r => r.nextAttemptAt)])
    },

    async cancel (q: Queryable, deliveryIds: string[]) {
      if (deliveryIds.length === 0) return
      await q.query(
        `update webhook_deliveries set status = 'cancelled', completed_at = now(), locked_by = null, locked_until = null
          where id = any($1) and status = 'pending'`, [deliveryIds])
    },

    async cancelPending (q: Queryable, subscriptionIds: string[]) {
      await q.query(
        `update webhook_deliveries set status = 'cancelled', completed_at = now(), locked_by = null, locked_until = null
          where subscription_id = any($1) and status = 'pending'`, [subscriptionIds])
    },

    async reap () {
      const rows = await db.query(
        `update webhook_deliveries set locked_by = null, locked_until = null
          where status = 'pending' and locked_until < now() returning id`)
      return rows.length
    },

    async attempts (subscriptionId: string, limit: number) {
      const rows = await db.query<{
        id: string, delivery_id: string, event_id: string, topic: string, attempt: number, attempted_at: Date,
        duration_ms: number, response_status: number, response_body: string | null, error: string | null, delivery_status: string
      }>(
        `select a.id, a.delivery_id, d.event_id, e.topic, a.attempt, a.attempted_at, a.duration_ms, a.response_status,
                a.response_body, a.error, d.status as delivery_status
           from webhook_attempts a
           join webhook_deliveries d on d.id = a.delivery_id
           join webhook_events e on e.id = d.event_id
          where a.subscription_id = $1
          order by a.attempted_at desc, a.id desc
          limit $2`, [subscriptionId, limit])
      return rows.map(r => ({
        id: r.id,
        deliveryId: r.delivery_id,
        eventId: r.event_id,
        topic: r.topic,
        attempt: r.attempt,
        attemptedAt: r.attempted_at,
        durationMs: r.duration_ms,
        responseStatus: r.response_status,
        responseBody: r.response_body,
        error: r.error,
        deliveryStatus: r.delivery_status
      }))
    },

    async retryNow (subscriptionId: string, deliveryId: string) {
      return db.tx(async q => {
        const rows = await q.query(
          `update webhook_deliveries set status = 'pending', next_attempt_at = now(), completed_at = null
            where id = $1 and subscription_id = $2 returning id`, [deliveryId, subscriptionId])
        if (rows.length > 0) await notify(q, WAKEUP_CHANNEL, '')
        return rows.length > 0
      })
    },

    async pendingCount () {
      const [row] = await db.query<{ n: number }>(`select count(*)::int as n from webhook_deliveries where status = 'pending'`)
      return row?.n ?? 0
    }
  })
}, { name: 'webhook-queue', dependencies: ['db'] })
