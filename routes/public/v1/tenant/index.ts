import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { errors } from '../../../../plugins/errors.js'
import accounting from './accounting.js'
import webhooks from './webhooks.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Scopes the install must hold, all of them (routes under the tenant prefix). */
    scopes?: string[]
  }
}

/**
 * Everything under `/public/v1/orgs/:orgId/entities/:entityId`, after the token and rate-limit hook of the parent
 * context. This context's one hook checks, in order: the path tenant is the token's (decided from the token alone,
 * so the answer says nothing about other tenants), then every scope in the route's `config.scopes` is granted.
 * A tenant route is a file in this folder, registered below.
 */
const tenant: FastifyPluginAsyncTypebox = async (app) => {
  app.addHook('onRequest', async (request) => {
    const { orgId, entityId } = request.params as { orgId: string, entityId: string }
    const principal = request.principal!
    if (orgId !== principal.orgRefId || entityId !== principal.entityRefId) throw errors.tenantMismatch()
    const required = request.routeOptions.config.scopes ?? []
    const missing = required.filter(s => !principal.scopes.includes(s))
    if (missing.length > 0) throw errors.insufficientScope(required, missing)
  })

  await app.register(accounting)
  await app.register(webhooks)
}

export default tenant
