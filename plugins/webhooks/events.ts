import fp from 'fastify-plugin'
import { randomToken } from '../../lib/crypto.js'
import { topicKind } from '../../lib/topics.js'
import { errors } from '../errors.js'
import { WAKEUP_CHANNEL } from './queue.js'

export interface IncomingEvent {
  id?: string
  topic: string
  org_ref_id: string
  entity_ref_id: string
  data: Record<string, unknown>
}

declare module 'fastify' {
  interface FastifyInstance {
    webhookEvents: {
      /** Stores the event and its deliveries in one transaction, then wakes the workers. */
      publish(event: IncomingEvent): Promise<{ id: string, deliveries: number }>
    }
  }
}

/** Event ingestion (contract 5.3): idempotent on the producer's id, durable before it answers. */
export default fp(async (app) => {
  const { db } = app

  app.decorate('webhookEvents', {
    async publish (e: IncomingEvent) {
      const kind = topicKind(e.topic)
      if (kind === 'unknown') throw errors.unknownTopic([e.topic])
      if (kind === 'planned') throw errors.topicNotEmitted(e.topic)

      const id = randomToken('evt_', 16)
      const createdAt = new Date()
      // These bytes are what every attempt sends and signs, retries included.
      const body = JSON.stringify({
        id, topic: e.topic, created_at: createdAt.toISOString(), org_ref_id: e.org_ref_id, entity_ref_id: e.entity_ref_id, data: e.data
      })
      // One statement, so one round trip and its own transaction: the event, its fan-out and the wake-up
      // notification are stored together or not at all.
      const [row] = await db.query<{ inserted: boolean, deliveries: number }>(
        `with targets as (
           select s.id from webhook_subscriptions s join installs i on i.install_id = s.install_id
            where s.is_active and i.status = 'active' and s.org_ref_id = $4 and s.entity_ref_id = $5 and $3 = any(s.topics)
         ), event as (
           insert into webhook_events (id, producer_id, topic, org_ref_id, entity_ref_id, body, delivery_count, created_at)
           select $1, $2, $3, $4, $5, $6, count(*), $7 from targets
           on conflict (producer_id) do nothing
           returning id, delivery_count
         ), fanout as (
           insert into webhook_deliveries (id, event_id, subscription_id)
           select 'dlv_' || replace(gen_random_uuid()::text, '-', ''), event.id, targets.id from event, targets
           returning 1
         )
         select exists (select 1 from event) as inserted,
                (select count(*)::int from fanout) as deliveries,
                (select pg_notify($8, $1) from event where delivery_count > 0) is not null as notified`,
        [id, e.id ?? null, e.topic, e.org_ref_id, e.entity_ref_id, body, createdAt, WAKEUP_CHANNEL])
      if (row!.inserted) return { id, deliveries: row!.deliveries }
      // A producer id seen before: the first result, unchanged.
      const [first] = await db.query<{ id: string, delivery_count: number }>(
        'select id, delivery_count from webhook_events where producer_id = $1', [e.id])
      return { id: first!.id, deliveries: first!.delivery_count }
    }
  })
}, { name: 'webhook-events', dependencies: ['db'] })
