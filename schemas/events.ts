import { Type } from '@sinclair/typebox'

/** POST /events (docs/rules.md#event-ingestion). */
export const EventBody = Type.Object(
  {
    id: Type.Optional(Type.String({ minLength: 1, maxLength: 200, description: "The producer's idempotency key." })),
    topic: Type.String({ minLength: 1, maxLength: 100 }),
    org_ref_id: Type.String({ minLength: 1, maxLength: 200 }),
    entity_ref_id: Type.String({ minLength: 1, maxLength: 200 }),
    data: Type.Record(Type.String(), Type.Unknown())
  },
  { additionalProperties: false }
)

export const EventAccepted = Type.Object(
  { id: Type.String(), deliveries: Type.Integer() },
  { additionalProperties: false }
)
