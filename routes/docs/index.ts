import { createHash } from 'node:crypto'
import swaggerUi from '@fastify/swagger-ui'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { eventCatalog, EventTypes } from '../../schemas/webhooks.js'

/** Where the reference page's OAuth flow comes back to: the redirect URI to register for trying the API there. */
const referenceRedirectUri = (publicBaseUrl: string): string =>
  `${publicBaseUrl}/docs/static/oauth2-redirect.html`

/** The reference page's header: the API's name, where Swagger UI would show its own logo. */
const LOGO = Buffer.from(
  '<svg xmlns="http://www.w3.org/2000/svg" width="300" height="40" viewBox="0 0 300 40">' +
  '<text x="0" y="28" font-family="sans-serif" font-size="24" font-weight="600" fill="#ffffff">' +
  'Marketplace gateway</text></svg>'
)

/**
 * Swagger UI's top bar draws its own logo first, an SVG with an inline `<style>`, which the page then replaces with
 * LOGO: the page's one inline style, allowed by its hash rather than by 'unsafe-inline'.
 */
const SWAGGER_LOGO_STYLE = '.logo_small_svg__cls-2{fill:#fff}.logo_small_svg__cls-3{fill:#85ea2d}'
const hashSource = (text: string): string => `'sha256-${createHash('sha256').update(text).digest('base64')}'`

/**
 * The reference page's Content-Security-Policy: its scripts and styles are its own files, its images its own or
 * data: URLs (the logo), and nothing may frame it. No 'unsafe-inline', no 'unsafe-eval'.
 */
export const REFERENCE_PAGE_CSP = [
  "default-src 'self'",
  "base-uri 'self'",
  "object-src 'none'",
  "frame-ancestors 'none'",
  "script-src 'self'",
  "script-src-attr 'none'",
  `style-src 'self' ${hashSource(SWAGGER_LOGO_STYLE)}`,
  "font-src 'self' data:",
  "img-src 'self' data:"
].join('; ')

/** The OpenAPI document, its rendering, and the event catalog: documents anyone may read. */
const docs: FastifyPluginAsyncTypebox = async (app) => {
  // The root is nothing of its own: a person who opens the service in a browser wants the reference.
  app.get('/', { schema: { hide: true } }, async (_request, reply) => reply.redirect('/docs', 302))

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
    theme: { title: 'Marketplace gateway API reference' },
    logo: { type: 'image/svg+xml', content: LOGO },
    staticCSP: REFERENCE_PAGE_CSP
  })
}

export default docs
