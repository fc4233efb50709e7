import { readdirSync } from 'node:fs'
import { basename, extname, join } from 'node:path'
import { pathToFileURL } from 'node:url'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { errors } from '../../../../plugins/infrastructure/errors.js'

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
 * A new tenant route is a new file in this folder: every file here is registered in this context.
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

  for (const file of routeFiles()) {
    const url = pathToFileURL(join(import.meta.dirname, file)).href
    const routes = await import(url) as { default: FastifyPluginAsyncTypebox }
    await app.register(routes.default)
  }
}

/**
 * Every other module of this folder, each a route plugin of this context. Modules are found by this file's own
 * extension, so the same code loads `.ts` under tsx or tap and `.js` once compiled. (@fastify/autoload does this
 * too, but recognises TypeScript only under the runtimes it knows: it refuses `node --import tsx`.)
 */
function routeFiles (): string[] {
  const self = basename(import.meta.filename)
  const ext = extname(self)
  return readdirSync(import.meta.dirname)
    .filter(f => f !== self && extname(f) === ext && !f.endsWith('.d.ts'))
    .sort()
}

export default tenant
