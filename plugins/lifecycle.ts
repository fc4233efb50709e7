import type { ServerResponse } from 'node:http'
import { Server } from 'node:net'
import fp from 'fastify-plugin'

declare module 'fastify' {
  interface FastifyInstance {
    lifecycle: {
      /** True from the moment shutdown begins: readiness answers 503 and every answer closes its connection. */
      readonly draining: boolean
      /** Begins the shutdown at once (the signal handler calls it before `app.close()`). */
      drain(): void
    }
  }
}

/** How long shutdown waits for requests in flight; within server.ts's grace, which also covers deliveries. */
const IN_FLIGHT_BOUND_MS = 10_000

/** Long-lived streams (an MCP session's GET stream) are not waited for: the MCP plugin closes them after. */
const isStream = (method: string, url: string): boolean => method === 'GET' && url.startsWith('/mcp')

/**
 * The shutdown order (docs/operations.md#shutdown). On drain: readiness says 503, the listener stops accepting,
 * and every answer from then on carries `Connection: close`. Then the requests
 * in flight finish (bounded); only after that do the later preClose and onClose hooks close MCP sessions, drain
 * the delivery worker and close the database.
 */
export default fp(async app => {
  let draining = false
  const inFlight = new Set<ServerResponse>()
  let settled: (() => void) | undefined

  const drain = (): void => {
    if (draining) return
    draining = true
    // Answers not yet started close their connection; the client opens a new one, to another instance.
    for (const res of inFlight) if (!res.headersSent) res.shouldKeepAlive = false
    // Stops accepting new connections. Not http.Server#close, which would also cut the idle keep-alive connections
    // at once and race a client writing its next request on one (ECONNRESET): their next answer closes them, and
    // Fastify's own close() cuts those still idle once the requests in flight are done.
    if (app.server.listening) Server.prototype.close.call(app.server)
  }
  app.decorate('lifecycle', {
    get draining () { return draining },
    drain
  })

  app.addHook('onRequest', async (request, reply) => {
    if (draining) reply.raw.shouldKeepAlive = false
    if (isStream(request.method, request.url)) return
    const res = reply.raw
    inFlight.add(res)
    // 'close' also covers aborted and hijacked answers; onResponse covers injected ones, whose 'close' may not come.
    res.once('close', () => done(res))
  })
  app.addHook('onResponse', async (_request, reply) => { done(reply.raw) })
  const done = (res: ServerResponse): void => {
    if (inFlight.delete(res) && inFlight.size === 0) settled?.()
  }

  app.addHook('preClose', async () => {
    drain()
    if (inFlight.size === 0) return
    await new Promise<void>(resolve => {
      settled = resolve
      setTimeout(resolve, IN_FLIGHT_BOUND_MS).unref()
    })
    if (inFlight.size > 0) app.log.warn({ in_flight: inFlight.size }, 'shutdown: requests still in flight')
  })
}, { name: 'lifecycle' })
