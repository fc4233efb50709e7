import fp from 'fastify-plugin'
import { randomToken } from '../../lib/crypto.js'
import { topicKind } from '../../lib/topics.js'
import type { Principal } from '../auth/public-auth.js'
import type { Queryable } from '../db/index.js'
import { errors } from '../errors.js'
import { encryptSecret, newSigningSecret } from './signing.js'
import { checkTargetUrl } from './target-guard.js'

export const MAX_ACTIVE_PER_INSTALL = 50
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

interface Row {
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

const COLUMNS = `id, install_id, topics, target_url, is_active, disabled_reason, created_at, last_delivery_at,
                 last_delivery_status, consecutive_failures`

const toSubscription = (r: Row): Subscription => ({
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

declare module 'fastify' {
  interface FastifyInstance {
    webhookSubscriptions: {
      create(p: Principal, input: { topics: string[], targetUrl: string }): Promise<Subscription & { signingSecret: string }>
      list(p: Principal, includeInactive: boolean): Promise<Subscription[]>
      /** The caller's own subscription, active or not; undefined for anyone else's. */
      findOwned(p: Principal, id: string): Promise<Subscription | undefined>
      /** Soft delete; 1 when it changed something, 0 otherwise. */
      remove(p: Principal, id: string): Promise<number>
      /** Applies a batch of attempt results; returns the subscriptions that crossed an auto-disable threshold. */
      applyCounters(q: Queryable, updates: CounterUpdate[]): Promise<Array<{ id: string, reason: DisabledReason }>>
      disable(q: Queryable, ids: string[], reason: DisabledReason): Promise<void>
    }
  }
}

/** Webhook subscriptions (contract 5.2): owned by the install that created them, signing secrets encrypted. */
export default fp(async (app) => {
  const { db } = app
  const { webhookSecretKey, webhookAllowPrivateTargets, webhookDisableAfterFailures, webhookDisableAfterHours } = app.config

  async function disable (q: Queryable, ids: string[], reason: DisabledReason): Promise<void> {
    if (ids.length === 0) return
    await q.query(
      `update webhook_subscriptions set is_active = false, disabled_reason = $2, disabled_at = now()
        where id = any($1) and is_active`, [ids, reason])
    await app.webhookQueue.cancelPending(q, ids)
  }

  app.decorate('webhookSubscriptions', {
    async create (p: Principal, input: { topics: string[], targetUrl: string }) {
      const unknown = input.topics.filter(t => topicKind(t) === 'unknown')
      if (unknown.length > 0) throw errors.unknownTopic(unknown)
      const problem = await checkTargetUrl(input.targetUrl, webhookAllowPrivateTargets)
      if (problem) throw errors.invalidTargetUrl(problem)

      const id = randomToken('whs_', 12)
      const secret = newSigningSecret()
      const row = await db.tx(async q => {
        // Serialises creations per install, so that the limit holds under concurrent requests.
        await q.query('select install_id from installs where install_id = $1 for update', [p.installId])
        const [{ n }] = await q.query<{ n: number }>(
          'select count(*)::int as n from webhook_subscriptions where install_id = $1 and is_active', [p.installId]) as [{ n: number }]
        if (n >= MAX_ACTIVE_PER_INSTALL) return undefined
        const [created] = await q.query<Row>(
          `insert into webhook_subscriptions (id, install_id, org_ref_id, entity_ref_id, topics, target_url, secret_ciphertext)
           values ($1, $2, $3, $4, $5, $6, $7) returning ${COLUMNS}`,
          [id, p.installId, p.orgRefId, p.entityRefId, input.topics, input.targetUrl, encryptSecret(webhookSecretKey, id, secret)])
        return created
      })
      if (!row) throw errors.limitExceeded(`An install may have at most ${MAX_ACTIVE_PER_INSTALL} active subscriptions.`)
      return { ...toSubscription(row), signingSecret: secret }
    },

    async list (p: Principal, includeInactive: boolean) {
      const rows = await db.query<Row>(
        `select ${COLUMNS} from webhook_subscriptions
          where install_id = $1 and (is_active or $2) order by created_at, id`, [p.installId, includeInactive])
      return rows.map(toSubscription)
    },

    async findOwned (p: Principal, id: string) {
      const [row] = await db.query<Row>(`select ${COLUMNS} from webhook_subscriptions where id = $1 and install_id = $2`, [id, p.installId])
      return row && toSubscription(row)
    },

    async remove (p: Principal, id: string) {
      return db.tx(async q => {
        const [row] = await q.query<{ id: string }>(
          'select id from webhook_subscriptions where id = $1 and install_id = $2 and is_active for update', [id, p.installId])
        if (!row) return 0
        await disable(q, [id], 'deleted')
        return 1
      })
    },

    async applyCounters (q: Queryable, updates: CounterUpdate[]) {
      if (updates.length === 0) return []
      const rows = await q.query<{ id: string, consecutive_failures: number, failing_since: Date | null, is_active: boolean }>(
        `update webhook_subscriptions s set
           last_delivery_at = r.last_at,
           last_delivery_status = r.last_status,
           consecutive_failures = case when r.reset then r.failures else s.consecutive_failures + r.failures end,
           failing_since = case when r.reset then r.streak_start else coalesce(s.failing_since, r.streak_start) end
         from unnest($1::text[], $2::timestamptz[], $3::int[], $4::bool[], $5::int[], $6::timestamptz[])
           as r(id, last_at, last_status, reset, failures, streak_start)
         where s.id = r.id
         returning s.id, s.consecutive_failures, s.failing_since, s.is_active`,
        [updates.map(u => u.subscriptionId), updates.map(u => u.lastAt), updates.map(u => u.lastStatus),
          updates.map(u => u.reset), updates.map(u => u.failures), updates.map(u => u.streakStart)])
      const gone = new Set(updates.filter(u => u.gone).map(u => u.subscriptionId))
      const cutoff = Date.now() - webhookDisableAfterHours * 3600_000
      return rows.filter(r => r.is_active).flatMap((r): Array<{ id: string, reason: DisabledReason }> => {
        if (gone.has(r.id)) return [{ id: r.id, reason: 'gone' as const }]
        if (r.consecutive_failures >= webhookDisableAfterFailures && r.failing_since && r.failing_since.getTime() <= cutoff) {
          return [{ id: r.id, reason: 'consecutive_failures' as const }]
        }
        return []
      })
    },

    disable
  })
}, { name: 'webhook-subscriptions', dependencies: ['db', 'webhook-queue'] })
