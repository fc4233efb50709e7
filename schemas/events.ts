import { Type, type Static } from '@sinclair/typebox'
import { SAMPLE } from './examples.js'
import { RECORD_SAMPLES } from './records.js'

/** POST /events (docs/rules.md#event-ingestion). */
export const EventBody = Type.Object(
  {
    id: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: "The producer's idempotency key." })),
    topic: Type.String({ minLength: 1, maxLength: 100 }),
    org_ref_id: Type.String({ minLength: 1, maxLength: 200 }),
    entity_ref_id: Type.String({ minLength: 1, maxLength: 200 }),
    data: Type.Record(Type.String(), Type.Unknown(), {
      description: 'For a record topic, the whole record as it is now (docs/producers.md), checked against its schema.'
    })
  },
  {
    title: 'NewEvent',
    additionalProperties: false,
    examples: [{
      id: 'acct-7d2f9a',
      topic: 'invoice.paid',
      org_ref_id: SAMPLE.orgId,
      entity_ref_id: SAMPLE.entityId,
      data: RECORD_SAMPLES.invoice
    }]
  }
)

export const EventAccepted = Type.Object(
  {
    id: Type.String({ description: 'The event id the service gave it (evt_…); for an event sent again, the first.' }),
    deliveries: Type.Integer({ description: 'Deliveries enqueued: one per active subscription of the tenant.' })
  },
  {
    title: 'EventAccepted',
    description: 'Accepted and fanned out (or accepted before, with the same content).',
    additionalProperties: false,
    examples: [{ id: SAMPLE.eventId, deliveries: 2 }]
  }
)

/** The most events one `POST /events` takes (docs/rules.md#event-ingestion). */
export const MAX_EVENT_BATCH = 100

export const EventBatch = Type.Array(EventBody, {
  title: 'NewEventBatch',
  description: `Up to ${MAX_EVENT_BATCH} events, stored in one transaction: all of them, or none.`,
  minItems: 1,
  maxItems: MAX_EVENT_BATCH,
  examples: [[
    EventBody.examples[0],
    {
      id: 'acct-7d2fa0',
      topic: 'bill.created',
      org_ref_id: SAMPLE.orgId,
      entity_ref_id: SAMPLE.entityId,
      data: RECORD_SAMPLES.bill
    }
  ]]
})

export const EventBatchAccepted = Type.Array(EventAccepted, {
  title: 'EventBatchAccepted',
  description: 'One result per event, in the order sent.',
  examples: [[{ id: SAMPLE.eventId, deliveries: 2 }, { id: 'evt_9bQ2rT6yW1xZ4cV8nM3kLp', deliveries: 1 }]]
})

/**
 * One event, or a batch. An array is validated as a batch and anything else as one event, so that an error names
 * only what is wrong with the shape sent (a union would also report every way the other shape failed).
 */
export const EventOrBatch = Type.Unsafe<Static<typeof EventBody> | Static<typeof EventBatch>>({
  if: { type: 'array' },
  then: EventBatch,
  else: EventBody,
  examples: [...EventBody.examples, ...EventBatch.examples]
})

/** What `POST /events` answers: one result, or one per event of a batch. */
export const EventOrBatchAccepted = Type.Union([EventAccepted, EventBatchAccepted], {
  description: 'Accepted and fanned out (or accepted before, with the same content): one result, or for a batch ' +
    'one per event in the order sent.',
  examples: [...EventAccepted.examples, ...EventBatchAccepted.examples]
})
