import fp from 'fastify-plugin'
import { randomToken } from '../../lib/crypto.js'
import { topicKind } from '../../lib/topics.js'
import { notify } from '../db/index.js'
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
      return db.tx(async q => {
        const inserted = await q.query<{ id: string }>(
          `insert into webhook_events (id, producer_id, topic, org_ref_id, entity_ref_id, body, delivery_count, created_at)
           values ($1, $2, $3, $4, $5, $6, 0, $7)
           on conflict (producer_id) do nothing returning id`,
          [id, e.id ?? null, e.topic, e.org_ref_id, e.entity_ref_id, body, createdAt])
        if (inserted.length === 0) {
          const [first] = await q.query<{ id: string, delivery_count: number }>(
            'select id, delivery_count from webhook_events where producer_id = $1', [e.id])
          return { id: first!.id, deliveries: first!.delivery_count }
        }
        const fanout = await q.query(
          `insert into webhook_deliveries (id, event_id, subscription_id)
           select 'dlv_' || replace(gen_random_uuid()::text, '-', ''), $1, s.id
             from webhook_subscriptions s join installs i on i.install_id = s.install_id
            where s.is_active and i.status = 'active' and s.org_ref_id = $2 and s.entity_ref_id = $3 and $4 = any(s.topics)
           returning id`, [id, e.org_ref_id, e.entity_ref_id, e.topic])
        await q.query('update webhook_events set delivery_count = $2 where id = $1', [id, fanout.length])
        if (fanout.length > 0) await notify(q, WAKEUP_CHANNEL, id)
        return { id, deliveries: fanout.length }
      })
    }
  })
}, { name: 'webhook-events', dependencies: ['db'] })
