import fp from 'fastify-plugin'
import swagger from '@fastify/swagger'
import { VERSION } from '../lib/root.js'
import { WIRED_SCOPES } from '../lib/scopes.js'
import { EMITTED_TOPICS, TEST_TOPIC, TOPIC_DESCRIPTIONS } from '../lib/topics.js'
import { payloadSchema } from '../schemas/webhooks.js'

const header = (name: string, description: string) => ({
  name,
  in: 'header' as const,
  required: true,
  schema: { type: 'string' as const },
  description
})

/** One entry per emitted topic: what the service POSTs to a subscriber's target_url (docs/rules.md#delivery). */
function deliveryWebhooks () {
  return Object.fromEntries(
    [...EMITTED_TOPICS, TEST_TOPIC].map(topic => [
      topic,
      {
        post: {
          summary: `Delivery of ${topic}`,
          description: `${TOPIC_DESCRIPTIONS[topic]} ` +
        'Verify X-Service-Signature over the raw body before trusting it; see docs/webhooks.md.',
          parameters: [
            header(
              'X-Service-Signature',
              'Lowercase hex HMAC-SHA256 of the raw body, keyed with the UTF-8 bytes of signing_secret.'
            ),
            header('X-Service-Topic', 'The topic.'),
            header('X-Service-Event-Id', 'The event id, stable across retries: your idempotency key.'),
            header('X-Service-Delivery-Attempt', '1 for the first attempt, then 2, 3…'),
            header('webhook-id', 'Standard Webhooks: the event id.'),
            header('webhook-timestamp', 'Standard Webhooks: Unix seconds of this attempt.'),
            header('webhook-signature', 'Standard Webhooks: v1,<base64 HMAC-SHA256 of "id.timestamp.body">, keyed ' +
              'with the base64-decoded bytes after whsec_; two, space-separated, during a rotation.')
          ],
          requestBody: {
            required: true,
            content: {
              'application/json': {
                schema: payloadSchema(topic)
              }
            }
          },
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

/**
 * OpenAPI 3.1, generated from the route schemas (the same TypeBox schemas that validate and serialize).
 * Internal user routes are documented in docs/, not here: this document is for app developers.
 */
export default fp(
  async app => {
    const base = app.config.publicBaseUrl
    await app.register(swagger, {
      openapi: {
        openapi: '3.1.0',
        info: {
          title: 'Marketplace public API',
          version: VERSION,
          description:
            'The API through which an installed marketplace app acts on one tenant (organisation and entity) ' +
            'of the accounting system. ' +
            "Every `/public/v1` request carries the install's access token. " +
            'Errors are JSON objects with `error` and `message`.'
        },
        servers: [{ url: base }],
        // TypeBox schemas are JSON Schema, which @fastify/swagger's OpenAPI typings do not model: hence the cast.
        webhooks: deliveryWebhooks() as Record<string, never>,
        tags: [
          { name: 'identity' },
          { name: 'accounting' },
          { name: 'webhooks' },
          { name: 'oauth' },
          { name: 'operations' }
        ],
        components: {
          securitySchemes: {
            accessToken: {
              type: 'http',
              scheme: 'bearer',
              bearerFormat: 'JWT',
              description: `Access token (RS256, typ at+jwt, aud marketplace_app) from ${base}/oauth/token. ` +
                `Scopes: ${Object.keys(WIRED_SCOPES).join(', ')}.`
            },
            clientCredentials: {
              type: 'http',
              scheme: 'basic',
              description: 'client_id and client_secret of the app (or in the form body).'
            }
          }
        }
      },
      hideUntagged: false,
      transform: ({ schema, url, route }) => {
        const internal = /^\/(apps|orgs|installs|docs|mcp|events)(\/|$)/.test(url) || url === '/public/v1/openapi.json'
        // A route's required scopes (its `config.scopes`, which the tenant context checks) are its security.
        const scopes = route.config?.scopes
        const documented = scopes?.length ? { ...schema, security: [{ accessToken: scopes }] } : schema
        return { schema: internal ? { ...documented, hide: true } : documented, url }
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
