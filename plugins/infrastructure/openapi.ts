import fp from 'fastify-plugin'
import swagger from '@fastify/swagger'
import { VERSION } from '../../lib/root.js'
import { WIRED_SCOPES } from '../../lib/scopes.js'
import { EMITTED_TOPICS, TEST_TOPIC, TOPIC_DESCRIPTIONS } from '../../lib/topics.js'
import { SAMPLE } from '../../schemas/examples.js'
import { payloadSchema } from '../../schemas/webhooks.js'

const header = (name: string, description: string, example: string) => ({
  name,
  in: 'header' as const,
  required: true,
  schema: { type: 'string' as const },
  description,
  example
})

/** A topic's delivery body with its example beside the schema, where OpenAPI media types keep examples. */
function payloadMedia (topic: string) {
  const { examples, ...schema } = payloadSchema(topic)
  return { schema, example: (examples as unknown[])[0] }
}

/** One entry per emitted topic: what the service POSTs to a subscriber's target_url (docs/rules.md#delivery). */
function deliveryWebhooks () {
  return Object.fromEntries(
    [...EMITTED_TOPICS, TEST_TOPIC].map(topic => [
      topic,
      {
        post: {
          security: [],
          operationId: `receive${topic.split(/[._]/).map(w => w[0]!.toUpperCase() + w.slice(1)).join('')}`,
          summary: `Delivery of ${topic}`,
          description: `${TOPIC_DESCRIPTIONS[topic]} ` +
        'Verify X-Service-Signature over the raw body before trusting it; see docs/webhooks.md.',
          parameters: [
            header(
              'X-Service-Signature',
              'Lowercase hex HMAC-SHA256 of the raw body, keyed with the UTF-8 bytes of signing_secret.',
              '5f0e2c1b8a7d6e9f0a1b2c3d4e5f60718293a4b5c6d7e8f9012a3b4c5d6e7f80'
            ),
            header('X-Service-Topic', 'The topic.', topic),
            header('X-Service-Event-Id', 'The event id, stable across retries: your idempotency key.', SAMPLE.eventId),
            header('X-Service-Delivery-Attempt', '1 for the first attempt, then 2, 3…', '1'),
            header('webhook-id', 'Standard Webhooks: the event id.', SAMPLE.eventId),
            header('webhook-timestamp', 'Standard Webhooks: Unix seconds of this attempt.', '1795512600'),
            header('webhook-signature', 'Standard Webhooks: v1,<base64 HMAC-SHA256 of "id.timestamp.body">, keyed ' +
              'with the base64-decoded bytes after whsec_; two, space-separated, during a rotation.',
            'v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4=')
          ],
          requestBody: { required: true, content: { 'application/json': payloadMedia(topic) } },
          responses: {
            '2XX': { description: 'Acknowledged. Anything else is a failure and is retried.' },
            401: { description: 'Return this when the signature does not verify.' },
            410: { description: 'The endpoint is gone: the subscription is disabled at once.' }
          }
        }
      }
    ])
  )
}

type Json = Record<string, unknown>
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v)
/** Keys whose values are examples, not schemas: never rewritten. */
const EXAMPLE_KEYS = new Set(['example', 'examples', 'x-examples'])

/**
 * Every schema with a PascalCase `title` becomes a named component, referenced with `$ref`, so that code generators
 * name the types as we do (`Subscription`, not `def-0`). A title names one shape: two different shapes with one
 * title throw here, at start-up and in the OpenAPI test.
 */
export function nameSchemas (doc: Json): Json {
  const components = (doc.components ??= {}) as Json
  const named = (components.schemas ??= {}) as Json
  const visit = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(visit)
    if (!isObject(node)) return node
    const out: Json = {}
    for (const [k, v] of Object.entries(node)) if (k !== 'const') out[k] = EXAMPLE_KEYS.has(k) ? v : visit(v)
    // As @fastify/swagger does in the routes' schemas (convertConstToEnum), so that a schema the webhooks section
    // shares with a route is one shape: a `const` is a single-value `enum`.
    if ('const' in node) {
      if ('enum' in node) out.const = node.const
      else out.enum = [node.const]
    }
    // A choice by JSON type alone (`if: {type}`, then, else: one event or a batch) is documented as the oneOf it
    // equals, which generators make a union type of; validation keeps if/then/else for its precise errors.
    if (isObject(out.if) && Object.keys(out.if).join() === 'type' && 'then' in out && 'else' in out) {
      const { if: _if, then, else: otherwise, ...rest } = out
      return { ...rest, oneOf: [then, otherwise] }
    }
    const title = out.title
    const isSchema = 'type' in out || 'anyOf' in out
    if (typeof title !== 'string' || !/^[A-Z][A-Za-z0-9]*$/.test(title) || !isSchema) return out
    const { description, ...shape } = out
    const existing = named[title] as Json | undefined
    // A response's own schema has its examples moved to the media type (@fastify/swagger), the same schema nested
    // elsewhere keeps them: examples are not part of the shape, and the component keeps them when a use has them.
    if (existing && JSON.stringify(shapeOf(existing)) !== JSON.stringify(shapeOf(shape))) {
      throw new Error(`two different schemas are titled ${title}: give one another title`)
    }
    if (!existing) named[title] = description === undefined ? shape : { ...shape, description }
    else if (existing.examples === undefined && shape.examples !== undefined) existing.examples = shape.examples
    const ref: Json = { $ref: `#/components/schemas/${title}` }
    // A use that describes the shape otherwise (a response's own meaning) keeps its description beside the $ref.
    const ownDescription = description !== undefined && description !== (named[title] as Json).description
    return ownDescription ? { ...ref, description } : ref
  }
  for (const key of ['paths', 'webhooks']) doc[key] = visit(doc[key])
  return doc
}
const shapeOf = ({ description: _d, examples: _e, ...rest }: Json): Json => rest

/** Routes that are not HTTP APIs to document: the MCP endpoint (its own protocol), the docs themselves, metrics. */
/**
 * OpenAPI 3.1, generated from the route schemas (the same TypeBox schemas that validate and serialize), for app
 * developers and their code generators: the public API, the OAuth endpoints, the webhook deliveries, and the
 * internal surface (app registration, installs, event ingestion) under tags of its own (docs/decisions.md).
 */
export default fp(
  async app => {
    const base = app.config.publicBaseUrl
    const scopes = WIRED_SCOPES
    await app.register(swagger, {
      openapi: {
        openapi: '3.1.0',
        info: {
          title: 'Marketplace API',
          version: VERSION,
          summary: 'Install marketplace apps on a tenant of the accounting system and act on it.',
          description:
            'The API through which an installed marketplace app acts on one tenant (organisation and entity) ' +
            'of the accounting system.\n\n' +
            '1. Register the app (`POST /apps`, as a signed-in user), or let an agent register itself ' +
            '(`POST /oauth/register`).\n' +
            '2. Send the user to `GET /oauth/authorize` with PKCE; exchange the code at `POST /oauth/token`.\n' +
            "3. Call `/public/v1` with the install's access token; subscribe to webhooks.\n\n" +
            'Errors are JSON objects with `error` (a stable code) and `message`; each operation lists the codes ' +
            'it can answer. AI agents reach the same capabilities over MCP at `/mcp` (see `/catalog.json`).',
          license: { name: 'Proprietary', identifier: 'LicenseRef-Proprietary' },
          // A name only: the reference page shows a url as a "Website" link, and the one address this service has for
          // its developers is that page itself.
          contact: { name: 'Marketplace developer support' }
        },
        servers: [{ url: base, description: 'This instance' }],
        // TypeBox schemas are JSON Schema, which @fastify/swagger's OpenAPI typings do not model: hence the cast.
        webhooks: deliveryWebhooks() as Record<string, never>,
        tags: [
          { name: 'identity', description: 'Who the access token acts as.' },
          {
            name: 'accounting',
            description: "The tenant's invoices, bills and customers, as the accounting system sent them: lists for " +
              'incremental sync (updated_since, cursor) and single records with ETag. Each needs its scope.'
          },
          {
            name: 'webhooks',
            description: 'Subscriptions of the calling install, their deliveries, test and replay, and the event types.'
          },
          {
            name: 'oauth',
            description: 'Consent, tokens (authorization code with PKCE, refresh rotation), revocation, ' +
              'registration of clients, and the signing keys.'
          },
          {
            name: 'apps',
            description: 'Internal: app registration and API keys, by a signed-in user of the accounting system.'
          },
          {
            name: 'installs',
            description: 'Internal: the installs of an organisation, seen and removed by its users.'
          },
          {
            name: 'events',
            description: 'Internal: events published by the accounting system, fanned out as webhooks.'
          },
          { name: 'operations', description: 'Liveness and readiness probes.' }
        ],
        components: {
          // Each says who holds it and where it goes: the reference page's "Authorize" dialog lists all six.
          securitySchemes: {
            accessToken: {
              type: 'http',
              scheme: 'bearer',
              bearerFormat: 'JWT',
              description: '**Apps, with an install\'s access token.** Paste the `access_token` that ' +
                `${base}/oauth/token gave the app for one install (RS256, typ at+jwt, aud marketplace_app, valid ` +
                '1 hour), for every `/public/v1` route (and `/mcp`, when it was asked for with that resource). ' +
                `Scopes: ${Object.keys(scopes).join(', ')}.`
            },
            oauth2: {
              type: 'oauth2',
              description: '**Apps, trying the API from this page.** Runs the install flow here (authorization ' +
                'code with PKCE, S256) and holds the same access token as `accessToken`. Paste the `client_id` of ' +
                `a client that registered ${base}/docs/static/oauth2-redirect.html as a redirect URI (a public ` +
                'client from `POST /oauth/register`: leave the secret empty), tick the scopes, and allow on the ' +
                'consent page.',
              flows: {
                authorizationCode: {
                  authorizationUrl: `${base}/oauth/authorize`,
                  tokenUrl: `${base}/oauth/token`,
                  refreshUrl: `${base}/oauth/token`,
                  scopes
                }
              }
            },
            clientCredentials: {
              type: 'http',
              scheme: 'basic',
              description: '**Apps, at the token and revocation endpoints.** The `client_id` and `client_secret` ' +
                'of a confidential client (HTTP Basic, or both in the form body). A public client sends only ' +
                '`client_id` in the body and needs nothing here.'
            },
            userSession: {
              type: 'http',
              scheme: 'bearer',
              bearerFormat: 'JWT',
              description: '**Users of the accounting system**: developers registering apps (`/apps`), ' +
                'organisation users seeing and removing installs (`/orgs/…/installs`, `/installs/…`). A user ' +
                'session token of the accounting system (HS256, aud user_session); on a development machine, ' +
                '`npx marketplace-gateway user-token --sub ID --org ORG --entity ENT` prints one.'
            },
            sessionCookie: {
              type: 'apiKey',
              in: 'cookie',
              name: 'session',
              description: '**Users of the accounting system, in a browser**: the same user session in the ' +
                '`session` cookie, which the consent page reads. A page cannot set a cookie for its requests: ' +
                'here, use `userSession`.'
            },
            eventsToken: {
              type: 'http',
              scheme: 'bearer',
              description: '**The accounting system only**: `EVENTS_TOKEN`, the Bearer token with which it ' +
                'publishes its events (`POST /events`). Apps never hold it.'
            }
          }
        }
      },
      hideUntagged: false,
      // Component names are the schemas' titles (nameSchemas); @fastify/swagger's own would be def-0, def-1...
      transformObject: doc => 'openapiObject' in doc ? nameSchemas(doc.openapiObject as Json) : doc.swaggerObject,
      transform: ({ schema, url, route }) => {
        // Every /public/v1 route runs the token hook (routes/public/v1), so its security is the access token, whose
        // scopes must include the route's `config.scopes` (the tenant context checks them; OpenAPI lists scopes on
        // the oauth2 scheme only); a route open to anyone says `security: []`.
        const required = route.config?.scopes ?? []
        const documented = url.startsWith('/public/v1/') && schema.security === undefined
          ? { ...schema, security: [{ accessToken: [] }, { oauth2: required }] }
          : schema
        return { schema: documented, url }
      }
    })

    app.mcp.addResource({
      uri: 'marketplace://openapi.json',
      name: 'Public API (OpenAPI 3.1)',
      description: 'The OpenAPI document of /public/v1, the OAuth endpoints and the webhook payloads.',
      mimeType: 'application/json',
      read: () => JSON.stringify(app.swagger(), null, 2)
    })
  },
  { name: 'openapi', dependencies: ['config', 'mcp'] }
)
