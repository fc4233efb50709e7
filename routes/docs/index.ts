import swaggerUi from '@fastify/swagger-ui'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { eventCatalog, EventTypes } from '../../schemas/webhooks.js'

/** Where the reference page's OAuth flow comes back to: the redirect URI to register for trying the API there. */
const referenceRedirectUri = (publicBaseUrl: string): string =>
  `${publicBaseUrl}/docs/static/oauth2-redirect.html`

/** The OpenAPI document, its rendering, and the event catalog: documents anyone may read. */
const docs: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/public/v1/openapi.json', { schema: { hide: true } }, async () => app.swagger())

  const eventTypes = eventCatalog()
  app.get('/public/v1/event-types', {
    schema: {
      tags: ['webhooks'],
      operationId: 'listEventTypes',
      summary: 'List the event types',
      description: 'Every topic, whether it is emitted or planned, and the JSON Schema of its delivery body. ' +
        'Needs no token.',
      security: [],
      response: { 200: EventTypes }
    }
  }, async (_request, reply) => {
    reply.header('cache-control', 'public, max-age=300')
    return eventTypes
  })
  // "Authorize" runs the install flow from this page (the oauth2 scheme: code + PKCE) with the client_id a developer
  // pastes; that client must have this page's redirect URI registered (docs/decisions.md, "What app developers see").
  await app.register(swaggerUi, {
    routePrefix: '/docs',
    uiConfig: { deepLinking: true, oauth2RedirectUrl: referenceRedirectUri(app.config.publicBaseUrl) },
    initOAuth: { usePkceWithAuthorizationCodeGrant: true },
    staticCSP: true
  })
}

export default docs
