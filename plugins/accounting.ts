import { Type, type TSchema } from '@sinclair/typebox'
import fp from 'fastify-plugin'
import { InvoiceIdInput, NoInput, NotImplementedOutput } from '../schemas/mcp.js'
import { errors } from './errors.js'
import { READ_ONLY } from './mcp/registry.js'

/** One accounting read route: its REST path under the tenant prefix, its tool, and the scope both require. */
export interface ReadRoute {
  /** Under `/public/v1/orgs/:orgId/entities/:entityId`, in Fastify's `:param` form. */
  path: string
  tool: string
  title: string
  scope: string
  /** The tool's arguments beyond the tenant (which the token fixes). */
  toolInput: TSchema
  /** The REST path parameters beyond the tenant. */
  params: Record<string, TSchema>
}

const READ_ROUTES: ReadRoute[] = [
  {
    path: '/invoices',
    tool: 'list_invoices',
    title: 'List invoices',
    scope: 'invoices:read',
    toolInput: NoInput,
    params: {}
  },
  {
    path: '/invoices/:id',
    tool: 'get_invoice',
    title: 'Get an invoice',
    scope: 'invoices:read',
    toolInput: InvoiceIdInput,
    params: { id: Type.String({ description: 'The invoice id.', examples: ['inv_1042'] }) }
  },
  { path: '/bills', tool: 'list_bills', title: 'List bills', scope: 'bills:read', toolInput: NoInput, params: {} },
  {
    path: '/customers',
    tool: 'list_customers',
    title: 'List customers',
    scope: 'customers:read',
    toolInput: NoInput,
    params: {}
  }
]

/** The path as OpenAPI and error messages write it: `/public/v1/orgs/{orgId}/…`. */
export const publicPath = (route: ReadRoute): string =>
  `/public/v1/orgs/:orgId/entities/:entityId${route.path}`.replace(/:(\w+)/g, '{$1}')

declare module 'fastify' {
  interface FastifyInstance {
    accounting: {
      readonly readRoutes: readonly ReadRoute[]
      /** Answers a read route once its checks passed. None is built yet: always `not_implemented`. */
      read(route: ReadRoute): Promise<never>
    }
  }
}

/**
 * The accounting read routes: one table feeds the REST routes (routes/public/v1/tenant/accounting.ts) and their
 * MCP tools, so both surfaces list the same routes, scopes and answers.
 */
export default fp(
  async app => {
    const read = async (route: ReadRoute): Promise<never> => {
      throw errors.notImplemented('GET', publicPath(route))
    }
    app.decorate('accounting', { readRoutes: READ_ROUTES, read })

    for (const route of READ_ROUTES) {
      app.mcp.addTool(
        {
          name: route.tool,
          title: route.title,
          description:
            `${route.title} in the token's tenant. Requires ${route.scope}. Not built yet: answers ` +
            `not_implemented, like ${publicPath(route)}.`,
          inputSchema: route.toolInput,
          outputSchema: NotImplementedOutput,
          annotations: READ_ONLY,
          requiredScopes: [route.scope],
          public: false,
          tags: ['accounting']
        },
        async () => read(route)
      )
    }
  },
  { name: 'accounting', dependencies: ['mcp'] }
)
