import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { errors } from '../../plugins/infrastructure/errors.js'
import type { Install } from '../../plugins/domain/installs/store.js'
import { errorResponses, USER_ERRORS } from '../../schemas/error-responses.js'
import { TenantParams } from '../../schemas/identity.js'
import { InstallListing, InstallParams, UninstalledRecord } from '../../schemas/installs.js'

const view = (i: Install) => ({
  installId: i.installId,
  clientId: i.clientId,
  appSlug: i.appSlug,
  appName: i.appName,
  apiKeyEnabled: i.apiKeyEnabled,
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
  const tags = ['installs']
  const security = [{ userSession: [] }]

  app.get('/orgs/:orgId/entities/:entityId/installs', {
    schema: {
      tags,
      security,
      operationId: 'listInstalls',
      summary: 'List the installs of an entity',
      description: 'Every install of an entity of the signed-in user\'s organisation, active and uninstalled, ' +
        'with its app\'s name and API key state (`Status` is the install\'s: an active install of an app whose ' +
        'key is disabled stays `active`, and `apiKeyEnabled` is false). The record\'s casing (camelCase, a ' +
        'capital `Status`) is fixed by the interface (docs/rules.md#json-casings).',
      params: TenantParams,
      response: { 200: InstallListing, ...errorResponses(...USER_ERRORS, errors.notMemberOfTenant()) }
    }
  }, async (request) => {
    const { orgId, entityId } = request.params
    if (request.sessionUser!.orgRefId !== orgId) throw errors.notMemberOfTenant()
    return { installs: (await app.installs.listForEntity(orgId, entityId)).map(view) }
  })

  app.delete('/installs/:installId', {
    schema: {
      tags,
      security,
      operationId: 'uninstall',
      summary: 'Uninstall an app',
      description: 'At once the install\'s access tokens stop working, its refresh tokens are revoked and its ' +
        'webhook subscriptions stop. Answers the install as it is now.',
      params: InstallParams,
      response: { 200: UninstalledRecord, ...errorResponses(...USER_ERRORS, errors.installNotFound()) }
    }
  }, async (request) => {
    const removed = await app.installs.uninstall(request.sessionUser!.orgRefId, request.params.installId)
    if (!removed) throw errors.installNotFound()
    return view(removed)
  })
}

export default installs
