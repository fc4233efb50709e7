import { Type, type TSchema } from '@sinclair/typebox'
import { EMITTED_TOPICS, PLANNED_TOPICS, RECORD_TOPICS, TEST_TOPIC, TOPIC_DESCRIPTIONS } from '../lib/topics.js'
import { SAMPLE } from './examples.js'
import { RECORD_SAMPLES, RECORD_SCHEMAS } from './records.js'
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
  {
    title: 'NewSubscription',
    additionalProperties: false,
    examples: [{ topics: ['invoice.paid', 'bill.created'], target_url: SAMPLE.targetUrl }]
  }
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
  {
    additionalProperties: false,
    title: 'CreatedSubscription',
    description: 'The subscription, with its signing secret (shown only here).',
    examples: [{
      id: SAMPLE.subscriptionId,
      topics: ['invoice.paid', 'bill.created'],
      target_url: SAMPLE.targetUrl,
      signing_secret: SAMPLE.signingSecret,
      created_at: SAMPLE.at
    }]
  }
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
  { additionalProperties: false, title: 'Subscription' }
)

export const SubscriptionListing = Type.Object({ subscriptions: Type.Array(SubscriptionListItem) }, {
  title: 'SubscriptionListing',
  description: 'Your subscriptions.',
  examples: [{
    subscriptions: [{
      _id: SAMPLE.subscriptionId,
      Topics: ['invoice.paid', 'bill.created'],
      TargetUrl: SAMPLE.targetUrl,
      IsActive: true,
      LastDeliveryAt: '2026-11-24T09:31:02.118Z',
      LastDeliveryStatus: 200,
      ConsecutiveFailures: 0,
      createdAt: SAMPLE.at
    }]
  }]
})

export const ListQuery = Type.Object({
  include_inactive: Type.Optional(
    Type.Boolean({ description: 'Also list deactivated subscriptions, with DisabledReason.', examples: [true] })
  )
})

export const SubscriptionParams = Type.Object({
  ...TenantParams.properties,
  // No example: none works but an id of the caller's own subscriptions.
  subscriptionId: Type.String({ description: 'The subscription\'s `_id`, from the listing or its creation.' })
})
export const DeliveryParams = Type.Object({
  ...SubscriptionParams.properties,
  deliveryId: Type.String({ description: 'A `delivery_id` of the subscription\'s attempts log.' })
})

export const DeleteResult = Type.Object(
  { ok: Type.Boolean(), modified: Type.Integer({ description: '1 when it was active, 0 when it already was not.' }) },
  {
    title: 'DeleteResult',
    description: 'Deleted (or already inactive).',
    additionalProperties: false,
    examples: [{ ok: true, modified: 1 }]
  }
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
    }, { title: 'DeliveryAttempt' })
  ),
  next_cursor: Type.Union([Type.String(), Type.Null()], {
    description: 'Pass as cursor for the next (older) page; null on the last page.'
  })
}, {
  title: 'DeliveryAttemptPage',
  description: 'A page of delivery attempts, newest first.',
  examples: [{
    attempts: [{
      id: SAMPLE.attemptId,
      delivery_id: SAMPLE.deliveryId,
      event_id: SAMPLE.eventId,
      topic: 'invoice.paid',
      attempt: 2,
      attempted_at: '2026-11-24T09:31:02.118Z',
      duration_ms: 84,
      response_status: 200,
      response_body: 'ok',
      response_headers: { 'content-type': 'text/plain' },
      request_headers: {
        'content-type': 'application/json',
        'x-service-topic': 'invoice.paid',
        'x-service-event-id': SAMPLE.eventId,
        'x-service-delivery-attempt': '2'
      },
      error: null,
      error_class: null,
      delivery_status: 'succeeded'
    }],
    next_cursor: null
  }]
})
export const AttemptLogQuery = Type.Object({
  limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, default: 50, examples: [20] })),
  cursor: Type.Optional(Type.String({
    maxLength: 200,
    description: 'next_cursor of the previous page; leave it out for the first page.'
  }))
})

export const RetryAccepted = Type.Object(
  { delivery_id: Type.String(), status: Type.Literal('pending') },
  {
    title: 'RetryAccepted',
    description: 'The delivery is due now.',
    additionalProperties: false,
    examples: [{ delivery_id: SAMPLE.deliveryId, status: 'pending' }]
  }
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

/** Each record topic carries the whole record of its kind (docs/records.md); the test topic its own small shape. */
const TOPIC_DATA: Record<string, TSchema> = {
  ...Object.fromEntries(Object.entries(RECORD_TOPICS).map(([topic, kind]) => [topic, RECORD_SCHEMAS[kind]])),
  [TEST_TOPIC]: Type.Object({
    subscription_id: Type.String({ description: 'The subscription the test was sent to.' }),
    message: Type.String()
  }, { additionalProperties: false })
}

/** What the `data` of each topic looks like in the examples. */
const SAMPLE_DATA: Record<string, unknown> = {
  ...Object.fromEntries(Object.entries(RECORD_TOPICS).map(([topic, kind]) => [topic, RECORD_SAMPLES[kind]])),
  [TEST_TOPIC]: { subscription_id: SAMPLE.subscriptionId, message: 'A test delivery, sent on request.' }
}

/** The payload of one topic: the envelope with its topic fixed, and its `data`. */
export function payloadSchema (topic: string) {
  return Type.Object({
    ...DeliveryPayload.properties,
    topic: Type.Literal(topic),
    data: TOPIC_DATA[topic] ?? Type.Record(Type.String(), Type.Unknown(), {
      description: 'As the accounting system published it.'
    })
  }, {
    additionalProperties: false,
    title: `${topic} payload`,
    examples: [{
      id: SAMPLE.eventId,
      topic,
      created_at: SAMPLE.at,
      org_ref_id: SAMPLE.orgId,
      entity_ref_id: SAMPLE.entityId,
      data: SAMPLE_DATA[topic] ?? {}
    }]
  })
}

export const EventTypes = Type.Object({
  event_types: Type.Array(Type.Object({
    name: Type.String(),
    status: Type.Union([Type.Literal('emitted'), Type.Literal('planned')]),
    description: Type.String(),
    payload_schema: Type.Unknown({ description: 'JSON Schema of the delivery body of this topic.' })
  }, { title: 'EventType', additionalProperties: false }))
}, {
  title: 'EventTypeCatalog',
  description: 'Every topic.',
  examples: [{
    event_types: [{
      name: 'invoice.paid',
      status: 'emitted',
      description: 'An invoice was paid in full.',
      payload_schema: { type: 'object', required: ['id', 'topic', 'created_at', 'org_ref_id', 'entity_ref_id', 'data'] }
    }]
  }]
})

export const RotateQuery = Type.Object({
  overlap_hours: Type.Optional(Type.Number({
    minimum: 0,
    maximum: 168,
    default: 24,
    examples: [48],
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
}, {
  title: 'RotatedSecret',
  description: 'The new signing secret (shown only here).',
  additionalProperties: false,
  examples: [{
    id: SAMPLE.subscriptionId,
    signing_secret: SAMPLE.signingSecret,
    previous_secret_expires_at: '2026-11-25T09:30:00.000Z'
  }]
})

export const TestSent = Type.Object({
  event_id: Type.String(),
  delivery_id: Type.String({ description: 'Find its attempts in the delivery log.' }),
  status: Type.Literal('pending')
}, {
  title: 'TestSent',
  description: 'The test delivery is queued.',
  additionalProperties: false,
  examples: [{ event_id: SAMPLE.eventId, delivery_id: SAMPLE.deliveryId, status: 'pending' }]
})

export const ReplayBody = Type.Object({
  since: Type.String({ format: 'date-time', description: 'Events from this instant (inclusive).' }),
  until: Type.Optional(Type.String({
    format: 'date-time', description: 'Up to this instant (exclusive); default now.'
  })),
  status: Type.Optional(Type.Union([Type.Literal('failed'), Type.Literal('all')], {
    description: 'failed (default): events whose delivery failed for good; all: every event whose delivery ended.'
  }))
}, {
  title: 'ReplayRequest',
  additionalProperties: false,
  examples: [{ since: '2026-11-23T00:00:00.000Z', until: '2026-11-24T00:00:00.000Z', status: 'failed' }]
})

export const ReplayAccepted = Type.Object({
  replayed: Type.Integer({ description: 'Deliveries enqueued again.' }),
  truncated: Type.Boolean({ description: 'More matched than one replay takes (10,000): replay the rest after.' }),
  since: Timestamp,
  until: Timestamp,
  status: Type.Union([Type.Literal('failed'), Type.Literal('all')])
}, {
  title: 'ReplayAccepted',
  description: 'The deliveries are queued again.',
  additionalProperties: false,
  examples: [{
    replayed: 17,
    truncated: false,
    since: '2026-11-23T00:00:00.000Z',
    until: '2026-11-24T00:00:00.000Z',
    status: 'failed'
  }]
})

export const IdempotencyHeaders = Type.Object({
  'idempotency-key': Type.Optional(Type.String({
    minLength: 1,
    maxLength: 255,
    description: 'A repeat with the same key gets the first answer instead of a second replay.',
    examples: ['replay-2026-11-23']
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
