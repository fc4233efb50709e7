import type { Queryable } from '../../infrastructure/db/types.js'
import type { SigningScheme } from './signing.js'

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

interface ClaimRow {
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
}

const toClaimed = (r: ClaimRow): ClaimedDelivery => ({
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
})

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
export async function claimFairly (
  q: Queryable, workerId: string, limit: number, leaseSeconds: number, caps: Caps
): Promise<ClaimedDelivery[]> {
  if (limit <= 0) return []
  // Plain index scans, not bitmap scans, for the rest of the transaction: a plain scan marks the index entries of
  // deliveries already recorded as dead when it meets them, so the next claims skip them; a bitmap scan would
  // visit the leases of the last minute again at every claim, whatever the statistics say.
  await q.query("select pg_advisory_xact_lock($1), set_config('enable_bitmapscan', 'off', true)", [CLAIM_LOCK])
  const rows = await q.query<ClaimRow>(
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
  return rows.map(toClaimed)
}
