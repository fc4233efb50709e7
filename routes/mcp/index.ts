import rateLimit from '@fastify/rate-limit'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import type { Principal } from '../../plugins/domain/auth/access-state.js'
import { ApiError, errors } from '../../plugins/infrastructure/errors.js'
import { counters } from '../../plugins/infrastructure/rate-limit.js'

const OPENED = Symbol('mcp session opened by this request')
const sessionOf = (r: FastifyRequest): string =>
  (r as FastifyRequest & { [OPENED]?: string })[OPENED] ?? String(r.headers['mcp-session-id'])
const CALLER = Symbol('the principal of a stateless request')
/** A stateless request's budget: its token's install's, or, without a token, its address's (docs/mcp.md). */
const callerOf = (r: FastifyRequest): string => {
  const principal = (r as FastifyRequest & { [CALLER]?: Principal | null })[CALLER]
  return principal ? `install:${principal.installId}` : `anonymous:${r.ip}`
}

const LIMITED = Symbol('seconds until a request over its rate limit may be sent again')
type Limited = FastifyRequest & { [LIMITED]?: number }

/**
 * The id of the JSON-RPC request in the body, for the answers that refuse it; null when the body is not one request
 * with an id (a notification, a batch, anything else), as JSON-RPC 2.0 has it when the id cannot be told.
 */
function requestIdOf (body: unknown): string | number | null {
  if (typeof body !== 'object' || body === null || Array.isArray(body)) return null
  const { jsonrpc, method, id } = body as { jsonrpc?: unknown, method?: unknown, id?: unknown }
  if (jsonrpc !== '2.0' || typeof method !== 'string') return null
  return typeof id === 'string' || (typeof id === 'number' && Number.isFinite(id)) ? id : null
}

const LOOPBACK_LISTEN = new Set(['127.0.0.1', 'localhost', '::1', '[::1]'])
const LOOPBACK_HOSTS = new Set(['localhost', '127.0.0.1', '[::1]'])

/**
 * `/mcp` (docs/rules.md#mcp-endpoint): the Host/Origin guard, the per-IP and per-session rate limits and the
 * access token answer first, in that order; a stateless (2026-07-28) request then counts against its install's
 * limit, which needs the token; only then is the request handed to the MCP plugin. A request over its per-IP or
 * per-session limit is counted as it arrives and refused once its body is read, so that the refusal carries the
 * request's id.
 */
const mcp: FastifyPluginAsyncTypebox = async app => {
  const { mcpBaseUrl, mcpAllowedOrigins, mcpRateLimitIp, mcpRateLimitSession, host, mcpAllowAnonymous } = app.config
  const ownHost = new URL(mcpBaseUrl).host.toLowerCase()
  // Any loopback name is as good as another when the service listens on loopback, or is advertised on it (the
  // development default when listening on every interface, as in a container).
  const loopbackListen = LOOPBACK_LISTEN.has(host) || LOOPBACK_HOSTS.has(new URL(mcpBaseUrl).hostname)
  const resourceMetadata = `${mcpBaseUrl}/.well-known/oauth-protected-resource/mcp`
  // What a client should ask for: the scopes the tools are wired to.
  const scope = [...new Set(app.mcp.tools.flatMap(t => t.requiredScopes))].sort().join(' ')

  // DNS rebinding: a page on another site must not reach a local server through a name it controls. An allowed
  // Origin also gets the CORS headers a browser needs to call /mcp.
  app.addHook('onRequest', async (request: FastifyRequest, reply: FastifyReply) => {
    const hostHeader = (request.headers.host ?? '').toLowerCase()
    const hostname = hostHeader.replace(/:\d+$/, '')
    if (hostHeader !== ownHost && !(loopbackListen && LOOPBACK_HOSTS.has(hostname))) {
      throw errors.mcpForbidden('Forbidden: Host header is not allowed.')
    }
    const origin = request.headers.origin
    if (origin === undefined) return
    if (!mcpAllowedOrigins.includes(origin)) throw errors.mcpForbidden('Forbidden: Origin is not allowed.')
    reply.headers({
      'access-control-allow-origin': origin,
      vary: 'Origin',
      // WWW-Authenticate: a browser client reads resource_metadata from the 401 to start OAuth.
      'access-control-expose-headers': 'mcp-session-id, mcp-protocol-version, www-authenticate'
    })
  })

  await app.register(rateLimit, {
    global: false,
    ...counters(app, 'mg-mcp-rl-'),
    // As on /public/v1: a Redis outage lets requests through, at once (plugins/infrastructure/rate-limit.ts).
    skipOnError: true,
    allowList: () => app.redisBypassed()
  })
  // The per-IP and per-session counts, both in one round trip to Redis (one command time-out at most when it is
  // silent), as `mg-mcp-rl-ip:<address>` and `mg-mcp-rl-session:<id>`, beside the per-install counts below.
  const count = app.rateBudgets('mg-mcp-rl-', 60_000)
  const sessionBudget = (r: FastifyRequest) => ({ key: `session:${sessionOf(r)}`, max: mcpRateLimitSession })
  // The seed's "60 a minute per session" for a revision without sessions: per install, shared by its instances.
  const perInstall = app.createRateLimit({
    max: mcpRateLimitSession,
    timeWindow: 60_000,
    keyGenerator: callerOf
  })
  const limit = async (request: FastifyRequest): Promise<void> => {
    const verdict = await count([
      { key: `ip:${request.ip}`, max: mcpRateLimitIp },
      ...(request.headers['mcp-session-id'] ? [sessionBudget(request)] : [])
    ])
    if (verdict.exceeded) (request as Limited)[LIMITED] = verdict.retryAfterSeconds
  }
  // The refusal of a request over its limit, once its body is read: with the request's id.
  const refuseLimited = async (request: FastifyRequest): Promise<void> => {
    const seconds = (request as Limited)[LIMITED]
    if (seconds === undefined) return
    // Answered: the error handler below lets this refusal through as it is.
    delete (request as Limited)[LIMITED]
    throw errors.mcpRateLimited(seconds, requestIdOf(request.body))
  }
  // A body that cannot be read (not JSON, too large, another media type) does not spare a request over its limit
  // the refusal: it goes without an id. Every other error goes on to the catalog's handler.
  const limitedErrors = (err: Error, request: FastifyRequest): never => {
    const seconds = (request as Limited)[LIMITED]
    throw seconds === undefined ? err : errors.mcpRateLimited(seconds)
  }

  async function principalOf (request: FastifyRequest): Promise<Principal | null> {
    if (request.headers.authorization === undefined && mcpAllowAnonymous) return null
    try {
      return await app.publicAuth.authenticate(request.headers.authorization, 'mcp')
    } catch (err) {
      if (err instanceof ApiError && err.statusCode === 401) throw errors.mcpUnauthorized(err, resourceMetadata, scope)
      throw err
    }
  }

  const handler = async (request: FastifyRequest, reply: FastifyReply): Promise<void> => {
    if (
      request.method === 'POST' &&
      (typeof request.body !== 'object' || request.body === null || Array.isArray(request.body))
    ) {
      throw errors.mcpInvalidRequest(400, 'the body must be one JSON-RPC message, a JSON object.')
    }
    const principal = await principalOf(request)
    if (app.mcp.isStateless(request)) {
      const verdict = await perInstall(Object.assign(request, { [CALLER]: principal }))
      if (!verdict.isAllowed && verdict.isExceeded) {
        throw errors.mcpRateLimited(verdict.ttlInSeconds, requestIdOf(request.body))
      }
    }
    const opened = await app.mcp.handle(request, reply, principal)
    // The initialize that opened a session is the session's first request, and counts as such.
    if (opened) await count([sessionBudget(Object.assign(request, { [OPENED]: opened }))])
  }
  const schema = { hide: true }
  app.post('/mcp', {
    schema,
    onRequest: limit,
    preValidation: refuseLimited,
    errorHandler: limitedErrors,
    config: { jsonRpcErrors: true }
  }, handler)
  app.get('/mcp', { schema }, handler)
  app.delete('/mcp', { schema }, handler)
  // CORS preflight for browser clients on an allowed Origin (the guard above has checked it).
  app.options('/mcp', { schema }, async (_request, reply) =>
    reply
      .code(204)
      .headers({
        'access-control-allow-methods': 'GET, POST, DELETE',
        'access-control-allow-headers':
          'authorization, content-type, accept, mcp-session-id, mcp-protocol-version, mcp-method, mcp-name, ' +
          'last-event-id',
        'access-control-max-age': '600'
      })
      .send()
  )
}

export default mcp
