import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { perInstallRateLimit } from '../../../plugins/infrastructure/rate-limit.js'
import { errorResponses, PUBLIC_ERRORS } from '../../../schemas/error-responses.js'
import { Identity } from '../../../schemas/identity.js'
import tenant from './tenant/index.js'

/**
 * `/public/v1`, the API of installed apps. The pipeline every request here goes through is written out in order:
 * 1. this context's hook: the access token (who is calling), then the per-install rate limit (how often);
 * 2. for routes under `/orgs/:orgId/entities/:entityId`, the tenant context's hook (./tenant/index.ts): the path
 *    tenant must be the token's, then the route's scopes must all be granted.
 */
const publicV1: FastifyPluginAsyncTypebox = async (app) => {
  const rateLimit = await perInstallRateLimit(app)
  app.addHook('onRequest', async (request, reply) => {
    request.principal = await app.publicAuth.authenticate(request.headers.authorization)
    await rateLimit(request, reply)
  })

  app.get('/me', {
    schema: {
      tags: ['identity'],
      operationId: 'getMe',
      summary: 'The install behind the access token',
      description: 'Which app, tenant (organisation and entity) and scopes the access token acts for. Needs no ' +
        'scope: an app calls it to learn where it was installed.',
      response: { 200: Identity, ...errorResponses(...PUBLIC_ERRORS) }
    }
  }, async (request) => app.publicAuth.identity(request.principal!))

  await app.register(tenant, { prefix: '/orgs/:orgId/entities/:entityId' })
}

export default publicV1
