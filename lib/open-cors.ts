import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'

/**
 * CORS for what any web page may call without credentials: the discovery documents, the signing keys, and the
 * registration, token and revocation endpoints. Browser-based MCP clients (the Inspector's OAuth flow, web agents)
 * run discovery and the token exchange from their own origin. None of these reads a cookie, so `*` exposes nothing
 * that a server-side caller could not already get; the consent page and `/mcp` keep their own rules.
 */
export async function anyOrigin (_request: FastifyRequest, reply: FastifyReply, payload: unknown): Promise<unknown> {
  reply.headers({
    'access-control-allow-origin': '*',
    'access-control-expose-headers': 'www-authenticate, retry-after'
  })
  return payload
}

/** Answers the preflight of a path opened by `anyOrigin`. */
export function preflight (app: FastifyInstance, path: string, methods: string): void {
  app.options(path, { schema: { hide: true } }, async (_request, reply) =>
    reply
      .code(204)
      .headers({
        'access-control-allow-origin': '*',
        'access-control-allow-methods': methods,
        'access-control-allow-headers': 'authorization, content-type, accept, mcp-protocol-version',
        'access-control-max-age': '600'
      })
      .send()
  )
}
