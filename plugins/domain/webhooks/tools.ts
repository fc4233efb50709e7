import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { FastifyInstance } from 'fastify'
import { safeEqual } from '../../../lib/crypto.js'
import { ROOT } from '../../../lib/root.js'
import { EMITTED_TOPICS, PLANNED_TOPICS, TOPIC_DESCRIPTIONS } from '../../../lib/topics.js'
import {
  ListDeliveriesInput, ListSubscriptionsInput, NoInput, SubscriptionIdInput, TopicList, VerifySignatureInput,
  VerifySignatureOutput
} from '../../../schemas/mcp.js'
import { Type } from '@sinclair/typebox'
import {
  AttemptLog, CreateSubscriptionBody, CreatedSubscription, DeleteResult, eventCatalog, EventTypes, ReplayAccepted,
  ReplayBody, SubscriptionListing, TestSent
} from '../../../schemas/webhooks.js'
import { READ_ONLY } from '../common/tool-annotations.js'
import type { WebhookService } from './service.js'
import { serviceSignature } from './signing.js'

const json = (v: unknown): string => JSON.stringify(v, null, 2)
const tenantTool = { requiredScopes: [], public: false, tags: ['webhooks'] }

/** The webhook tools and resources, calling the same service methods as the REST routes. */
export function addWebhookTools (mcp: FastifyInstance['mcp'], webhooks: WebhookService): void {
  mcp.addTool({
    name: 'list_webhook_topics',
    title: 'List webhook topics',
    description: 'Every topic a subscription may list: emitted ones are delivered, planned ones are accepted but ' +
      'not delivered yet.',
    inputSchema: NoInput,
    outputSchema: TopicList,
    annotations: READ_ONLY,
    requiredScopes: [],
    public: true,
    tags: ['webhooks']
  }, async () => ({
    topics: [
      ...EMITTED_TOPICS.map(name => ({ name, status: 'emitted' as const, description: TOPIC_DESCRIPTIONS[name]! })),
      ...PLANNED_TOPICS.map(name => ({ name, status: 'planned' as const, description: TOPIC_DESCRIPTIONS[name]! }))
    ]
  }))

  mcp.addTool({
    name: 'list_event_types',
    title: 'List event types',
    description: 'Every webhook topic with its status and the JSON Schema of its delivery body (as ' +
      'GET /public/v1/event-types).',
    inputSchema: NoInput,
    outputSchema: EventTypes,
    annotations: READ_ONLY,
    requiredScopes: [],
    public: true,
    tags: ['webhooks']
  }, async () => eventCatalog())

  mcp.addTool({
    ...tenantTool,
    name: 'list_webhook_subscriptions',
    title: 'List webhook subscriptions',
    description: "This install's webhook subscriptions, oldest first (active only unless include_inactive).",
    inputSchema: ListSubscriptionsInput,
    outputSchema: SubscriptionListing,
    annotations: READ_ONLY
  }, async (args, p) => webhooks.list(p, args.include_inactive === true))

  mcp.addTool({
    ...tenantTool,
    name: 'create_webhook_subscription',
    title: 'Create a webhook subscription',
    description: 'Subscribes an HTTPS endpoint to topics. The signing_secret is returned once: store it to verify ' +
      'deliveries.',
    inputSchema: CreateSubscriptionBody,
    outputSchema: CreatedSubscription,
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true }
  }, async (args, p) => webhooks.subscribe(p, args))

  mcp.addTool({
    ...tenantTool,
    name: 'delete_webhook_subscription',
    title: 'Delete a webhook subscription',
    description: 'Deactivates one of this install\'s subscriptions and cancels its pending deliveries (modified is 0 ' +
      'when there was nothing to delete).',
    inputSchema: SubscriptionIdInput,
    outputSchema: DeleteResult,
    annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false }
  }, async (args, p) => webhooks.remove(p, args.subscription_id))

  mcp.addTool({
    ...tenantTool,
    name: 'send_test_webhook',
    title: 'Send a test webhook',
    description: 'Sends a signed webhook.test event to one of this install\'s subscriptions only, through the ' +
      'delivery queue; its attempts show in list_webhook_deliveries.',
    inputSchema: SubscriptionIdInput,
    outputSchema: TestSent,
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true }
  }, async (args, p) => webhooks.sendTest(p, args.subscription_id))

  mcp.addTool({
    ...tenantTool,
    name: 'replay_webhook_deliveries',
    title: 'Replay webhook deliveries',
    description: 'Sends again, as new deliveries, the events one of this install\'s subscriptions was sent between ' +
      'since and until whose delivery failed (status failed, the default) or ended (all); at most 10,000. The same ' +
      'idempotency_key again returns the first answer instead of replaying twice.',
    inputSchema: Type.Object({
      subscription_id: Type.String(),
      ...ReplayBody.properties,
      idempotency_key: Type.Optional(Type.String({ minLength: 1, maxLength: 255 }))
    }, { additionalProperties: false }),
    outputSchema: ReplayAccepted,
    annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true }
  }, async ({ subscription_id: id, idempotency_key: key, ...range }, p) => webhooks.replay(p, id, range, key))

  mcp.addTool({
    ...tenantTool,
    name: 'list_webhook_deliveries',
    title: 'List webhook delivery attempts',
    description: 'The delivery attempts of one of this install\'s subscriptions, newest first, with status codes ' +
      'and errors.',
    inputSchema: ListDeliveriesInput,
    outputSchema: AttemptLog,
    annotations: READ_ONLY
  }, async (args, p) => webhooks.attempts(p, args.subscription_id, args.limit, args.cursor))

  mcp.addTool({
    name: 'verify_webhook_signature',
    title: 'Verify a webhook signature',
    description: 'Checks an X-Service-Signature against a raw body and signing secret, as a receiver must ' +
      '(HMAC-SHA256, hex).',
    inputSchema: VerifySignatureInput,
    outputSchema: VerifySignatureOutput,
    annotations: READ_ONLY,
    requiredScopes: [],
    public: true,
    tags: ['webhooks']
  }, async (args) => {
    const expected = serviceSignature(args.signing_secret, args.body)
    return { valid: safeEqual(expected, args.signature.trim().toLowerCase()), expected_signature: expected }
  })

  mcp.addResource({
    uri: 'marketplace://webhooks/topics',
    name: 'Webhook topics',
    description: 'The topic registry: emitted and planned topics.',
    mimeType: 'application/json',
    read: () => json({
      emitted: EMITTED_TOPICS.map(name => ({ name, description: TOPIC_DESCRIPTIONS[name] })),
      planned: PLANNED_TOPICS.map(name => ({ name, description: TOPIC_DESCRIPTIONS[name] }))
    })
  })

  // Read once at start: a build that left the guide out fails to start, rather than answering with a server path.
  // The Dockerfile copies it into the image (test/e2e/image.test.ts).
  const guide = readFileSync(join(ROOT, 'docs/webhooks.md'), 'utf8')
  mcp.addResource({
    uri: 'marketplace://docs/webhooks.md',
    name: 'Verifying webhooks',
    description: 'How to receive deliveries: raw body, HMAC-SHA256 in constant time, 401 on failure, idempotency, ' +
      'retries.',
    mimeType: 'text/markdown',
    read: () => guide
  })
}
