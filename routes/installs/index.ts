import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { errors } from '../../plugins/errors.js'
import type { Install } from '../../plugins/installs.js'
import { errorResponses } from '../../schemas/errors.js'
import { TenantParams } from '../../schemas/identity.js'
import { InstallListing, InstallParams, InstallRecord } from '../../schemas/installs.js'

const view = (i: Install) => ({
  installId: i.installId,
  clientId: i.clientId,
  appSlug: i.appSlug,
  orgRefId: i.orgRefId,
  entityRefId: i.entityRefId,
  scopes: i.scopes,
  Status: i.status,
  createdAt: i.createdAt.toISOString(),
  uninstalledAt: i.uninstalledAt?.toISOString() ?? null
})

/** Installs of an organisation, seen and removed by its users (docs/rules.md#installs). */
const installs: FastifyPluginAsyncTypebox = async (app) => {
  app.addHook('onRequest', app.userSessions.requireUser)
  const tags = ['internal: installs']

  app.get('/orgs/:orgId/entities/:entityId/installs', {
    schema: { tags, params: TenantParams, response: { 200: InstallListing, ...errorResponses(401, 403, 503) } }
  }, async (request) => {
    const { orgId, entityId } = request.params
    if (request.sessionUser!.orgRefId !== orgId) throw errors.notMemberOfTenant()
    return { installs: (await app.installs.listForEntity(orgId, entityId)).map(view) }
  })

  app.delete('/installs/:installId', {
    schema: { tags, params: InstallParams, response: { 200: InstallRecord, ...errorResponses(401, 404, 503) } }
  }, async (request) => {
    const removed = await app.installs.uninstall(request.sessionUser!.orgRefId, request.params.installId)
    if (!removed) throw errors.notFound('No active install with this id in your organisation.')
    return view(removed)
  })
}

export default installs
