import { randomUUID } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import { finished } from 'node:stream'
import type { FastifyBaseLogger, FastifyReply, FastifyRequest } from 'fastify'
import {
  isInitializeRequest,
  SUPPORTED_PROTOCOL_VERSIONS,
  type AuthInfo,
  type InitializeRequest
} from '@modelcontextprotocol/server'
import { NodeStreamableHTTPServerTransport } from '@modelcontextprotocol/node'
import type { Principal } from '../auth/access-state.js'
import type { Db } from '../../infrastructure/db/index.js'
import { errors, sendError } from '../../infrastructure/errors.js'
import { hasNul, requestTimedOut, type GatewayServer } from './server.js'
import { createSessionStore, SESSION_ENDED_CHANNEL, type StoredSession } from './session-store.js'

/** A 2025-11-25 session as this instance knows it: the stored record, and what this instance has of its own. */
export interface Session extends StoredSession {
  /** The last time this instance recorded in the store (or read from it). */
  written: number
  /** Whether the record was read or written while notifications flowed, so that its end would have been heard. */
  trusted: boolean
  /** The GET event streams open on this instance. */
  streams: Set<NodeStreamableHTTPServerTransport>
  /** Ids of the JSON-RPC requests in progress on this instance. */
  inFlight: Set<string | number>
}

type JsonRpcId = string | number

/**
 * The 2025-11-25 sessions, usable on every instance (docs/mcp.md#sessions-on-every-instance). A session is a row
 * in the database: whose it is and what its `initialize` negotiated. No SDK server lives with it: each request is
 * served by a server and a transport made for that request, the server told what the handshake negotiated, and both
 * go when the answer is written; so any instance serves any session, and a restart loses none.
 *
 * Instances remember the sessions they serve and read the row again only when they have not heard from the
 * database for them: an ended session is announced to all (`SESSION_ENDED_CHANNEL`), and while notifications are
 * down every request reads the row. Use is recorded at most once every `touchEvery` per instance; idle expiry
 * allows for that lag, so across instances a session lives its idle time give or take `touchEvery`, and exactly on
 * the one instance that served it alone.
 */
export function createSessions (opts: {
  db: Db
  newServer: () => GatewayServer
  idleMs: number
  /** How long a request may take before it is answered with an error and its resources freed. */
  requestTimeoutMs: number
  authInfo: (principal: Principal) => AuthInfo
  now: () => number
  log: FastifyBaseLogger
}) {
  const { db, idleMs, now, log } = opts
  const store = createSessionStore(db)
  const touchEvery = Math.min(60_000, idleMs / 10)
  const known = new Map<string, Session>()
  /** Every per-request transport still open (answers being written, GET streams): closed at shutdown. */
  const live = new Set<NodeStreamableHTTPServerTransport>()

  /**
   * Bumped whenever an end is heard or notifications were lost: a row read while that happened may be the copy from
   * before the end, and is not trusted.
   */
  let generation = 0

  /** Forgets a session on this instance: its event streams end. */
  function forget (id: string): void {
    generation++
    const session = known.get(id)
    if (!session) return
    known.delete(id)
    for (const stream of session.streams) stream.close().catch(() => {})
  }

  /** Ends a session everywhere. */
  async function end (id: string): Promise<void> {
    forget(id)
    await store.remove(id)
  }

  const aliveHere = (s: Session): boolean => s.lastSeen >= now() - idleMs

  /**
   * The session as the store has it, merged with what this instance knows; undefined when it has ended or been
   * idle too long. A use recorded by another instance may be up to `touchEvery` older than its latest use.
   */
  async function reload (id: string, mine: Session | undefined): Promise<Session | undefined> {
    const [healthy, before] = [db.notificationsHealthy, generation]
    const stored = await store.find(id)
    const trusted = healthy && generation === before
    if (!stored) {
      forget(id)
      return undefined
    }
    const othersUse = mine && stored.lastSeen === mine.written ? stored.lastSeen : stored.lastSeen + touchEvery
    const lastSeen = Math.max(mine?.lastSeen ?? 0, othersUse)
    if (lastSeen < now() - idleMs) {
      await end(id)
      return undefined
    }
    const session: Session =
      mine ?? { ...stored, written: stored.lastSeen, trusted, streams: new Set(), inFlight: new Set() }
    Object.assign(session, { lastSeen, written: Math.max(session.written, stored.lastSeen), trusted })
    known.set(id, session)
    return session
  }

  /** Opens a session for an `initialize`, recorded before the answer can reach the client. */
  async function open (principal: Principal | null, params: InitializeRequest['params']): Promise<Session> {
    const at = now()
    const session: Session = {
      id: randomUUID(),
      installId: principal?.installId ?? null,
      // What the SDK's server negotiates (and answers): the revision asked for when it serves it, else its newest.
      protocolVersion: SUPPORTED_PROTOCOL_VERSIONS.includes(params.protocolVersion)
        ? params.protocolVersion
        : SUPPORTED_PROTOCOL_VERSIONS[0]!,
      clientInfo: params.clientInfo,
      clientCapabilities: params.capabilities as Record<string, unknown>,
      lastSeen: at,
      written: at,
      trusted: db.notificationsHealthy,
      streams: new Set(),
      inFlight: new Set()
    }
    await store.insert(session)
    known.set(session.id, session)
    return session
  }

  /** Drops what this instance keeps of idle sessions, and deletes the rows no instance could still serve. */
  async function sweep (): Promise<void> {
    for (const [id, s] of known) {
      // A session with an event stream here may be in use elsewhere: the store decides.
      if (!aliveHere(s)) {
        if (s.streams.size === 0) forget(id)
        else await reload(id, s)
      }
    }
    await store.removeIdle(now() - idleMs - touchEvery)
  }
  const sweeper = setInterval(() => {
    sweep().catch(err => log.warn({ err }, 'mcp: session sweep failed'))
  }, Math.min(30_000, Math.max(100, idleMs / 4)))
  sweeper.unref()

  return {
    async listen (): Promise<void> {
      await db.listen(SESSION_ENDED_CHANNEL, forget)
      db.onNotificationsLost(() => {
        generation++
        for (const s of known.values()) s.trusted = false
      })
    },

    /** Sessions this instance has served within their idle time. */
    size: (): number => {
      let n = 0
      for (const s of known.values()) if (aliveHere(s)) n++
      return n
    },

    /** Transports of this instance still writing an answer or holding an event stream. */
    openTransports: (): number => live.size,

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
        let session = known.get(sessionId)
        if (!session || !session.trusted || !db.notificationsHealthy || !aliveHere(session)) {
          session = await reload(sessionId, session)
        }
        if (!session || session.installId !== (principal?.installId ?? null)) {
          sendError(reply, errors.mcpSessionNotFound())
          return undefined
        }
        const at = now()
        session.lastSeen = at
        if (at - session.written >= touchEvery) {
          session.written = at
          // A session whose row is gone (ended while this instance trusted its copy) is forgotten.
          store.touch(session.id, at).then(found => { if (!found) forget(session.id) },
            err => log.warn({ err }, 'mcp: could not record a session\'s use'))
        }
        return { session, opened: false }
      }
      if (request.method !== 'POST' || !isInitializeRequest(request.body)) {
        sendError(reply, errors.mcpNoSession())
        return undefined
      }
      // The handshake is stored (client info and capabilities): text the database cannot hold is refused here.
      if (hasNul(request.body.params)) {
        sendError(reply, errors.mcpNulParams((request.body as { id?: JsonRpcId }).id ?? null))
        return undefined
      }
      return { session: await open(principal, request.body.params), opened: true }
    },

    /**
     * Marks a JSON-RPC request of the session as in progress on this instance until `done`. A request whose id is
     * already in progress is refused at once (the id names the answer: a second one could never be told apart)
     * and the answer is undefined.
     */
    begin (session: Session, reply: FastifyReply, id: JsonRpcId): (() => void) | undefined {
      if (session.inFlight.has(id)) {
        sendError(reply, errors.mcpIdInUse(id))
        return undefined
      }
      session.inFlight.add(id)
      return () => session.inFlight.delete(id)
    },

    /**
     * Serves a request of the session through the SDK: a server made for it and told what the session negotiated,
     * on a transport of its own, both closed once the answer is written (or the client goes). A request unanswered
     * after `requestTimeoutMs` is answered with a JSON-RPC error and its resources are freed.
     */
    async serve (
      session: Session,
      opened: boolean,
      request: FastifyRequest,
      reply: FastifyReply,
      principal: Principal | null,
      server: GatewayServer
    ): Promise<void> {
      const stream = request.method === 'GET'
      if (stream && session.streams.size > 0) {
        // A session has one event stream (here, per instance), so that a token cannot hold sockets open without bound.
        sendError(reply, errors.mcpStreamConflict())
        return
      }
      if (!opened) server.resume(session)
      const transport = new NodeStreamableHTTPServerTransport({
        sessionIdGenerator: undefined,
        onsessionclosed: () => end(session.id)
      })
      live.add(transport)
      if (stream) session.streams.add(transport)
      const body = request.body as { id?: JsonRpcId, method?: unknown } | undefined
      const id = request.method === 'POST' && body?.method !== undefined ? body.id : undefined
      const timer = id === undefined
        ? undefined
        : setTimeout(() => {
          const { code, message } = requestTimedOut(opts.requestTimeoutMs)
          transport.send({ jsonrpc: '2.0', id, error: { code, message } }, { relatedRequestId: id })
            .catch(() => {}).finally(() => { transport.close().catch(() => {}) })
        }, opts.requestTimeoutMs)
      // Also when the client went away already, while the session was being read: then at once.
      finished(reply.raw, () => {
        clearTimeout(timer)
        live.delete(transport)
        session.streams.delete(transport)
        transport.close().catch(() => {})
        server.close().catch(() => {})
      })
      await server.connect(transport)

      const raw = request.raw as IncomingMessage & { auth?: AuthInfo }
      if (principal) raw.auth = opts.authInfo(principal)
      // From here the SDK writes the answer; Fastify steps aside, keeping the headers hooks have set.
      reply.hijack()
      for (const [name, value] of Object.entries(reply.getHeaders())) {
        if (value !== undefined) reply.raw.setHeader(name, value)
      }
      await transport.handleRequest(raw, reply.raw, request.body)
    },

    async closeAll (): Promise<void> {
      clearInterval(sweeper)
      await Promise.all([...live].map(t => t.close().catch(() => {})))
      known.clear()
    }
  }
}
