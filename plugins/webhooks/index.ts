import fp from 'fastify-plugin'
import events from './events.js'
import queue from './queue.js'
import subscriptions from './subscriptions.js'
import worker from './worker.js'

/** Webhooks: subscriptions, event ingestion, the durable queue and its delivery worker. */
export default fp(async (app) => {
  await app.register(queue)
  await app.register(subscriptions)
  await app.register(events)
  await app.register(worker)
}, { name: 'webhooks', dependencies: ['db', 'config'] })
