import fp from 'fastify-plugin'
import type { FastifyRequest } from 'fastify'
import { errors } from './errors.js'

/**
 * Row 6 of the public pipeline: on routes under `/orgs/:orgId/entities/:entityId`, the path tenant must be the
 * token's. Decided from the token alone, so the answer says nothing about other tenants.
 */
export default fp(async (app) => {
  const guard = async (request: FastifyRequest): Promise<void> => {
    const { orgId, entityId } = request.params as { orgId: string, entityId: string }
    const principal = request.principal!
    if (orgId !== principal.orgRefId || entityId !== principal.entityRefId) throw errors.tenantMismatch()
  }
  app.addHook('onRoute', route => {
    if (!route.url.includes(':orgId') || !route.url.includes(':entityId')) return
    route.onRequest = [...[route.onRequest ?? []].flat(), guard]
  })
}, { name: 'tenant-guard', dependencies: ['public-auth'] })
