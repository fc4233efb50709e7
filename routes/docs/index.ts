import swaggerUi from '@fastify/swagger-ui'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { eventCatalog, EventTypes } from '../../schemas/webhooks.js'

/** The OpenAPI document, its rendering, and the event catalog: documents anyone may read. */
const docs: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/public/v1/openapi.json', { schema: { hide: true } }, async () => app.swagger())

  const eventTypes = eventCatalog()
  app.get('/public/v1/event-types', {
    schema: {
      tags: ['webhooks'],
      summary: 'Every topic, its status and the JSON Schema of its delivery body',
      security: [],
      response: { 200: EventTypes }
    }
  }, async (_request, reply) => {
    reply.header('cache-control', 'public, max-age=300')
    return eventTypes
  })
  await app.register(swaggerUi, { routePrefix: '/docs', uiConfig: { deepLinking: true }, staticCSP: true })
}

export default docs
