import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { requireAccessToken } from '../../../plugins/auth/public-auth.js'
import { errors } from '../../../plugins/errors.js'
import { perInstallRateLimit } from '../../../plugins/rate-limit.js'
import scopes from '../../../plugins/scopes.js'
import tenantGuard from '../../../plugins/tenant-guard.js'
import { errorResponses } from '../../../schemas/errors.js'
import { Identity, TenantParams } from '../../../schemas/identity.js'
import { Type } from '@sinclair/typebox'
import webhooks from './webhooks.js'

const TENANT = '/orgs/:orgId/entities/:entityId'

/** Read routes whose handlers are not built yet: the whole pipeline runs, then 501 (contract 4). */
const READ_ROUTES = [
  { path: '/invoices', scope: 'invoices:read', summary: 'List invoices' },
  { path: '/invoices/:id', scope: 'invoices:read', summary: 'Get an invoice' },
  { path: '/bills', scope: 'bills:read', summary: 'List bills' },
  { path: '/customers', scope: 'customers:read', summary: 'List customers' }
]

/** Error statuses every authenticated public route can answer. */
export const PUBLIC_ERRORS = [401, 429, 500]
export const TENANT_ERRORS = [...PUBLIC_ERRORS, 403]

/**
 * `/public/v1`: the pipeline of contract 3.4 is four hooks attached to every route of this context, in order:
 * access token (rows 1-5), per-install rate limit, tenant guard (row 6), scopes (row 7).
 */
const publicV1: FastifyPluginAsyncTypebox = async (app) => {
  await app.register(requireAccessToken)
  await app.register(perInstallRateLimit)
  await app.register(tenantGuard)
  await app.register(scopes)

  app.get('/me', {
    schema: {
      tags: ['identity'],
      summary: 'The install behind the access token',
      security: [{ accessToken: [] }],
      response: { 200: Identity, ...errorResponses(...PUBLIC_ERRORS) }
    }
  }, async (request) => {
    const p = request.principal!
    return {
      install_id: p.installId,
      client_id: p.clientId,
      app_slug: p.appSlug,
      org_ref_id: p.orgRefId,
      entity_ref_id: p.entityRefId,
      scopes: p.scopes
    }
  })

  for (const route of READ_ROUTES) {
    const template = `/public/v1${TENANT}${route.path}`.replace(/:(\w+)/g, '{$1}')
    app.get(TENANT + route.path, {
      config: { scopes: [route.scope] },
      schema: {
        tags: ['accounting'],
        summary: route.summary,
        description: `Requires \`${route.scope}\`. Not built yet: answers 501 \`not_implemented\` once the token, tenant and scope checks pass.`,
        params: route.path.includes(':id') ? Type.Object({ ...TenantParams.properties, id: Type.String() }) : TenantParams,
        response: errorResponses(...TENANT_ERRORS, 501)
      }
    }, async () => {
      throw errors.notImplemented('GET', template)
    })
  }

  await app.register(webhooks)
}

export default publicV1
