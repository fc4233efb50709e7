import type { Static } from '@sinclair/typebox'
import { randomToken } from '../../../lib/crypto.js'
import type { EventBody } from '../../../schemas/events.js'
import { notify, type Db, type Queryable } from '../../infrastructure/db/index.js'
import type { SigningScheme } from './signing.js'

/** Workers LISTEN here; a publish, a retry or a released lease NOTIFYs it so that an idle worker claims at once. */
export const WAKEUP_CHANNEL = 'webhook_wakeup'

export type DisabledReason = 'deleted' | 'consecutive_failures' | 'gone'

export interface Subscription {
  id: string
  installId: string
  topics: string[]
  targetUrl: string
  isActive: boolean
  disabledReason: DisabledReason | null
  createdAt: Date
  lastDeliveryAt: Date | null
  lastDeliveryStatus: number | null
  consecutiveFailures: number
}

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
  signingScheme: SigningScheme
  /** The secret a rotation replaced, while its overlap lasts: it signs too. */
  previous: { secretCiphertext: string, signingScheme: SigningScheme } | null
  /** False when the subscription or its install is no longer active, or the app's key is off: cancel, don't send. */
  deliverable: boolean
}

/**
 * The caps every claim respects, counted over the leases of all workers together
 * (docs/webhook-delivery.md#fair-delivery): attempts in flight per subscription, and per tenant (org and entity, all
 * its subscriptions together).
 */
export interface Caps {
  perSubscription: number
  perTenant: number
}

/** Claims are taken one at a time across all workers (a transaction-level advisory lock), so the caps hold globally. */
const CLAIM_LOCK = 0x6d675f77 // "mg_w"

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
  errorClass: string | null
  requestHeaders: Record<string, string> | null
  responseHeaders: Record<string, string> | null
  deliveryStatus: 'pending' | 'succeeded' | 'failed' | 'cancelled'
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

export interface NewSubscription {
  id: string
  installId: string
  orgRefId: string
  entityRefId: string
  topics: string[]
  targetUrl: string
  secretCiphertext: string
}

interface SubscriptionRow {
  id: string
  install_id: string
  topics: string[]
  target_url: string
  is_active: boolean
  disabled_reason: DisabledReason | null
  created_at: Date
  last_delivery_at: Date | null
  last_delivery_status: number | null
  consecutive_failures: number
}

const SUBSCRIPTION_COLUMNS = `id, install_id, topics, target_url, is_active, disabled_reason, created_at,
                              last_delivery_at, last_delivery_status, consecutive_failures`

const toSubscription = (r: SubscriptionRow): Subscription => ({
  id: r.id,
  installId: r.install_id,
  topics: r.topics,
  targetUrl: r.target_url,
  isActive: r.is_active,
  disabledReason: r.disabled_reason,
  createdAt: r.created_at,
  lastDeliveryAt: r.last_delivery_at,
  lastDeliveryStatus: r.last_delivery_status,
  consecutiveFailures: r.consecutive_failures
})

/** Rows of `unnest(...)` arguments: one array per column, in the order the SQL names them. */
const columns = <T>(rows: T[], ...pick: Array<(r: T) => unknown>): unknown[][] => pick.map(f => rows.map(f))

/** The bytes every attempt of an event sends and signs, retries included (docs/rules.md#delivery). */
function eventBody (id: string, topic: string, createdAt: Date, orgRefId: string, entityRefId: string, data: unknown) {
  return JSON.stringify({
    id, topic, created_at: createdAt.toISOString(), org_ref_id: orgRefId, entity_ref_id: entityRefId, data
  })
}

/** Producer ids in a fixed order (code units, not locale), events without one last. */
const compareIds = (a: string | undefined, b: string | undefined): number =>
  a === b ? 0 : a === undefined ? 1 : b === undefined ? -1 : a < b ? -1 : 1

/** An event stored (or found stored under its producer id) and the deliveries it was fanned out to. */
type Accepted = { id: string, deliveries: number }

/**
 * Stores events and their fan-out to every matching active subscription in one statement, so in one round trip
 * and one transaction: the events, their deliveries and the wake-up notification exist together or not at all.
 * A producer id seen before (in an earlier request, or earlier in the same batch) stores nothing: the same event
 * returns the first result, a different one (topic, tenant or data) makes the whole answer `'conflict'` (the
 * caller rolls its transaction back). Events with a producer id are inserted in the order of their ids, those
 * without last: two batches that share ids then wait for each other's rows in the same order, instead of each
 * holding one the other needs (a deadlock). The results keep the order given. Inside a caller's transaction the
 * notification goes out at its commit.
 */
export async function insertEvents (
  q: Queryable,
  events: Array<Static<typeof EventBody>>,
  createdAt = new Date()
): Promise<Accepted[] | 'conflict'> {
  const order = events.map((_, i) => i).sort((a, b) => compareIds(events[a]!.id, events[b]!.id) || a - b)
  const ids = events.map(() => randomToken('evt_', 16))
  const sorted = order.map(i => ({ id: ids[i]!, e: events[i]! }))
  const rows = await q.query<{ id: string, delivery_count: number }>(
    `with input as (
       select * from unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[])
         with ordinality as u(id, producer_id, topic, org_ref_id, entity_ref_id, body, ord)
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
       select u.id, u.producer_id, u.topic, u.org_ref_id, u.entity_ref_id, u.body, coalesce(c.n, 0), $7
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
      ...columns(sorted, s => s.id, s => s.e.id ?? null, s => s.e.topic, s => s.e.org_ref_id, s => s.e.entity_ref_id,
        s => eventBody(s.id, s.e.topic, createdAt, s.e.org_ref_id, s.e.entity_ref_id, s.e.data)),
      createdAt,
      WAKEUP_CHANNEL
    ]
  )
  const stored = new Map(rows.map(r => [r.id, r.delivery_count]))
  const accepted: Accepted[] = new Array(events.length)
  const seen: number[] = []
  events.forEach((_, i) => {
    const deliveries = stored.get(ids[i]!)
    if (deliveries === undefined) seen.push(i)
    else accepted[i] = { id: ids[i]!, deliveries }
  })
  if (seen.length === 0) return accepted
  // Producer ids seen before: the same event again gets the first result, another event under it none.
  const firsts = await q.query<{ i: number, id: string, delivery_count: number, same: boolean }>(
    `select u.i, e.id, e.delivery_count,
            (e.topic = u.topic and e.org_ref_id = u.org_ref_id and e.entity_ref_id = u.entity_ref_id
             and e.body::jsonb -> 'data' = u.data::jsonb) as same
       from unnest($1::int[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[])
              as u(i, producer_id, topic, org_ref_id, entity_ref_id, data)
       join webhook_events e on e.producer_id = u.producer_id`,
    columns(seen, i => i, i => events[i]!.id, i => events[i]!.topic, i => events[i]!.org_ref_id,
      i => events[i]!.entity_ref_id, i => JSON.stringify(events[i]!.data))
  )
  if (firsts.length !== seen.length) throw new Error('an event was neither stored nor found under its producer id')
  if (firsts.some(f => !f.same)) return 'conflict'
  for (const f of firsts) accepted[f.i] = { id: f.id, deliveries: f.delivery_count }
  return accepted
}

/** One event: insertEvents of a batch of one. */
export async function insertEvent (
  q: Queryable,
  e: Static<typeof EventBody>,
  createdAt = new Date()
): Promise<Accepted | 'conflict'> {
  const accepted = await insertEvents(q, [e], createdAt)
  return accepted === 'conflict' ? accepted : accepted[0]!
}

/**
 * Every statement of the webhooks aggregate: subscriptions, events, the delivery queue and its attempt log.
 * The queue's claims are `FOR UPDATE SKIP LOCKED` with a lease, so any number of workers (processes or machines)
 * share it, and a worker that dies only delays its deliveries until the lease runs out.
 */
export function createWebhookStore (db: Db) {
  async function cancelPending (q: Queryable, subscriptionIds: string[]): Promise<void> {
    await q.query(
      `update webhook_deliveries set status = 'cancelled', completed_at = now(), locked_by = null, locked_until = null
        where subscription_id = any($1) and status = 'pending'`,
      [subscriptionIds]
    )
  }

  /** Deactivates subscriptions and cancels what they still had pending. */
  async function disable (q: Queryable, ids: string[], reason: DisabledReason): Promise<void> {
    if (ids.length === 0) return
    await q.query(
      `update webhook_subscriptions set is_active = false, disabled_reason = $2, disabled_at = now()
        where id = any($1) and is_active`,
      [ids, reason]
    )
    await cancelPending(q, ids)
  }

  return {
    /**
     * Inserts a subscription unless the install already has `limit` active ones; undefined then. Creations of one
     * install are serialised by a row lock on the install, so the limit holds under concurrent requests.
     */
    async insertSubscription (s: NewSubscription, limit: number): Promise<Subscription | undefined> {
      return db.tx(async q => {
        await q.query('select install_id from installs where install_id = $1 for update', [s.installId])
        const [{ n }] = (await q.query<{ n: number }>(
          'select count(*)::int as n from webhook_subscriptions where install_id = $1 and is_active',
          [s.installId]
        )) as [{ n: number }]
        if (n >= limit) return undefined
        const [row] = await q.query<SubscriptionRow>(
          `insert into webhook_subscriptions
             (id, install_id, org_ref_id, entity_ref_id, topics, target_url, secret_ciphertext)
           values ($1, $2, $3, $4, $5, $6, $7) returning ${SUBSCRIPTION_COLUMNS}`,
          [s.id, s.installId, s.orgRefId, s.entityRefId, s.topics, s.targetUrl, s.secretCiphertext]
        )
        return toSubscription(row!)
      })
    },

    async listSubscriptions (installId: string, includeInactive: boolean): Promise<Subscription[]> {
      const rows = await db.query<SubscriptionRow>(
        `select ${SUBSCRIPTION_COLUMNS} from webhook_subscriptions
          where install_id = $1 and (is_active or $2) order by created_at, id`,
        [installId, includeInactive]
      )
      return rows.map(toSubscription)
    },

    /** The install's own subscription, active or not; undefined for anyone else's. */
    async findSubscription (installId: string, id: string): Promise<Subscription | undefined> {
      const [row] = await db.query<SubscriptionRow>(
        `select ${SUBSCRIPTION_COLUMNS} from webhook_subscriptions where id = $1 and install_id = $2`,
        [id, installId]
      )
      return row && toSubscription(row)
    },

    /** Soft delete of the install's own active subscription; false when there was none. */
    async deleteSubscription (installId: string, id: string): Promise<boolean> {
      return db.tx(async q => {
        const [row] = await q.query<{ id: string }>(
          'select id from webhook_subscriptions where id = $1 and install_id = $2 and is_active for update',
          [id, installId]
        )
        if (!row) return false
        await disable(q, [id], 'deleted')
        return true
      })
    },

    /**
     * Several events in one transaction (one statement, see insertEvents), with `alongside` (the read side's
     * records) first: all of them, or none when one conflicts with an event stored before.
     */
    async insertEvents (
      events: Array<Static<typeof EventBody>>,
      alongside?: (q: Queryable) => Promise<void>
    ): Promise<Accepted[] | 'conflict'> {
      const conflict = new Error('event conflict: the batch is rolled back')
      try {
        return await db.tx(async q => {
          await alongside?.(q)
          const accepted = await insertEvents(q, events)
          if (accepted === 'conflict') throw conflict
          return accepted
        })
      } catch (err) {
        if (err === conflict) return 'conflict'
        throw err
      }
    },

    /** Newest first; `before`: the page after the attempt with this (time, id), from a cursor. */
    async attempts (
      subscriptionId: string,
      limit: number,
      before?: { at: Date, id: string }
    ): Promise<AttemptLogEntry[]> {
      const rows = await db.query<{
        id: string
        delivery_id: string
        event_id: string
        topic: string
        attempt: number
        attempted_at: Date
        duration_ms: number
        response_status: number
        response_body: string | null
        error: string | null
        error_class: string | null
        request_headers: Record<string, string> | null
        response_headers: Record<string, string> | null
        delivery_status: AttemptLogEntry['deliveryStatus']
      }>(
        `select a.id, a.delivery_id, d.event_id, e.topic, a.attempt, a.attempted_at, a.duration_ms,
                a.response_status, a.response_body, a.error, a.error_class, a.request_headers, a.response_headers,
                d.status as delivery_status
           from webhook_attempts a
           join webhook_deliveries d on d.id = a.delivery_id
           join webhook_events e on e.id = d.event_id
          where a.subscription_id = $1 and ($3::timestamptz is null or (a.attempted_at, a.id) < ($3, $4))
          order by a.attempted_at desc, a.id desc
          limit $2`,
        [subscriptionId, limit, before?.at ?? null, before?.id ?? null]
      )
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
        errorClass: r.error_class,
        requestHeaders: r.request_headers,
        responseHeaders: r.response_headers,
        deliveryStatus: r.delivery_status
      }))
    },

    /**
     * Replaces the signing secret. With an overlap the replaced one keeps signing until it ends (a rotation during
     * an overlap drops the older secret). Undefined when the subscription is not active.
     */
    async rotateSecret (id: string, secretCiphertext: string, overlapS: number) {
      // On the right-hand side the columns are the row's values before this update.
      const [row] = await db.query<{ expires: Date | null }>(
        `update webhook_subscriptions set
           previous_secret_ciphertext = case when $3 > 0 then secret_ciphertext end,
           previous_signing_scheme = case when $3 > 0 then signing_scheme end,
           previous_secret_expires_at = case when $3 > 0 then now() + make_interval(secs => $3) end,
           secret_ciphertext = $2,
           signing_scheme = 'standard'
         where id = $1 and is_active
         returning previous_secret_expires_at as expires`,
        [id, secretCiphertext, overlapS]
      )
      return row && { previousExpiresAt: row.expires }
    },

    /**
     * A `webhook.test` event for one subscription only, through the queue like any event: stored and enqueued in
     * one statement, and the workers woken.
     */
    async insertTestEvent (s: { id: string, orgRefId: string, entityRefId: string }, topic: string, data: object) {
      const id = randomToken('evt_', 16)
      const createdAt = new Date()
      const body = eventBody(id, topic, createdAt, s.orgRefId, s.entityRefId, data)
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
        [id, topic, s.orgRefId, s.entityRefId, body, createdAt, s.id, WAKEUP_CHANNEL]
      )
      return { eventId: id, deliveryId: row!.delivery_id }
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
     * Claims up to `limit` due deliveries, fairly (docs/webhook-delivery.md#fair-delivery), inside the caller's
     * transaction (after it has recorded the worker's finished attempts, so their leases no longer count). Claims
     * are serialised across workers by an advisory lock held to the end of the transaction, so the caps hold for
     * all workers together. The subscriptions with pending deliveries are found by a skip scan of the queue index,
     * and each offers at most its room under the subscription cap, oldest due first. Then fair shares: an offer
     * ranks by the slot it would take among its tenant's (attempts already in flight first, then the tenant's
     * offers round robin over its subscriptions, those with fewer in flight first), lowest slots first, up to the
     * tenant cap. The cost follows the number of subscriptions with pending work, never the length of a backlog.
     */
    async claim (
      q: Queryable, workerId: string, limit: number, leaseSeconds: number, caps: Caps
    ): Promise<ClaimedDelivery[]> {
      if (limit <= 0) return []
      // Plain index scans, not bitmap scans, for the rest of the transaction: a plain scan marks the index entries of
      // deliveries already recorded as dead when it meets them, so the next claims skip them; a bitmap scan would
      // visit the leases of the last minute again at every claim, whatever the statistics say.
      await q.query("select pg_advisory_xact_lock($1), set_config('enable_bitmapscan', 'off', true)", [CLAIM_LOCK])
      const rows = await q.query<{
        id: string
        attempts: number
        event_id: string
        topic: string
        body: string
        subscription_id: string
        target_url: string
        secret_ciphertext: string
        signing_scheme: SigningScheme
        previous_secret_ciphertext: string | null
        previous_signing_scheme: SigningScheme | null
        deliverable: boolean
      }>(
        `with recursive queues (subscription_id, head_at) as (
           -- A skip scan of the queue index: each subscription with pending deliveries, and its earliest due time.
           (select subscription_id, next_attempt_at from webhook_deliveries where status = 'pending'
             order by subscription_id, next_attempt_at limit 1)
           union all
           select n.subscription_id, n.next_attempt_at
             from queues q
             cross join lateral (
               select d.subscription_id, d.next_attempt_at from webhook_deliveries d
                where d.status = 'pending' and d.subscription_id > q.subscription_id
                order by d.subscription_id, d.next_attempt_at limit 1
             ) n
         ), leased as (
           -- Attempts in flight, all workers: the unexpired leases (never more than the workers' slots).
           select d.subscription_id, count(*)::int as n from webhook_deliveries d
            where d.status = 'pending' and d.locked_until is not null and d.locked_until >= now()
            group by d.subscription_id
         ), tenant_leased as (
           select s.org_ref_id || '/' || s.entity_ref_id as tenant, sum(l.n)::int as n
             from leased l join webhook_subscriptions s on s.id = l.subscription_id
            group by 1
         ), ready as (
           -- The subscriptions with something due and room under their cap, each tenant's in fair order (fewest
           -- in flight, then the oldest due first), as many as the tenant has room for: each offers at least one.
           select * from (
             select s.id, x.tenant, x.leased, coalesce(t.n, 0) as tenant_leased,
                    row_number() over (partition by x.tenant order by x.leased, q.head_at, s.id) as k
               from queues q
               join webhook_subscriptions s on s.id = q.subscription_id
               cross join lateral (
                 select s.org_ref_id || '/' || s.entity_ref_id as tenant,
                        coalesce((select n from leased l where l.subscription_id = s.id), 0) as leased
               ) x
               left join tenant_leased t on t.tenant = x.tenant
              where q.head_at <= now() and x.leased < $4::int
           ) r
            where r.k <= $5::int - r.tenant_leased
         ), candidates as (
           -- A subscription's k-th offer counts the attempts it already has in flight: those with fewer come first.
           select r.tenant, r.tenant_leased, c.id, c.next_attempt_at, r.leased + c.sub_rank as sub_rank
             from ready r
             cross join lateral (
               select d.id, d.next_attempt_at, row_number() over (order by d.next_attempt_at, d.id) as sub_rank
                 from webhook_deliveries d
                where d.subscription_id = r.id and d.status = 'pending' and d.next_attempt_at <= now()
                  and (d.locked_until is null or d.locked_until < now())
                order by d.next_attempt_at, d.id
                limit least($4::int - r.leased, $5::int - r.tenant_leased, $1::int)
             ) c
         ), ranked as (
           -- The tenant's slot each offer would take: its attempts in flight, then its offers round robin.
           select id, next_attempt_at,
                  tenant_leased + row_number() over (partition by tenant order by sub_rank, next_attempt_at, id) as slot
             from candidates
         ), picked as (
           select id from ranked where slot <= $5::int
            order by slot, next_attempt_at, id
            limit $1::int
         ), claimed as (
           update webhook_deliveries d set locked_by = $2, locked_until = now() + make_interval(secs => $3)
             from picked p
            where d.id = p.id and d.status = 'pending' and (d.locked_until is null or d.locked_until < now())
           returning d.id, d.attempts, d.event_id, d.subscription_id
         )
         select c.id, c.attempts, c.event_id, e.topic, e.body, c.subscription_id, s.target_url, s.secret_ciphertext,
                s.signing_scheme,
                case when s.previous_secret_expires_at > now() then s.previous_secret_ciphertext end
                  as previous_secret_ciphertext,
                s.previous_signing_scheme,
                (s.is_active and i.status = 'active' and a.api_key_enabled) as deliverable
           from claimed c
           join webhook_events e on e.id = c.event_id
           join webhook_subscriptions s on s.id = c.subscription_id
           join installs i on i.install_id = s.install_id
           join apps a on a.client_id = i.client_id`,
        [limit, workerId, leaseSeconds, caps.perSubscription, caps.perTenant]
      )
      return rows.map(r => ({
        id: r.id,
        attempts: r.attempts,
        eventId: r.event_id,
        topic: r.topic,
        body: r.body,
        subscriptionId: r.subscription_id,
        targetUrl: r.target_url,
        secretCiphertext: r.secret_ciphertext,
        signingScheme: r.signing_scheme,
        previous: r.previous_secret_ciphertext
          ? { secretCiphertext: r.previous_secret_ciphertext, signingScheme: r.previous_signing_scheme ?? 'legacy' }
          : null,
        deliverable: r.deliverable
      }))
    },

    /**
     * Records finished attempts in one statement: appends them to the log, moves their deliveries on (ending their
     * leases), and applies the counter updates to their subscriptions; returns the subscriptions' new streaks.
     */
    async record (
      q: Queryable, results: AttemptResult[], updates: CounterUpdate[]
    ): Promise<Array<{ id: string, consecutive_failures: number, failing_since: Date | null, is_active: boolean }>> {
      if (results.length === 0) return []
      return q.query(
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

    /** Cancels deliveries that can no longer go out (their subscription or install is inactive). */
    async cancel (deliveryIds: string[]): Promise<void> {
      if (deliveryIds.length === 0) return
      await db.query(
        `update webhook_deliveries set status = 'cancelled', completed_at = now(), locked_by = null, locked_until = null
          where id = any($1) and status = 'pending'`,
        [deliveryIds]
      )
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
    },

    /** Clears leases that expired (their worker died); returns how many. */
    async reap (): Promise<number> {
      const rows = await db.query(
        `update webhook_deliveries set locked_by = null, locked_until = null
          where status = 'pending' and locked_until < now() returning id`
      )
      return rows.length
    },

    disable
  }
}

export type WebhookStore = ReturnType<typeof createWebhookStore>
