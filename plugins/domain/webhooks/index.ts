import fp from 'fastify-plugin'
import { cursorCodec } from '../../../lib/cursor.js'
import { createAttemptLogStore } from './attempt-log-store.js'
import { createDeliveryQueueStore, type DeliveryQueueStore } from './delivery-queue-store.js'
import { createWebhookService, type WebhookService } from './service.js'
import { registerQueueGauges } from './queue-metrics.js'
import { createSubscriptionStore } from './subscription-store.js'
import { addWebhookTools } from './tools.js'
import { DeliveryWorker, type WorkerStatus } from './worker.js'

declare module 'fastify' {
  interface FastifyInstance {
    webhooks: WebhookService & {
      /** The delivery worker of this process; null when it runs none (WEBHOOK_WORKER=false). */
      workerStatus(): WorkerStatus | null
      /** What accepting events does for the deliveries, in the events' transaction (plugins/domain/events). */
      fanOut: DeliveryQueueStore['fanOut']
    }
  }
}

/**
 * Webhooks: subscriptions, the durable queue and its delivery worker. The stores and the worker are reached by
 * closure only; the rest of the service sees `app.webhooks` (and the events' publish its fan-out).
 */
export default fp(async (app) => {
  const subscriptions = createSubscriptionStore(app.db)
  const queue = createDeliveryQueueStore(app.db)
  const service = createWebhookService({
    db: app.db, subscriptions, queue, log: createAttemptLogStore(app.db)
  }, {
    cursors: cursorCodec(app.config.tokenSigningKey),
    secretKey: app.config.webhookSecretKey,
    allowPrivateTargets: app.config.webhookAllowPrivateTargets,
    replayLimit: app.config.webhookReplayLimit,
    development: app.config.nodeEnv !== 'production'
  })
  const metrics = app.hasDecorator('metrics') ? app.metrics : undefined
  const worker = app.config.webhookWorker
    ? new DeliveryWorker({ queue, subscriptions }, app.db, app.config, app.log, {
      observe: metrics?.deliveryAttempt, clock: app.clock
    })
    : null
  if (metrics) {
    registerQueueGauges(metrics, queue, {
      perSubscription: app.config.webhookSubscriptionMaxInFlight,
      perTenant: app.config.webhookTenantMaxInFlight
    })
  }
  app.decorate('webhooks', { ...service, workerStatus: () => worker?.snapshot() ?? null, fanOut: queue.fanOut })
  if (worker) {
    app.addHook('onReady', async () => { await worker.start() })
    // After the listener has stopped and requests in flight have finished (plugins/infrastructure/lifecycle.ts),
    // before the database.
    app.addHook('onClose', async () => { await worker.stop() })
  }
}, { name: 'webhooks', dependencies: ['db', 'config'] })

/**
 * The webhook tools and resources of the MCP endpoint: a plugin apart, so that the separate worker process (which
 * has no MCP endpoint) builds without them, and the API's fails to start when the MCP registry is missing.
 */
export const webhookTools = fp(async (app) => {
  addWebhookTools(app.mcp, app.webhooks)
}, { name: 'webhook-tools', dependencies: ['mcp', 'webhooks'] })
