import type { Db, Queryable } from '../../infrastructure/db/types.js'

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

/** A subscription with its tenant, as an app's developer sees it among all of the app's installs. */
export interface TenantSubscription extends Subscription {
  orgRefId: string
  entityRefId: string
}

/** A subscription with the install it belongs to and the developer who owns the install's app. */
export interface OwnedSubscription {
  subscription: TenantSubscription
  install: { installId: string, clientId: string, appSlug: string, appName: string, scopes: string[] }
  ownerSub: string | null
}

/** A position in an app's subscription list: its rank (failing, disabled, healthy), creation time and id. */
export type AppListPosition = readonly [rank: number, createdAt: string, id: string]

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

interface TenantRow extends SubscriptionRow { org_ref_id: string, entity_ref_id: string }

/** Failing first, then disabled, then healthy: where a developer looks first. */
const RANK = '(case when s.is_active and s.consecutive_failures > 0 then 0 when not s.is_active then 1 else 2 end)'

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

const prefixed = (alias: string): string =>
  SUBSCRIPTION_COLUMNS.split(',').map(c => `${alias}.${c.trim()}`).join(', ')

const toTenantSubscription = (r: TenantRow): TenantSubscription =>
  ({ ...toSubscription(r), orgRefId: r.org_ref_id, entityRefId: r.entity_ref_id })

/**
 * The webhook subscriptions: creation under the per-install limit, reads scoped to their install, secret rotation
 * and disabling. What a disabled subscription still had pending is the delivery queue's to cancel
 * (delivery-queue-store.ts `cancelPending`), in the same transaction.
 */
export function createSubscriptionStore (db: Db) {
  /** Deactivates subscriptions (those still active), in the caller's transaction. */
  async function disable (q: Queryable, ids: string[], reason: DisabledReason): Promise<void> {
    if (ids.length === 0) return
    await q.query(
      `update webhook_subscriptions set is_active = false, disabled_reason = $2, disabled_at = now()
        where id = any($1) and is_active`,
      [ids, reason]
    )
  }

  return {
    /**
     * Inserts a subscription unless the install already has `limit` active ones; undefined then. Creations of one
     * install are serialised by a row lock on the install, so the limit holds under concurrent requests.
     */
    async insert (s: NewSubscription, limit: number): Promise<Subscription | undefined> {
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

    /** The install's subscriptions, oldest first; the inactive ones too with `includeInactive`. */
    async list (installId: string, includeInactive: boolean): Promise<Subscription[]> {
      const rows = await db.query<SubscriptionRow>(
        `select ${SUBSCRIPTION_COLUMNS} from webhook_subscriptions
          where install_id = $1 and (is_active or $2) order by created_at, id`,
        [installId, includeInactive]
      )
      return rows.map(toSubscription)
    },

    /** The install's own subscription, active or not; undefined for anyone else's. */
    async find (installId: string, id: string): Promise<Subscription | undefined> {
      const [row] = await db.query<SubscriptionRow>(
        `select ${SUBSCRIPTION_COLUMNS} from webhook_subscriptions where id = $1 and install_id = $2`,
        [id, installId]
      )
      return row && toSubscription(row)
    },

    /**
     * Soft delete of the install's own active subscription, in the caller's transaction: its row locked, then
     * deactivated; false when there was none (nothing to delete, or someone else's).
     */
    async remove (q: Queryable, installId: string, id: string): Promise<boolean> {
      const [row] = await q.query<{ id: string }>(
        'select id from webhook_subscriptions where id = $1 and install_id = $2 and is_active for update',
        [id, installId]
      )
      if (!row) return false
      await disable(q, [id], 'deleted')
      return true
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

    /** A subscription with its install and the owner of the install's app; undefined for an unknown id. */
    async findOwned (id: string): Promise<OwnedSubscription | undefined> {
      const [row] = await db.query<TenantRow & {
        client_id: string
        slug: string
        name: string
        scopes: string[]
        owner_sub: string | null
      }>(
        `select ${prefixed('s')}, s.org_ref_id, s.entity_ref_id, i.client_id, a.slug, a.name, i.scopes, a.owner_sub
           from webhook_subscriptions s
           join installs i on i.install_id = s.install_id
           join apps a on a.client_id = i.client_id
          where s.id = $1`,
        [id]
      )
      return row && {
        subscription: toTenantSubscription(row),
        install: {
          installId: row.install_id,
          clientId: row.client_id,
          appSlug: row.slug,
          appName: row.name,
          scopes: row.scopes
        },
        ownerSub: row.owner_sub
      }
    },

    /**
     * The subscriptions of every install of an app, active or not, failing ones first, then disabled, then
     * healthy, each group oldest first; `after`: the page after this position, its subscription compared at its
     * stored creation time (kept to the microsecond; the position's only to the millisecond). The app's installs
     * are read from their index and each one's subscriptions from theirs (`offset 0` keeps the lookups a nested
     * loop): the cost follows the app's subscriptions, never every subscription of every app.
     */
    async listForApp (clientId: string, limit: number, after?: AppListPosition): Promise<Array<{
      subscription: TenantSubscription
      position: AppListPosition
    }>> {
      const rows = await db.query<TenantRow & { rank: number }>(
        `select ${prefixed('s')}, s.org_ref_id, s.entity_ref_id, ${RANK} as rank
           from installs i
           cross join lateral (select * from webhook_subscriptions s where s.install_id = i.install_id offset 0) s
          where i.client_id = $1 and ($2::int is null or (${RANK}, s.created_at, s.id) >
                ($2, coalesce((select created_at from webhook_subscriptions where id = $4), $3::timestamptz), $4))
          order by rank, s.created_at, s.id
          limit $5`,
        [clientId, after?.[0] ?? null, after?.[1] ?? null, after?.[2] ?? null, limit]
      )
      return rows.map(r => ({
        subscription: toTenantSubscription(r),
        position: [r.rank, r.created_at.toISOString(), r.id] as const
      }))
    },

    disable
  }
}

export type SubscriptionStore = ReturnType<typeof createSubscriptionStore>
