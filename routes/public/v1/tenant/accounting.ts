import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { publicPath } from '../../../../plugins/accounting.js'
import { errors } from '../../../../plugins/errors.js'
import { errorResponses, scopeError, TENANT_ERRORS } from '../../../../schemas/error-responses.js'
import { TenantParams } from '../../../../schemas/identity.js'

/** The accounting read routes, from the table their MCP tools also come from (plugins/accounting.ts). */
const accounting: FastifyPluginAsyncTypebox = async (app) => {
  for (const route of app.accounting.readRoutes) {
    app.get(route.path, {
      config: { scopes: [route.scope] },
      schema: {
        tags: ['accounting'],
        // The tool's name in camelCase: listInvoices is the REST twin of the list_invoices tool.
        operationId: route.tool.replace(/_(\w)/g, (_m, c: string) => c.toUpperCase()),
        summary: route.title,
        description: `Requires \`${route.scope}\`. Not built yet: answers 501 \`not_implemented\` once the token, ` +
          'tenant and scope checks pass.',
        params: Type.Object({ ...TenantParams.properties, ...route.params }),
        response: errorResponses(
          ...TENANT_ERRORS,
          scopeError(route.scope),
          errors.notImplemented('GET', publicPath(route))
        )
      }
    }, async () => app.accounting.read(route))
  }
}

export default accounting
