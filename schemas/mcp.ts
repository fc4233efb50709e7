import { Type } from '@sinclair/typebox'
import { ListQuery } from './webhooks.js'

export const NoInput = Type.Object({}, { additionalProperties: false })

export const TopicList = Type.Object({
  topics: Type.Array(
    Type.Object({
      name: Type.String(),
      status: Type.Union([Type.Literal('emitted'), Type.Literal('planned')], {
        description: 'planned topics are accepted in subscriptions and never delivered yet'
      }),
      description: Type.String()
    })
  )
})

/** The REST listing's query, as tool arguments (no unknown members). */
export const ListSubscriptionsInput = Type.Object(ListQuery.properties, { additionalProperties: false })

export const SubscriptionIdInput = Type.Object(
  {
    subscription_id: Type.String({ minLength: 1, description: 'The subscription id (_id in the listing).' })
  },
  { additionalProperties: false }
)

export const ListDeliveriesInput = Type.Object(
  {
    subscription_id: Type.String({ minLength: 1 }),
    limit: Type.Optional(Type.Integer({ minimum: 1, maximum: 200, description: 'Default 50.' })),
    cursor: Type.Optional(Type.String({ maxLength: 200, description: 'next_cursor of the previous page.' }))
  },
  { additionalProperties: false }
)

export const VerifySignatureInput = Type.Object(
  {
    signing_secret: Type.String({ minLength: 1, description: "The subscription's whsec_… secret." }),
    body: Type.String({ description: 'The raw request body exactly as received (UTF-8).' }),
    signature: Type.String({ description: 'The X-Service-Signature header value.' })
  },
  { additionalProperties: false }
)

export const VerifySignatureOutput = Type.Object({
  valid: Type.Boolean(),
  expected_signature: Type.String({
    description: 'Lowercase hex HMAC-SHA256 of body keyed with the secret: compare it with yours.'
  })
})

export const Catalog = Type.Object({
  name: Type.String(),
  version: Type.String(),
  protocol: Type.Object({
    name: Type.Literal('mcp'),
    revision: Type.String({ description: 'The session revision, 2025-11-25.' }),
    revisions: Type.Array(Type.String(), { description: 'Every revision /mcp speaks, oldest first.' })
  }),
  endpoint: Type.String(),
  tools: Type.Array(
    Type.Object({
      name: Type.String(),
      title: Type.String(),
      description: Type.String(),
      inputSchema: Type.Record(Type.String(), Type.Unknown()),
      outputSchema: Type.Record(Type.String(), Type.Unknown()),
      annotations: Type.Record(Type.String(), Type.Unknown()),
      requiredScopes: Type.Array(Type.String())
    })
  ),
  resources: Type.Array(
    Type.Object({ uri: Type.String(), name: Type.String(), description: Type.String(), mimeType: Type.String() })
  )
})
