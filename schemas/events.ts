import { Type } from '@sinclair/typebox'
import { SAMPLE } from './examples.js'

/** POST /events (docs/rules.md#event-ingestion). */
export const EventBody = Type.Object(
  {
    id: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: "The producer's idempotency key." })),
    topic: Type.String({ minLength: 1, maxLength: 100 }),
    org_ref_id: Type.String({ minLength: 1, maxLength: 200 }),
    entity_ref_id: Type.String({ minLength: 1, maxLength: 200 }),
    data: Type.Record(Type.String(), Type.Unknown())
  },
  {
    title: 'NewEvent',
    additionalProperties: false,
    examples: [{
      id: 'acct-7d2f9a',
      topic: 'invoice.paid',
      org_ref_id: SAMPLE.orgId,
      entity_ref_id: SAMPLE.entityId,
      data: { invoice_id: 'inv_1042', amount: '125.00', currency: 'EUR' }
    }]
  }
)

export const EventAccepted = Type.Object(
  {
    id: Type.String({ description: 'The event id (yours, or generated).' }),
    deliveries: Type.Integer({ description: 'Deliveries enqueued: one per active subscription of the tenant.' })
  },
  {
    title: 'EventAccepted',
    description: 'Accepted and fanned out (or accepted before, with the same content).',
    additionalProperties: false,
    examples: [{ id: 'acct-7d2f9a', deliveries: 2 }]
  }
)
