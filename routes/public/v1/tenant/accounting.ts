import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { errorResponses, TENANT_ERRORS } from '../../../../schemas/errors.js'
import { TenantParams } from '../../../../schemas/identity.js'

/** The accounting read routes, from the table their MCP tools also come from (plugins/accounting.ts). */
const accounting: FastifyPluginAsyncTypebox = async (app) => {
  for (const route of app.accounting.readRoutes) {
    app.get(route.path, {
      config: { scopes: [route.scope] },
      schema: {
        tags: ['accounting'],
        summary: route.title,
        description: `Requires \`${route.scope}\`. Not built yet: answers 501 \`not_implemented\` once the token, ` +
          'tenant and scope checks pass.',
        params: Type.Object({ ...TenantParams.properties, ...route.params }),
        response: errorResponses(...TENANT_ERRORS, 501)
      }
    }, async () => app.accounting.read(route))
  }
}

export default accounting
