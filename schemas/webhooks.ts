import { Type, type TSchema } from '@sinclair/typebox'
import { EMITTED_TOPICS, PLANNED_TOPICS, TEST_TOPIC, TOPIC_DESCRIPTIONS } from '../lib/topics.js'
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
      description: 'Shown only in this response: whsec_ and 32 bytes in base64. X-Service-Signature is keyed with ' +
        'this whole string (UTF-8); webhook-signature with the bytes its base64 part decodes to (Standard Webhooks).'
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
      response_headers: Type.Union([Type.Record(Type.String(), Type.String()), Type.Null()], {
        description: 'The answer\'s headers; null without an answer (and on attempts made before they were kept).'
      }),
      request_headers: Type.Union([Type.Record(Type.String(), Type.String()), Type.Null()], {
        description: 'Every header sent, signatures included; never the secret.'
      }),
      error: Type.Union([Type.String(), Type.Null()]),
      error_class: Type.Union([Type.String(), Type.Null()], {
        description: 'null on a 2xx; else http_status, redirect, timeout, connect_timeout, connection_refused, ' +
          'connection_reset, dns, tls, blocked, network or internal.'
      }),
      delivery_status: Type.Union(['pending', 'succeeded', 'failed', 'cancelled'].map(s => Type.Literal(s)))
    })
  ),
  next_cursor: Type.Union([Type.String(), Type.Null()], {
    description: 'Pass as cursor for the next (older) page; null on the last page.'
  })
})
export const AttemptLogQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, default: 50 })),
  cursor: Type.Optional(Type.String({ maxLength: 200, description: 'next_cursor of the previous page.' }))
})

export const RetryAccepted = Type.Object(
  { delivery_id: Type.String(), status: Type.Literal('pending') },
  { additionalProperties: false }
)

/** The body every delivery POSTs (docs/rules.md#delivery). */
export const DeliveryPayload = Type.Object({
  id: Type.String({ description: 'Event id, stable across retries (also X-Service-Event-Id).' }),
  topic: Type.String(),
  created_at: Timestamp,
  org_ref_id: Type.String(),
  entity_ref_id: Type.String(),
  data: Type.Record(Type.String(), Type.Unknown())
})

const TOPIC_DATA: Record<string, TSchema> = {
  [TEST_TOPIC]: Type.Object({
    subscription_id: Type.String({ description: 'The subscription the test was sent to.' }),
    message: Type.String()
  }, { additionalProperties: false })
}

/**
 * The payload of one topic: the envelope with its topic fixed, and its `data`. The accounting system defines the
 * `data` of business events (the spec shows none), so theirs is any object.
 */
export function payloadSchema (topic: string) {
  return Type.Object({
    ...DeliveryPayload.properties,
    topic: Type.Literal(topic),
    data: TOPIC_DATA[topic] ?? Type.Record(Type.String(), Type.Unknown(), {
      description: 'As the accounting system published it.'
    })
  }, { additionalProperties: false, title: `${topic} payload` })
}

export const EventTypes = Type.Object({
  event_types: Type.Array(Type.Object({
    name: Type.String(),
    status: Type.Union([Type.Literal('emitted'), Type.Literal('planned')]),
    description: Type.String(),
    payload_schema: Type.Unknown({ description: 'JSON Schema of the delivery body of this topic.' })
  }, { additionalProperties: false }))
})

export const RotateQuery = Type.Object({
  overlap_hours: Type.Optional(Type.Number({
    minimum: 0,
    maximum: 168,
    default: 24,
    description: 'How long the replaced secret keeps signing next to the new one, in hours (0: not at all; ' +
      'fractions allowed).'
  }))
})

export const RotatedSecret = Type.Object({
  id: Type.String(),
  signing_secret: Type.String({ description: 'The new secret, shown only in this response.' }),
  previous_secret_expires_at: Type.Union([Timestamp, Type.Null()], {
    description: 'Until when the replaced secret also signs; null without an overlap.'
  })
}, { additionalProperties: false })

export const TestSent = Type.Object({
  event_id: Type.String(),
  delivery_id: Type.String({ description: 'Find its attempts in the delivery log.' }),
  status: Type.Literal('pending')
}, { additionalProperties: false })

export const ReplayBody = Type.Object({
  since: Type.String({ format: 'date-time', description: 'Events from this instant (inclusive).' }),
  until: Type.Optional(Type.String({
    format: 'date-time', description: 'Up to this instant (exclusive); default now.'
  })),
  status: Type.Optional(Type.Union([Type.Literal('failed'), Type.Literal('all')], {
    description: 'failed (default): events whose delivery failed for good; all: every event whose delivery ended.'
  }))
}, { additionalProperties: false })

export const ReplayAccepted = Type.Object({
  replayed: Type.Integer({ description: 'Deliveries enqueued again.' }),
  truncated: Type.Boolean({ description: 'More matched than one replay takes (10,000): replay the rest after.' }),
  since: Timestamp,
  until: Timestamp,
  status: Type.Union([Type.Literal('failed'), Type.Literal('all')])
}, { additionalProperties: false })

export const IdempotencyHeaders = Type.Object({
  'idempotency-key': Type.Optional(Type.String({
    minLength: 1,
    maxLength: 255,
    description: 'A repeat with the same key gets the first answer instead of a second replay.'
  }))
})

/**
 * The event catalog (`GET /public/v1/event-types`, the `list_event_types` tool): every topic with the schema of its
 * delivery body, the same schemas as the OpenAPI document's `webhooks` section.
 */
export function eventCatalog () {
  return {
    event_types: [
      ...[...EMITTED_TOPICS, TEST_TOPIC].map(name => ({ name, status: 'emitted' as const })),
      ...PLANNED_TOPICS.map(name => ({ name, status: 'planned' as const }))
    ].map(t => ({ ...t, description: TOPIC_DESCRIPTIONS[t.name]!, payload_schema: payloadSchema(t.name) }))
  }
}
