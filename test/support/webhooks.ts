// Shared fixtures for webhook tests: a subscription, an event, the receiver settings, and waiting for the queue.
// A test says what it checks; how a subscription or an event is made is written once, here.
import type { AppInstance } from '../../app.js'
import { bearer, eventually, type Installed } from './helper.js'
import { invoice } from './records.js'

/** The install's tenant webhook collection: `/public/v1/orgs/{org}/entities/{entity}/webhooks`. */
export const hooksUrl = (i: Installed): string =>
  `/public/v1/orgs/${i.orgRefId}/entities/${i.entityRefId}/webhooks`

/** The settings that let the worker deliver to a test receiver on 127.0.0.1 with a self-signed certificate. */
export const receiverEnv = (caFile: string, extra: Record<string, string> = {}): Record<string, string> => ({
  WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
  WEBHOOK_CA_FILE: caFile,
  ...extra
})

export interface SubscribeBody {
  topics?: string[]
  target_url: string
  [field: string]: unknown
}

/** POST a subscription as the install (topics default to `invoice.paid`); the raw answer, whatever its status. */
export function subscribeRaw (app: AppInstance, i: Installed, body: SubscribeBody | unknown) {
  const payload = typeof body === 'object' && body !== null && !('topics' in body)
    ? { topics: ['invoice.paid'], ...body }
    : body
  return app.inject({ method: 'POST', url: hooksUrl(i), headers: bearer(i.accessToken), payload: payload as object })
}

export interface Subscription {
  id: string
  topics: string[]
  target_url: string
  signing_secret: string
  created_at: string
}

/** A subscription of the install to `target_url` (topics default to `invoice.paid`); throws unless it is created. */
export async function subscribe (app: AppInstance, i: Installed, body: SubscribeBody): Promise<Subscription> {
  const res = await subscribeRaw(app, i, body)
  if (res.statusCode !== 201) throw new Error(`subscribe: ${res.statusCode} ${res.body}`)
  return res.json()
}

/** POST /events as the accounting system; the raw answer. */
export function publishRaw (app: AppInstance, event: unknown) {
  return app.inject({
    method: 'POST',
    url: '/events',
    headers: bearer(app.config.eventsToken),
    payload: event as object
  })
}

/** Publishes an event of `topic` (default `invoice.paid`) in the install's tenant; throws unless it is accepted. */
export async function publish (
  app: AppInstance,
  i: Pick<Installed, 'orgRefId' | 'entityRefId'>,
  data: object = invoice(),
  topic = 'invoice.paid'
): Promise<{ id: string }> {
  const res = await publishRaw(app, { topic, org_ref_id: i.orgRefId, entity_ref_id: i.entityRefId, data })
  if (res.statusCode !== 202) throw new Error(`publish: ${res.statusCode} ${res.body}`)
  return res.json()
}

/**
 * Waits until nothing more can reach a receiver for this install: none of its deliveries is pending and the
 * worker has no attempt in flight. What has arrived by then is all that ever will.
 */
export async function settled (app: AppInstance, i: Installed): Promise<void> {
  await eventually(async () => {
    const [row] = await app.db.query<{ n: number }>(
      `select count(*)::int as n from webhook_deliveries d join webhook_subscriptions s on s.id = d.subscription_id
        where s.install_id = $1 and d.status = 'pending'`, [i.installId])
    return row!.n === 0 && app.webhooks.workerStatus()!.inFlight === 0
  }, { what: "the install's deliveries to settle" })
}
