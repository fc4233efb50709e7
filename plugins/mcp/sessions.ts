import { randomUUID } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { isInitializeRequest, type AuthInfo, type Server } from '@modelcontextprotocol/server'
import { NodeStreamableHTTPServerTransport } from '@modelcontextprotocol/node'
import type { Principal } from '../auth/access-state.js'
import { errors, sendError } from '../errors.js'

export interface Session {
  transport: NodeStreamableHTTPServerTransport
  server: Server
  lastSeen: number
  /** The install whose token opened the session (null: none). Other credentials cannot use it. */
  installId: string | null
}

/**
 * The 2025-11-25 sessions of this instance: each an SDK server and its streamable-HTTP transport, in memory, so a
 * load balancer must keep a session on the instance that opened it (docs/scaling.md). Sessions idle for `idleMs`
 * on `now` (the app's clock) are closed: by a periodic sweep, and at once when one is counted or asked for, so that
 * an expired session is never served nor counted, whenever the sweep last ran.
 */
export function createSessions (opts: {
  newServer: () => Server
  idleMs: number
  authInfo: (principal: Principal) => AuthInfo
  now: () => number
}) {
  const sessions = new Map<string, Session>()

  async function close (id: string): Promise<void> {
    const session = sessions.get(id)
    if (!session) return
    sessions.delete(id)
    await session.transport.close().catch(() => {})
    await session.server.close().catch(() => {})
  }

  const expired = (s: Session): boolean => s.lastSeen < opts.now() - opts.idleMs

  /** Closes the expired sessions; each leaves the map at once, its transport and server close after. */
  function sweep (): void {
    for (const [id, s] of sessions) if (expired(s)) close(id).catch(() => {})
  }

  const sweeper = setInterval(sweep, Math.min(30_000, Math.max(100, opts.idleMs / 4)))
  sweeper.unref()

  async function open (principal: Principal | null): Promise<Session> {
    const entry: Session = {
      server: opts.newServer(),
      installId: principal?.installId ?? null,
      lastSeen: opts.now(),
      transport: new NodeStreamableHTTPServerTransport({
        sessionIdGenerator: randomUUID,
        onsessioninitialized: id => {
          sessions.set(id, entry)
        },
        onsessionclosed: close
      })
    }
    entry.transport.onclose = () => {
      if (entry.transport.sessionId) sessions.delete(entry.transport.sessionId)
    }
    await entry.server.connect(entry.transport)
    return entry
  }

  return {
    size: (): number => {
      sweep()
      return sessions.size
    },

    /**
     * The session a request belongs to, or a new one for an `initialize` without a session id; otherwise the error
     * is sent and the answer is undefined. A session answers only to the credentials that opened it: to anyone else
     * it does not exist.
     */
    async resolve (
      request: FastifyRequest,
      reply: FastifyReply,
      principal: Principal | null
    ): Promise<{ session: Session, opened: boolean } | undefined> {
      const header = request.headers['mcp-session-id']
      const sessionId = Array.isArray(header) ? header[0] : header
      if (sessionId) {
        let session = sessions.get(sessionId)
        if (session && expired(session)) {
          close(sessionId).catch(() => {})
          session = undefined
        }
        if (!session || session.installId !== (principal?.installId ?? null)) {
          sendError(reply, errors.mcpSessionNotFound())
          return undefined
        }
        session.lastSeen = opts.now()
        return { session, opened: false }
      }
      if (request.method !== 'POST' || !isInitializeRequest(request.body)) {
        sendError(reply, errors.mcpNoSession())
        return undefined
      }
      return { session: await open(principal), opened: true }
    },

    /** Hands the request to the session's transport, which writes the answer (JSON or an SSE stream). */
    async serve (session: Session, request: FastifyRequest, reply: FastifyReply, principal: Principal | null) {
      const raw = request.raw as IncomingMessage & { auth?: AuthInfo }
      if (principal) raw.auth = opts.authInfo(principal)
      // From here the SDK writes the answer; Fastify steps aside, keeping the headers hooks have set.
      reply.hijack()
      for (const [name, value] of Object.entries(reply.getHeaders())) {
        if (value !== undefined) reply.raw.setHeader(name, value)
      }
      await session.transport.handleRequest(raw, reply.raw, request.body)
    },

    async closeAll (): Promise<void> {
      clearInterval(sweeper)
      await Promise.all([...sessions.keys()].map(close))
    }
  }
}
