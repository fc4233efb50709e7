import fp from 'fastify-plugin'
import type { FastifyRequest } from 'fastify'
import { errors } from './errors.js'

declare module 'fastify' {
  interface FastifyContextConfig {
    /** Scopes the install must hold, all of them. */
    scopes?: string[]
  }
}

/** Row 7 of the public pipeline: a route's `config.scopes` must all be granted. Also documents them in OpenAPI. */
export default fp(async (app) => {
  app.addHook('onRoute', route => {
    const required = route.config?.scopes
    if (!required?.length) return
    const check = async (request: FastifyRequest): Promise<void> => {
      const granted = request.principal!.scopes
      const missing = required.filter(s => !granted.includes(s))
      if (missing.length > 0) throw errors.insufficientScope(required, missing)
    }
    route.onRequest = [...[route.onRequest ?? []].flat(), check]
    if (route.schema) route.schema = { ...route.schema, security: [{ accessToken: required }] }
  })
}, { name: 'scopes', dependencies: ['public-auth'] })
