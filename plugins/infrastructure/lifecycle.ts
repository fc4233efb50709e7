import type { IncomingMessage, ServerResponse } from 'node:http'
import { Server } from 'node:net'
import { setTimeout as sleep } from 'node:timers/promises'
import type { FastifyInstance } from 'fastify'
import closeWithGrace from 'close-with-grace'
import fp from 'fastify-plugin'

declare module 'fastify' {
  interface FastifyInstance {
    lifecycle: {
      /** True from the moment shutdown begins: readiness answers 503 and every answer closes its connection. */
      readonly draining: boolean
      /**
       * Begins the shutdown at once (the signal handler calls it before `app.close()`); the listener closes after
       * `windowMs` (SHUTDOWN_DELAY_SECONDS), at once by default.
       */
      drain(windowMs?: number): void
    }
  }
}

/** How long shutdown waits for requests in flight; within server.ts's grace, which also covers deliveries. */
const IN_FLIGHT_BOUND_MS = 10_000

/** How long idle keep-alive connections are left to their clients once the requests in flight are done. */
const IDLE_GRACE_MS = 2_000

/** Long-lived streams (an MCP session's GET stream) are not waited for: the MCP plugin closes them after. */
const isStream = (method: string, url: string): boolean => method === 'GET' && url.startsWith('/mcp')

/**
 * The shutdown order (docs/operations.md#shutdown). On drain: readiness says 503 and every answer from then on
 * carries `Connection: close`; the listener stops accepting (after the drain window, if any). Then the requests
 * in flight finish (bounded); only after that do the later preClose and onClose hooks close MCP sessions, drain
 * the delivery worker and close the database.
 */
export default fp(async app => {
  let draining = false
  const inFlight = new Map<IncomingMessage, ServerResponse>()

  let listenerClosed: Promise<void> | undefined
  const openConnections = () =>
    new Promise<number>(resolve => app.server.getConnections((err, n) => resolve(err ? 0 : n)))

  const stopAccepting = (): void => {
    // Not http.Server#close, which would also cut the idle keep-alive connections at once and race a client writing
    // its next request on one (ECONNRESET). Fastify's own close() cuts those still idle once the requests in flight
    // are done and the idle grace is over.
    if (app.server.listening) Server.prototype.close.call(app.server)
  }

  const drain = (windowMs = 0): void => {
    if (draining) return
    draining = true
    // Without a window the listener closes first, before any answer below can send a client to reconnect: a
    // connection still in the kernel's backlog when the listener closes is reset, one after it is refused.
    if (windowMs === 0) stopAccepting()
    // For `windowMs` new connections are still taken (and told 503 by readiness), so that a load balancer that
    // polls readiness sees the instance leave before connections are refused.
    listenerClosed = windowMs === 0
      ? Promise.resolve()
      : new Promise<void>(resolve => setTimeout(resolve, windowMs).unref()).then(stopAccepting)
    // Answers not yet started close their connection; the client opens a new one, to another instance.
    for (const res of inFlight.values()) if (!res.headersSent) res.shouldKeepAlive = false
  }
  app.decorate('lifecycle', {
    get draining () { return draining },
    drain
  })

  // Callback hooks, not async ones: they run on every request, and a promise each is measurable (BENCHMARKS.md).
  app.addHook('onRequest', (request, reply, next) => {
    if (draining) reply.raw.shouldKeepAlive = false
    if (!isStream(request.method, request.url)) inFlight.set(request.raw, reply.raw)
    next()
  })
  // onResponse also runs for hijacked answers (the MCP transport's). An answer whose client went away may never
  // finish: the shutdown wait below prunes those rather than a listener per request watching for them.
  app.addHook('onResponse', (request, _reply, next) => {
    inFlight.delete(request.raw)
    next()
  })
  const busy = (): number => {
    for (const [req, res] of inFlight) if (res.destroyed || res.writableFinished) inFlight.delete(req)
    return inFlight.size
  }

  app.addHook('preClose', async () => {
    // A close without a signal first (tests, embedding) skips the idle grace: nobody is being drained gently.
    const signalled = draining
    drain()
    await listenerClosed
    const bound = Date.now() + IN_FLIGHT_BOUND_MS
    while (busy() > 0 && Date.now() < bound) await sleep(10)
    if (inFlight.size > 0) app.log.warn({ in_flight: inFlight.size }, 'shutdown: requests still in flight')
    if (!signalled) return
    // Idle keep-alive connections get a moment to carry one more request (answered with Connection: close) before
    // Fastify's close() cuts them: a client that writes just as its connection is cut sees ECONNRESET.
    const deadline = Date.now() + IDLE_GRACE_MS
    while (Date.now() < deadline && (await openConnections()) > 0) await sleep(25)
  })
}, { name: 'lifecycle' })

/** What close-with-grace would also listen to, left to Node's defaults: only SIGTERM and SIGINT stop gracefully. */
const LEFT_TO_NODE: closeWithGrace.AllEvents[] = [
  'SIGHUP', 'SIGQUIT', 'SIGILL', 'SIGTRAP', 'SIGABRT', 'SIGBUS', 'SIGFPE', 'SIGSEGV', 'SIGUSR2', 'beforeExit'
]

/**
 * On SIGTERM, SIGINT or an uncaught error (an exception or a rejected promise nothing caught): `begin` at once (the
 * server's drain; it is given the signal, none after an error), then `app.close()`, then exit 0 (1 after an uncaught
 * error or a failed close). close-with-grace, Fastify's own convention, installs the listeners and exits 1 when
 * `graceMs` runs out; a second signal or error during the shutdown exits 1 at once.
 */
export function closeGracefully (
  app: FastifyInstance,
  graceMs: number,
  begin: (signal: string | undefined) => void = () => {}
): { uninstall(): void } {
  return closeWithGrace({
    delay: graceMs,
    logger: app.log,
    skip: LEFT_TO_NODE,
    onTimeout: () => app.log.error('shutdown took too long; exiting')
  }, async ({ signal, err }) => {
    if (err) app.log.error({ err }, 'uncaught error; shutting down')
    else app.log.info({ signal }, 'shutting down')
    begin(signal)
    await app.close().catch((closeErr: unknown) => {
      app.log.error({ err: closeErr }, 'shutdown failed')
      process.exit(1)
    })
  })
}
