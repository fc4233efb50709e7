import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import type { TSchema } from '@sinclair/typebox'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import type { FastifyInstance } from 'fastify'
import { safeEqual } from '../../lib/crypto.js'
import { ROOT } from '../../lib/root.js'
import { KNOWN_SCOPES, WIRED_SCOPES } from '../../lib/scopes.js'
import { EMITTED_TOPICS, PLANNED_TOPICS, TOPIC_DESCRIPTIONS } from '../../lib/topics.js'
import { Identity } from '../../schemas/identity.js'
import {
  InvoiceIdInput, ListDeliveriesInput, ListSubscriptionsInput, NoInput, NotImplementedOutput, SubscriptionIdInput,
  TopicList, VerifySignatureInput, VerifySignatureOutput
} from '../../schemas/mcp.js'
import { AttemptLog, CreateSubscriptionBody, CreatedSubscription, DeleteResult, SubscriptionListing } from '../../schemas/webhooks.js'
import type { Principal } from '../auth/public-auth.js'
import { ApiError, errors } from '../errors.js'
import { serviceSignature } from '../webhooks/signing.js'
import { attemptView, createdView, listItemView } from '../webhooks/views.js'

export interface ToolAnnotations {
  readOnlyHint: boolean
  destructiveHint: boolean
  idempotentHint: boolean
  openWorldHint: boolean
}

/** One tool: its schemas feed tools/list, /catalog.json and the agent card; its handler calls the services. */
export interface Tool {
  name: string
  title: string
  description: string
  inputSchema: TSchema
  outputSchema: TSchema
  annotations: ToolAnnotations
  /** Every scope the install must hold. */
  requiredScopes: string[]
  /** Public tools work without an access token; the others act in the token's tenant. */
  public: boolean
  tags: string[]
  run(args: any, principal: Principal | null): Promise<unknown>
}

export interface Resource {
  uri: string
  name: string
  description: string
  mimeType: string
  read(): string
}

const readOnly: ToolAnnotations = { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false }

/** The tool and resource registry: one list, the only place tools are described. */
export function createRegistry (app: FastifyInstance): { tools: Tool[], resources: Resource[] } {
  const need = (p: Principal | null): Principal => p!

  /** A read route that is not built yet: the same answer as its REST twin, after the same checks. */
  const notBuilt = (name: string, title: string, scope: string, route: string, input: TSchema = NoInput): Tool => ({
    name,
    title,
    description: `${title} in the token's tenant. Requires ${scope}. Not built yet: answers not_implemented, like ${route}.`,
    inputSchema: input,
    outputSchema: NotImplementedOutput,
    annotations: readOnly,
    requiredScopes: [scope],
    public: false,
    tags: ['accounting'],
    run: async () => { throw errors.notImplemented('GET', route) }
  })

  const T = '/public/v1/orgs/{orgId}/entities/{entityId}'
  const tools: Tool[] = [
    {
      name: 'whoami',
      title: 'Who am I',
      description: 'The install behind the access token: app, organisation, entity and granted scopes (same as GET /public/v1/me).',
      inputSchema: NoInput,
      outputSchema: Identity,
      annotations: readOnly,
      requiredScopes: [],
      public: false,
      tags: ['identity'],
      run: async (_args, p) => {
        const me = need(p)
        return { install_id: me.installId, client_id: me.clientId, app_slug: me.appSlug, org_ref_id: me.orgRefId, entity_ref_id: me.entityRefId, scopes: me.scopes }
      }
    },
    {
      name: 'list_webhook_topics',
      title: 'List webhook topics',
      description: 'Every topic a subscription may list: emitted ones are delivered, planned ones are accepted but not delivered yet.',
      inputSchema: NoInput,
      outputSchema: TopicList,
      annotations: readOnly,
      requiredScopes: [],
      public: true,
      tags: ['webhooks'],
      run: async () => ({
        topics: [
          ...EMITTED_TOPICS.map(name => ({ name, status: 'emitted' as const, description: TOPIC_DESCRIPTIONS[name]! })),
          ...PLANNED_TOPICS.map(name => ({ name, status: 'planned' as const, description: TOPIC_DESCRIPTIONS[name]! }))
        ]
      })
    },
    {
      name: 'list_webhook_subscriptions',
      title: 'List webhook subscriptions',
      description: "This install's webhook subscriptions, oldest first (active only unless include_inactive).",
      inputSchema: ListSubscriptionsInput,
      outputSchema: SubscriptionListing,
      annotations: readOnly,
      requiredScopes: [],
      public: false,
      tags: ['webhooks'],
      run: async (args: { include_inactive?: boolean }, p) => {
        const all = args.include_inactive === true
        return { subscriptions: (await app.webhookSubscriptions.list(need(p), all)).map(s => listItemView(s, all)) }
      }
    },
    {
      name: 'create_webhook_subscription',
      title: 'Create a webhook subscription',
      description: 'Subscribes an HTTPS endpoint to topics. The signing_secret is returned once: store it to verify deliveries.',
      inputSchema: CreateSubscriptionBody,
      outputSchema: CreatedSubscription,
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: true },
      requiredScopes: [],
      public: false,
      tags: ['webhooks'],
      run: async (args: { topics: string[], target_url: string }, p) =>
        createdView(await app.webhookSubscriptions.create(need(p), { topics: args.topics, targetUrl: args.target_url }))
    },
    {
      name: 'delete_webhook_subscription',
      title: 'Delete a webhook subscription',
      description: 'Deactivates one of this install\'s subscriptions and cancels its pending deliveries (modified is 0 when there was nothing to delete).',
      inputSchema: SubscriptionIdInput,
      outputSchema: DeleteResult,
      annotations: { readOnlyHint: false, destructiveHint: true, idempotentHint: true, openWorldHint: false },
      requiredScopes: [],
      public: false,
      tags: ['webhooks'],
      run: async (args: { subscription_id: string }, p) => ({ ok: true, modified: await app.webhookSubscriptions.remove(need(p), args.subscription_id) })
    },
    {
      name: 'list_webhook_deliveries',
      title: 'List webhook delivery attempts',
      description: 'The delivery attempts of one of this install\'s subscriptions, newest first, with status codes and errors.',
      inputSchema: ListDeliveriesInput,
      outputSchema: AttemptLog,
      annotations: readOnly,
      requiredScopes: [],
      public: false,
      tags: ['webhooks'],
      run: async (args: { subscription_id: string, limit?: number }, p) => {
        const s = await app.webhookSubscriptions.findOwned(need(p), args.subscription_id)
        if (!s) throw errors.notFound('No such subscription among yours.')
        return { attempts: (await app.webhookQueue.attempts(s.id, args.limit ?? 50)).map(attemptView) }
      }
    },
    {
      name: 'verify_webhook_signature',
      title: 'Verify a webhook signature',
      description: 'Checks an X-Service-Signature against a raw body and signing secret, as a receiver must (HMAC-SHA256, hex).',
      inputSchema: VerifySignatureInput,
      outputSchema: VerifySignatureOutput,
      annotations: readOnly,
      requiredScopes: [],
      public: true,
      tags: ['webhooks'],
      run: async (args: { signing_secret: string, body: string, signature: string }) => {
        const expected = serviceSignature(args.signing_secret, args.body)
        return { valid: safeEqual(expected, args.signature.trim().toLowerCase()), expected_signature: expected }
      }
    },
    notBuilt('list_invoices', 'List invoices', 'invoices:read', `${T}/invoices`),
    notBuilt('get_invoice', 'Get an invoice', 'invoices:read', `${T}/invoices/{id}`, InvoiceIdInput),
    notBuilt('list_bills', 'List bills', 'bills:read', `${T}/bills`),
    notBuilt('list_customers', 'List customers', 'customers:read', `${T}/customers`)
  ]

  const json = (v: unknown): string => JSON.stringify(v, null, 2)
  const resources: Resource[] = [
    {
      uri: 'marketplace://openapi.json',
      name: 'Public API (OpenAPI 3.1)',
      description: 'The OpenAPI document of /public/v1, the OAuth endpoints and the webhook payloads.',
      mimeType: 'application/json',
      read: () => json(app.swagger())
    },
    {
      uri: 'marketplace://webhooks/topics',
      name: 'Webhook topics',
      description: 'The topic registry: emitted and planned topics.',
      mimeType: 'application/json',
      read: () => json({
        emitted: EMITTED_TOPICS.map(name => ({ name, description: TOPIC_DESCRIPTIONS[name] })),
        planned: PLANNED_TOPICS.map(name => ({ name, description: TOPIC_DESCRIPTIONS[name] }))
      })
    },
    {
      uri: 'marketplace://scopes',
      name: 'Scopes',
      description: 'Every scope an app may register, which authorise routes today, and what each allows.',
      mimeType: 'application/json',
      read: () => json({
        scopes: Object.entries(KNOWN_SCOPES).map(([scope, description]) => ({ scope, description, wired: Object.hasOwn(WIRED_SCOPES, scope) }))
      })
    },
    {
      uri: 'marketplace://docs/webhooks.md',
      name: 'Verifying webhooks',
      description: 'How to receive deliveries: raw body, HMAC-SHA256 in constant time, 401 on failure, idempotency, retries.',
      mimeType: 'text/markdown',
      read: () => readFileSync(join(ROOT, 'docs/webhooks.md'), 'utf8')
    }
  ]
  return { tools, resources }
}

export type ToolResult = {
  content: Array<{ type: 'text', text: string }>
  structuredContent?: Record<string, unknown>
  isError?: boolean
}

/**
 * A tool error carries the REST error body as text only: clients check `structuredContent` against the tool's
 * output schema even on errors, so an error body there would turn every tool error into a protocol error.
 */
const toolError = (e: ApiError): ToolResult => ({
  content: [{ type: 'text', text: JSON.stringify(e.body()) }],
  isError: true
})

/** Runs a tool call: argument check, token and scope checks as on the routes, then the handler. */
export function createDispatcher (tools: Tool[]) {
  const byName = new Map(tools.map(t => [t.name, { tool: t, check: TypeCompiler.Compile(t.inputSchema) }]))
  return async (name: string, args: unknown, principal: Principal | null): Promise<ToolResult | undefined> => {
    const entry = byName.get(name)
    if (!entry) return undefined
    const { tool, check } = entry
    const input = args ?? {}
    if (!check.Check(input)) {
      const details = [...check.Errors(input)].map(e => ({ location: 'arguments', path: e.path || '/', message: e.message }))
      return toolError(errors.validation(details, `Invalid arguments for ${name}.`))
    }
    if (!tool.public && !principal) {
      return toolError(errors.missingToolToken(name))
    }
    if (principal && tool.requiredScopes.length > 0) {
      const missing = tool.requiredScopes.filter(s => !principal.scopes.includes(s))
      if (missing.length > 0) return toolError(errors.insufficientScope(tool.requiredScopes, missing))
    }
    try {
      const result = await tool.run(input, principal) as Record<string, unknown>
      return { content: [{ type: 'text', text: JSON.stringify(result) }], structuredContent: result }
    } catch (err) {
      if (err instanceof ApiError) return toolError(err)
      throw err
    }
  }
}
