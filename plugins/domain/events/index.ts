import fp from 'fastify-plugin'
import { createEventService, type EventService } from './service.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** Event ingestion from the accounting system (POST /events). */
    events: EventService
  }
}

/**
 * Events (docs/rules.md#event-ingestion): each accepted event is stored with the record it carries and its
 * deliveries, in one transaction opened here. The records' ingest and the webhooks' fan-out are what it writes
 * through, so both plugins are dependencies: registered without them, or before them, the app fails to start.
 */
export default fp(async (app) => {
  app.decorate('events', createEventService({
    db: app.db,
    records: app.records.ingest,
    fanOut: app.webhooks.fanOut
  }))
}, { name: 'events', dependencies: ['db', 'records', 'webhooks'] })
