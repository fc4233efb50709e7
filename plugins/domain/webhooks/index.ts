import fp from 'fastify-plugin'
import { cursorCodec } from '../../../lib/cursor.js'
import { createWebhookService, type WebhookService } from './service.js'
import { registerQueueGauges } from './queue-metrics.js'
import { createWebhookStore } from './store.js'
import { addWebhookTools } from './tools.js'
import { DeliveryWorker, type WorkerStatus } from './worker.js'

declare module 'fastify' {
  interface FastifyInstance {
    webhooks: WebhookService & {
      /** The delivery worker of this process; null when it runs none (WEBHOOK_WORKER=false). */
      workerStatus(): WorkerStatus | null
    }
  }
}

/**
 * Webhooks: subscriptions, event ingestion, the durable queue and its delivery worker. The store and the worker
 * are reached by closure only; the rest of the service sees `app.webhooks` and the MCP tools it adds.
 */
export default fp(async (app) => {
  const store = createWebhookStore(app.db)
  const service = createWebhookService(store, {
    cursors: cursorCodec(app.config.tokenSigningKey),
    secretKey: app.config.webhookSecretKey,
    allowPrivateTargets: app.config.webhookAllowPrivateTargets,
    replayLimit: app.config.webhookReplayLimit,
    development: app.config.nodeEnv !== 'production',
    // The separate worker process (buildWorker) takes no events, so it has no read side.
    records: app.hasDecorator('records') ? app.records.ingest : undefined
  })
  const metrics = app.hasDecorator('metrics') ? app.metrics : undefined
  const worker = app.config.webhookWorker
    ? new DeliveryWorker(store, app.db, app.config, app.log, { observe: metrics?.deliveryAttempt, clock: app.clock })
    : null
  if (metrics) {
    registerQueueGauges(metrics, store, {
      perSubscription: app.config.webhookSubscriptionMaxInFlight,
      perTenant: app.config.webhookTenantMaxInFlight
    })
  }
  app.decorate('webhooks', { ...service, workerStatus: () => worker?.snapshot() ?? null })
  if (worker) {
    app.addHook('onReady', async () => { await worker.start() })
    // After the listener has stopped and requests in flight have finished (plugins/infrastructure/lifecycle.ts),
    // before the database.
    app.addHook('onClose', async () => { await worker.stop() })
  }
  // The separate worker process (buildWorker) has no MCP endpoint.
  if (app.hasDecorator('mcp')) addWebhookTools(app.mcp, app.webhooks)
}, { name: 'webhooks', dependencies: ['db', 'config'] })
