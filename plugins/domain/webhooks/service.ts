import type { Static } from '@sinclair/typebox'
import type { CursorCodec, CursorScope } from '../../../lib/cursor.js'
import { randomToken } from '../../../lib/crypto.js'
import { TEST_TOPIC, topicKind } from '../../../lib/topics.js'
import type {
  AttemptLog,
  CreateSubscriptionBody,
  CreatedSubscription,
  DeleteResult,
  RetryAccepted,
  SubscriptionListing
} from '../../../schemas/webhooks.js'
import { principalOf, type Principal } from '../auth/access-state.js'
import type { Db } from '../../infrastructure/db/types.js'
import { errors } from '../../infrastructure/errors.js'
import { newEvent } from '../events/store.js'
import type {
  ActivityHour, AttemptFilter, AttemptLogEntry, AttemptLogStore, DeliveryDetail
} from './attempt-log-store.js'
import type { DeliveryQueueStore } from './delivery-queue-store.js'
import { encryptSecret, newSigningSecret } from './signing.js'
import type {
  AppListPosition, OwnedSubscription, Subscription, SubscriptionStore, TenantSubscription
} from './subscription-store.js'
import { checkTargetUrl } from './target-guard.js'

export const MAX_ACTIVE_PER_INSTALL = 50

const iso = (d: Date | null): string | null => d?.toISOString() ?? null

/** A listing item in its mixed casing (docs/rules.md#subscriptions); `DisabledReason` only with include_inactive. */
const listItemView = (
  s: Subscription,
  withReason: boolean
): Static<typeof SubscriptionListing>['subscriptions'][number] => ({
  _id: s.id,
  Topics: s.topics,
  TargetUrl: s.targetUrl,
  IsActive: s.isActive,
  LastDeliveryAt: iso(s.lastDeliveryAt),
  LastDeliveryStatus: s.lastDeliveryStatus,
  ConsecutiveFailures: s.consecutiveFailures,
  createdAt: s.createdAt.toISOString(),
  ...(withReason ? { DisabledReason: s.disabledReason } : {})
})

const attemptView = (a: AttemptLogEntry): Static<typeof AttemptLog>['attempts'][number] => ({
  id: a.id,
  delivery_id: a.deliveryId,
  event_id: a.eventId,
  topic: a.topic,
  attempt: a.attempt,
  attempted_at: a.attemptedAt.toISOString(),
  duration_ms: a.durationMs,
  response_status: a.responseStatus,
  response_body: a.responseBody,
  response_headers: a.responseHeaders,
  request_headers: a.requestHeaders,
  error: a.error,
  error_class: a.errorClass,
  delivery_status: a.deliveryStatus
})

/** Where a page of the attempts log ends: the last attempt's time and id. */
type AttemptPosition = [at: string, id: string]

const isAttemptPosition = (v: unknown): v is AttemptPosition =>
  Array.isArray(v) && v.length === 2 && typeof v[1] === 'string' && typeof v[0] === 'string' &&
  !Number.isNaN(new Date(v[0]).getTime())

const isAppListPosition = (v: unknown): v is AppListPosition =>
  Array.isArray(v) && v.length === 3 && Number.isInteger(v[0]) && typeof v[1] === 'string' &&
  !Number.isNaN(new Date(v[1]).getTime()) && typeof v[2] === 'string'

/** An app's subscriptions across its installs are the app's list: its developer's, whatever the tenant. */
const appScope = (clientId: string): CursorScope => ({ tenant: ['', ''], resource: `apps/${clientId}/webhooks` })

/** Attempts a filtered page of the log checks at most: the bound on what one page of a long log costs. */
const LOG_SCAN_LIMIT = 1000

/** A subscription's log is its own list: a cursor of one subscription does not read another's. */
const attemptsScope = (p: Principal, subscriptionId: string): CursorScope =>
  ({ tenant: [p.orgRefId, p.entityRefId], resource: `webhooks/${subscriptionId}/deliveries` })

interface ServiceOptions {
  /** The codec of every list's cursors (lib/cursor.ts). */
  cursors: CursorCodec
  secretKey: Buffer
  allowPrivateTargets: boolean
  /** At most this many deliveries are enqueued again by one replay; `truncated` says there were more. */
  replayLimit: number
  /** Outside production a refused local target says how to allow it. */
  development: boolean
}

const LOCAL_HINT = ' For local development, start the service with WEBHOOK_ALLOW_PRIVATE_TARGETS=true (and ' +
  'WEBHOOK_CA_FILE=<your receiver\'s certificate> when it is self-signed).'

/**
 * What the REST routes and the MCP tools both call. Every method that acts for an install takes its principal and
 * sees only that install's subscriptions: anyone else's answers as if it did not exist. Answers are the wire shapes.
 */
export function createWebhookService (
  { db, subscriptions, queue, log }: {
    db: Db
    subscriptions: SubscriptionStore
    queue: DeliveryQueueStore
    log: AttemptLogStore
  },
  opts: ServiceOptions
) {
  async function owned (p: Principal, subscriptionId: string): Promise<Subscription> {
    const s = await subscriptions.find(p.installId, subscriptionId)
    if (!s) throw errors.subscriptionNotFound()
    return s
  }

  /** An owned subscription that can still be sent to: an inactive one is a conflict. */
  async function active (p: Principal, subscriptionId: string): Promise<Subscription> {
    const s = await owned(p, subscriptionId)
    if (!s.isActive) throw errors.subscriptionInactive()
    return s
  }

  /**
   * A page of the subscription's attempts log, newest first, filtered. A page with an outcome or topic filter
   * checks a bounded number of attempts: when it ends early, `searchedTo` says how far back it looked and
   * `nextCursor` goes on from there.
   */
  async function attemptLog (
    p: Principal,
    subscriptionId: string,
    o: { limit: number, cursor?: string | undefined, filter?: AttemptFilter }
  ): Promise<{ entries: AttemptLogEntry[], nextCursor: string | null, searchedTo: Date | null }> {
    const scope = attemptsScope(p, subscriptionId)
    let after: { at: Date, id: string } | undefined
    if (o.cursor !== undefined) {
      const at = opts.cursors.decode(scope, o.cursor, isAttemptPosition)
      if (at === undefined) throw errors.invalidCursor()
      after = { at: new Date(at[0]), id: at[1] }
    }
    const s = await owned(p, subscriptionId)
    const page = await log.page(s.id, { limit: o.limit, scanLimit: LOG_SCAN_LIMIT, after, filter: o.filter ?? {} })
    return {
      entries: page.entries,
      nextCursor: page.next &&
        opts.cursors.encode(scope, [page.next.at.toISOString(), page.next.id] satisfies AttemptPosition),
      searchedTo: page.searchedTo
    }
  }

  return {
    async subscribe (
      p: Principal,
      input: Static<typeof CreateSubscriptionBody>
    ): Promise<Static<typeof CreatedSubscription>> {
      const unknown = input.topics.filter(t => topicKind(t) === 'unknown')
      if (unknown.length > 0) throw errors.unknownTopic(unknown)
      const problem = await checkTargetUrl(input.target_url, opts.allowPrivateTargets)
      if (problem) {
        const local = opts.development && /localhost|loopback|private|reserved/.test(problem)
        throw errors.invalidTargetUrl(local ? problem + LOCAL_HINT : problem)
      }

      const id = randomToken('whs_', 12)
      const secret = newSigningSecret()
      const s = await subscriptions.insert(
        {
          id,
          installId: p.installId,
          orgRefId: p.orgRefId,
          entityRefId: p.entityRefId,
          topics: input.topics,
          targetUrl: input.target_url,
          secretCiphertext: encryptSecret(opts.secretKey, id, secret)
        },
        MAX_ACTIVE_PER_INSTALL
      )
      if (!s) throw errors.limitExceeded(`An install may have at most ${MAX_ACTIVE_PER_INSTALL} active subscriptions.`)
      return {
        id: s.id,
        topics: s.topics,
        target_url: s.targetUrl,
        signing_secret: secret,
        created_at: s.createdAt.toISOString()
      }
    },

    async list (p: Principal, includeInactive: boolean): Promise<Static<typeof SubscriptionListing>> {
      const subs = await subscriptions.list(p.installId, includeInactive)
      return { subscriptions: subs.map(s => listItemView(s, includeInactive)) }
    },

    /**
     * Soft delete, with what the subscription still had pending cancelled in the same transaction; `modified` is 0
     * when there was nothing (active and yours) to delete.
     */
    async remove (p: Principal, subscriptionId: string): Promise<Static<typeof DeleteResult>> {
      const removed = await db.tx(async q => {
        if (!(await subscriptions.remove(q, p.installId, subscriptionId))) return false
        await queue.cancelPending(q, [subscriptionId])
        return true
      })
      return { ok: true, modified: removed ? 1 : 0 }
    },

    attemptLog,

    /** The subscription's attempts, newest first, a page at a time: the wire shape of the log. */
    async attempts (
      p: Principal, subscriptionId: string, limit = 50, cursor?: string
    ): Promise<Static<typeof AttemptLog>> {
      const page = await attemptLog(p, subscriptionId, { limit, cursor })
      return { attempts: page.entries.map(attemptView), next_cursor: page.nextCursor }
    },

    /** One delivery of the subscription, with its event's body and every attempt, newest first. */
    async delivery (
      p: Principal, subscriptionId: string, deliveryId: string
    ): Promise<{ delivery: DeliveryDetail, attempts: AttemptLogEntry[] }> {
      const s = await owned(p, subscriptionId)
      const delivery = await log.delivery(s.id, deliveryId)
      if (!delivery) throw errors.deliveryNotFound()
      return { delivery, attempts: await log.attemptsOf(delivery.id) }
    },

    /**
     * A subscription of one of the developer's apps, with the principal of its install (what the install's own
     * token would act as); an unknown id and anyone else's subscription are the same not found.
     */
    async ownedByDeveloper (ownerSub: string, subscriptionId: string): Promise<{
      principal: Principal
      subscription: TenantSubscription
      install: OwnedSubscription['install']
    }> {
      const found = await subscriptions.findOwned(subscriptionId)
      if (!found || found.ownerSub === null || found.ownerSub !== ownerSub) throw errors.subscriptionNotFound()
      const { subscription, install } = found
      const { orgRefId, entityRefId } = subscription
      const principal = principalOf({ ...install, orgRefId, entityRefId })
      return { principal, subscription, install }
    },

    /** The subscriptions of every install of an app (its owner checked by the caller), failing ones first. */
    async appSubscriptions (
      clientId: string, o: { limit: number, cursor?: string | undefined }
    ): Promise<{ subscriptions: TenantSubscription[], nextCursor: string | null }> {
      let after: AppListPosition | undefined
      if (o.cursor !== undefined) {
        after = opts.cursors.decode(appScope(clientId), o.cursor, isAppListPosition)
        if (after === undefined) throw errors.invalidCursor()
      }
      const rows = await subscriptions.listForApp(clientId, o.limit + 1, after)
      const shown = rows.slice(0, o.limit)
      return {
        subscriptions: shown.map(r => r.subscription),
        nextCursor: rows.length > o.limit ? opts.cursors.encode(appScope(clientId), shown.at(-1)!.position) : null
      }
    },

    /** The apps' webhook activity per hour from `since`, oldest first (hours without any are absent). */
    activity (clientIds: string[], since: Date): Promise<Array<ActivityHour & { clientId: string }>> {
      return log.activity(clientIds, since)
    },

    /**
     * A new signing secret, returned once. For `overlapHours` the replaced secret still signs next to it, so that
     * receivers can switch at their pace (docs/rules.md#signatures).
     */
    async rotateSecret (p: Principal, subscriptionId: string, overlapHours: number) {
      const s = await owned(p, subscriptionId)
      const secret = newSigningSecret()
      const overlapS = Math.round(overlapHours * 3600)
      const rotated = await subscriptions.rotateSecret(s.id, encryptSecret(opts.secretKey, s.id, secret), overlapS)
      if (!rotated) throw errors.subscriptionInactive()
      return {
        id: s.id,
        signing_secret: secret,
        previous_secret_expires_at: iso(rotated.previousExpiresAt)
      }
    },

    /** A signed `webhook.test` event to this subscription only, through the queue; its delivery shows in the log. */
    async sendTest (p: Principal, subscriptionId: string) {
      const s = await active(p, subscriptionId)
      const event = newEvent({
        topic: TEST_TOPIC,
        orgRefId: p.orgRefId,
        entityRefId: p.entityRefId,
        data: { subscription_id: s.id, message: 'A test delivery, sent on request.' }
      })
      const sent = await queue.enqueueTest(event, s.id)
      return { event_id: sent.eventId, delivery_id: sent.deliveryId, status: 'pending' as const }
    },

    /**
     * Sends again, as new deliveries, what this subscription was sent between `since` and `until` whose delivery
     * ended as `status` says (`failed`, or `all` that ended). Idempotent per `Idempotency-Key`.
     */
    async replay (
      p: Principal,
      subscriptionId: string,
      r: { since: string, until?: string | undefined, status?: 'failed' | 'all' | undefined },
      key: string | undefined
    ) {
      const s = await active(p, subscriptionId)
      const since = new Date(r.since)
      const until = r.until === undefined ? new Date() : new Date(r.until)
      if (!(since < until)) {
        throw errors.validation([{ location: 'body', path: '/since', message: 'must be before until' }])
      }
      const status = r.status ?? 'failed'
      const replayed = await queue.replay(s.id, {
        since,
        until,
        statuses: status === 'failed' ? ['failed'] : ['succeeded', 'failed', 'cancelled'],
        limit: opts.replayLimit,
        key,
        // The request as sent: a repeat without `until` is the same request, though "now" has moved on.
        fingerprint: JSON.stringify([since.toISOString(), r.until === undefined ? null : until.toISOString(), status])
      })
      if (replayed === 'conflict') throw errors.idempotencyConflict()
      const { replayed: count, truncated, until: end } = replayed
      return { replayed: count, truncated, since: since.toISOString(), until: end.toISOString(), status }
    },

    /** Makes one of the subscription's deliveries due now, whatever its state. */
    async retry (p: Principal, subscriptionId: string, deliveryId: string): Promise<Static<typeof RetryAccepted>> {
      const s = await active(p, subscriptionId)
      if (!(await queue.retryNow(s.id, deliveryId))) throw errors.deliveryNotFound()
      return { delivery_id: deliveryId, status: 'pending' }
    }
  }
}

export type WebhookService = ReturnType<typeof createWebhookService>
