import swaggerUi from '@fastify/swagger-ui'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'

/** The OpenAPI document and its rendering. */
const docs: FastifyPluginAsyncTypebox = async (app) => {
  app.get('/public/v1/openapi.json', { schema: { hide: true } }, async () => app.swagger())
  await app.register(swaggerUi, { routePrefix: '/docs', uiConfig: { deepLinking: true }, staticCSP: true })
}

export default docs
