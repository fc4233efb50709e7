import { Type } from '@sinclair/typebox'
import { TenantParams } from './identity.js'

const Timestamp = Type.String({ format: 'date-time', description: 'ISO 8601 UTC with milliseconds.' })

/** POST .../webhooks (docs/rules.md#subscriptions). */
export const CreateSubscriptionBody = Type.Object(
  {
    topics: Type.Array(Type.String({ minLength: 1, maxLength: 100 }), {
      minItems: 1,
      maxItems: 20,
      uniqueItems: true,
      description: '1 to 20 distinct topics from the registry (GET the topic list from the docs or MCP).'
    }),
    target_url: Type.String({
      minLength: 1,
      maxLength: 2048,
      description: 'Absolute https URL, no user info, not a private address.'
    })
  },
  { additionalProperties: false }
)

export const CreatedSubscription = Type.Object(
  {
    id: Type.String(),
    topics: Type.Array(Type.String()),
    target_url: Type.String(),
    signing_secret: Type.String({
      description: 'Shown only in this response. Key of X-Service-Signature (its UTF-8 bytes).'
    }),
    created_at: Timestamp
  },
  { additionalProperties: false, $id: 'CreatedSubscription' }
)

/** A listing item: its mixed casing (`_id`, `TargetUrl`, `createdAt`…), exactly (docs/rules.md#subscriptions). */
export const SubscriptionListItem = Type.Object(
  {
    _id: Type.String(),
    Topics: Type.Array(Type.String()),
    TargetUrl: Type.String(),
    IsActive: Type.Boolean(),
    LastDeliveryAt: Type.Union([Timestamp, Type.Null()], {
      description: 'Last delivery attempt; null before the first.'
    }),
    LastDeliveryStatus: Type.Union([Type.Integer(), Type.Null()], {
      description: 'HTTP status of the last attempt; 0 when there was no answer; null before the first.'
    }),
    ConsecutiveFailures: Type.Integer(),
    createdAt: Timestamp,
    DisabledReason: Type.Optional(
      Type.Union([Type.Literal('deleted'), Type.Literal('consecutive_failures'), Type.Literal('gone'), Type.Null()], {
        description: 'Only with include_inactive=true.'
      })
    )
  },
  { additionalProperties: false, $id: 'SubscriptionListItem' }
)

export const SubscriptionListing = Type.Object({ subscriptions: Type.Array(SubscriptionListItem) })

export const ListQuery = Type.Object({
  include_inactive: Type.Optional(
    Type.Boolean({ description: 'Also list deactivated subscriptions, with DisabledReason.' })
  )
})

export const SubscriptionParams = Type.Object({ ...TenantParams.properties, subscriptionId: Type.String() })
export const DeliveryParams = Type.Object({ ...SubscriptionParams.properties, deliveryId: Type.String() })

export const DeleteResult = Type.Object(
  { ok: Type.Boolean(), modified: Type.Integer() },
  { additionalProperties: false }
)

export const AttemptLog = Type.Object({
  attempts: Type.Array(
    Type.Object({
      id: Type.String(),
      delivery_id: Type.String(),
      event_id: Type.String(),
      topic: Type.String(),
      attempt: Type.Integer(),
      attempted_at: Timestamp,
      duration_ms: Type.Integer(),
      response_status: Type.Integer({ description: '0 when there was no HTTP answer.' }),
      response_body: Type.Union([Type.String({ description: 'Up to 4 KiB of the answer.' }), Type.Null()]),
      error: Type.Union([Type.String(), Type.Null()]),
      delivery_status: Type.Union(['pending', 'succeeded', 'failed', 'cancelled'].map(s => Type.Literal(s)))
    })
  )
})
export const AttemptLogQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, default: 50 }))
})

export const RetryAccepted = Type.Object(
  { delivery_id: Type.String(), status: Type.Literal('pending') },
  { additionalProperties: false }
)

/** The body every delivery POSTs (docs/rules.md#delivery), for the OpenAPI `webhooks` section. */
export const DeliveryPayload = Type.Object({
  id: Type.String({ description: 'Event id, stable across retries (also X-Service-Event-Id).' }),
  topic: Type.String(),
  created_at: Timestamp,
  org_ref_id: Type.String(),
  entity_ref_id: Type.String(),
  data: Type.Record(Type.String(), Type.Unknown())
})
