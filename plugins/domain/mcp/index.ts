import { finished } from 'node:stream'
import fp from 'fastify-plugin'
import type { FastifyReply, FastifyRequest } from 'fastify'
import {
  createMcpHandler,
  ProtocolError,
  ProtocolErrorCode,
  ResourceNotFoundError,
  SERVER_INFO_META_KEY,
  type AuthInfo,
  type CallToolRequest,
  type ReadResourceRequest,
  type ServerContext
} from '@modelcontextprotocol/server'
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/server/validators/ajv'
import { toWebRequest } from '@modelcontextprotocol/node'
import { VERSION } from '../../../lib/root.js'
import type { Principal } from '../auth/access-state.js'
import { plainSessionCall, plainStatelessCall, type PlainCall } from './fast-call.js'
import { createRegistry, describeResource, type Registry, type ToolResult } from './registry.js'
import { speaksStateless } from './revisions.js'
import { GatewayServer, hasNul, requestTimedOut } from './server.js'
import { createSessions } from './sessions.js'

export { PROTOCOL_REVISIONS, SESSION_REVISION, STATELESS_REVISION } from './revisions.js'
export const SERVER_NAME = 'marketplace-gateway'
const SERVER_INFO = { name: SERVER_NAME, title: 'Marketplace gateway', version: VERSION }
/** What 2026-07-28 adds to every result: it is complete (no input required), and who answered it. */
const STATELESS_RESULT = Object.freeze({
  resultType: 'complete',
  _meta: Object.freeze({ [SERVER_INFO_META_KEY]: SERVER_INFO })
})

const INSTRUCTIONS =
  "Acts on one tenant of the accounting system as an installed marketplace app. Send the install's access token " +
  'as "Authorization: Bearer <token>"; tools act only in that token\'s organisation and entity.'

/**
 * How long a stateless client may reuse a list or a read (2026-07-28 `ttlMs`/`cacheScope`): the tools and
 * resources are the same for every caller and change only with a deploy.
 */
const CACHE_HINT = { ttlMs: 60_000, cacheScope: 'public' } as const

declare module 'fastify' {
  interface FastifyInstance {
    mcp: Pick<Registry, 'addTool' | 'addResource' | 'tools' | 'resources'> & {
      /** 2025-11-25 sessions this instance has served within their idle time. */
      activeSessions(): number
      /** Answers being written and event streams open on this instance (each a transport of its own). */
      openTransports(): number
      /** Whether a request is for the stateless revision: no session; its rate limit is per install. */
      isStateless(request: FastifyRequest): boolean
      /**
       * Answers an already authenticated request of either revision. Returns the id of the session an `initialize`
       * opened, if it opened one.
       */
      handle(request: FastifyRequest, reply: FastifyReply, principal: Principal | null): Promise<string | undefined>
    }
  }
}

const ROUTE = Symbol('how an MCP request is served')
/** A plain stateless call, one for the SDK's stateless handler, or null: a 2025-11-25 request. */
type Routed = { plain: PlainCall } | 'stateless' | null

/** A request's answer that is a protocol error, in band (HTTP 200), as the SDK writes one. */
const errorAnswer = (id: string | number | null, err: ProtocolError) =>
  ({ jsonrpc: '2.0', id, error: { code: err.code, message: err.message } })

const principalOf = (ctx: ServerContext): Principal | null =>
  (ctx.http?.authInfo?.extra?.principal as Principal | undefined) ?? null

/** What the SDK hands its handlers as `ctx.http.authInfo`: the principal rides along, already checked. */
const authInfoOf = (principal: Principal): AuthInfo =>
  ({ token: '', clientId: principal.clientId, scopes: [...principal.scopes], extra: { principal } })

/**
 * The Model Context Protocol endpoint, both revisions on one URL, from the official SDK's 2.x server
 * (docs/mcp.md#two-revisions-one-endpoint):
 * - 2025-11-25: stateful streamable-HTTP sessions (sessions.ts), each with its own SDK server;
 * - 2026-07-28: stateless; the SDK's `createMcpHandler` serves each request from a server made for it, so any
 *   instance answers any request.
 * Both get their servers from one factory over the shared registry, so the revisions cannot drift apart. It knows
 * the protocol only: each plugin that owns a capability adds its tools and resources here.
 */
export default fp(
  async app => {
    const registry = createRegistry()
    const { resources, dispatch } = registry
    // One validator for every server: an Ajv instance per server would cost more than the server itself.
    const jsonSchemaValidator = new AjvJsonSchemaValidator()

    /** A tool call on either revision; protocol errors are thrown for the SDK (or the plain-call path) to answer. */
    async function callTool (name: string, args: unknown, principal: Principal | null): Promise<ToolResult> {
      // Text with NUL cannot be stored or compared by the database; refused here, with the request's id.
      if (hasNul(args)) {
        throw new ProtocolError(ProtocolErrorCode.InvalidParams,
          'Invalid params: params.arguments must not contain NUL characters.')
      }
      let result: ToolResult | undefined
      try {
        result = await dispatch(name, args, principal)
      } catch (err) {
        // What the catalog does not know is a bug here, not the caller's: said without its text, on both paths.
        app.log.error({ err, tool: name }, 'mcp: tool failed')
        throw new ProtocolError(ProtocolErrorCode.InternalError, 'Internal error.')
      }
      if (!result) throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Unknown tool: ${name}`)
      return result
    }

    // The handlers every server gets, made once: a 2025-11-25 session keeps its server, so what a server holds of
    // its own is memory per session (BENCHMARKS.md).
    const listTools = async () => ({ tools: registry.described() })
    const toolCall = async (req: CallToolRequest, ctx: ServerContext) =>
      callTool(req.params.name, req.params.arguments, principalOf(ctx))
    const listResources = async () => ({ resources: resources.map(describeResource) })
    // No templates, but the method is part of the resources capability: clients (the Inspector) call it.
    const listResourceTemplates = async () => ({ resourceTemplates: [] })
    const readResource = async (req: ReadResourceRequest) => {
      const resource = resources.find(r => r.uri === req.params.uri)
      // -32602 with data.uri on both revisions: the SDK's one code for a miss (2026-07-28 requires it).
      if (!resource) throw new ResourceNotFoundError(req.params.uri)
      return { contents: [{ uri: resource.uri, mimeType: resource.mimeType, text: resource.read() }] }
    }

    function newServer (): GatewayServer {
      const server = new GatewayServer(
        SERVER_INFO,
        {
          capabilities: { tools: { listChanged: false }, resources: { listChanged: false } },
          instructions: INSTRUCTIONS,
          jsonSchemaValidator,
          cacheHints: {
            'tools/list': CACHE_HINT,
            'resources/list': CACHE_HINT,
            'resources/templates/list': CACHE_HINT,
            'resources/read': CACHE_HINT
          }
        }
      )
      server.setRequestHandler('tools/list', listTools)
      server.setRequestHandler('tools/call', toolCall)
      server.setRequestHandler('resources/list', listResources)
      server.setRequestHandler('resources/templates/list', listResourceTemplates)
      server.setRequestHandler('resources/read', readResource)
      return server
    }

    const requestTimeoutMs = app.config.mcpRequestTimeoutSeconds * 1000
    const sessions = createSessions({
      db: app.db,
      newServer,
      idleMs: app.config.mcpSessionIdleMinutes * 60_000,
      requestTimeoutMs,
      authInfo: authInfoOf,
      now: () => app.clock.now(),
      log: app.log
    })
    await sessions.listen()
    /** Work of one request, bounded: past the time-out it fails with a JSON-RPC error the caller answers. */
    const bounded = <T>(work: Promise<T>): Promise<T> => new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => reject(requestTimedOut(requestTimeoutMs)), requestTimeoutMs)
      work.then(resolve, reject).finally(() => clearTimeout(timer))
    })
    // Strict: 2025-era requests never reach it (they go to the sessions), so it serves 2026-07-28 alone.
    const statelessHandler = createMcpHandler(() => newServer(), {
      legacy: 'reject',
      onerror: err => app.log.debug({ err }, 'mcp: stateless request refused')
    })
    // preClose, not onClose: an open GET event stream would otherwise keep the server from closing.
    app.addHook('preClose', async () => {
      await sessions.closeAll()
      await statelessHandler.close()
    })

    /** How a request is served, worked out once: the route asks before its rate limit. */
    function routeOf (request: FastifyRequest): Routed {
      const marked = request as FastifyRequest & { [ROUTE]?: Routed }
      if (marked[ROUTE] !== undefined) return marked[ROUTE]
      const plain = plainStatelessCall(request)
      const stateless = !plain && speaksStateless(request.method, request.body, request.headers)
      marked[ROUTE] = plain ? { plain } : stateless ? 'stateless' : null
      return marked[ROUTE]
    }

    /** Answers a vetted call as the SDK would, as JSON; on the stateless revision with what it adds to results. */
    async function answerPlain (reply: FastifyReply, call: PlainCall, principal: Principal | null, stateless: boolean) {
      let answer: Record<string, unknown>
      try {
        const result = await bounded(callTool(call.name, call.args, principal))
        // The result is the dispatcher's own new object: adding to it costs less than copying it.
        answer = { jsonrpc: '2.0', id: call.id, result: stateless ? Object.assign(result, STATELESS_RESULT) : result }
      } catch (err) {
        if (!(err instanceof ProtocolError)) throw err
        answer = errorAnswer(call.id, err)
      }
      await reply.type('application/json').send(answer)
    }

    async function handle (request: FastifyRequest, reply: FastifyReply, principal: Principal | null) {
      const routed = routeOf(request)
      if (routed === 'stateless') {
        let response: Response
        try {
          response = await bounded(statelessHandler.fetch(await toWebRequest(request.raw, request.body), {
            parsedBody: request.body,
            ...(principal && { authInfo: authInfoOf(principal) })
          }))
        } catch (err) {
          if (!(err instanceof ProtocolError)) throw err
          const id = (request.body as { id?: string | number }).id ?? null
          await reply.type('application/json').send(errorAnswer(id, err))
          return undefined
        }
        await reply.send(response)
        return undefined
      }
      if (routed) {
        await answerPlain(reply, routed.plain, principal, true)
        return undefined
      }

      const resolved = await sessions.resolve(request, reply, principal)
      if (!resolved) return undefined
      const { session, opened } = resolved
      reply.header('mcp-session-id', session.id)
      const body = request.body as { id?: unknown, method?: unknown } | undefined
      if (request.method === 'POST' && body?.method !== undefined &&
        (typeof body.id === 'string' || typeof body.id === 'number')) {
        const done = sessions.begin(session, reply, body.id)
        if (!done) return undefined
        // Also when the client went away already, while the session was being read: then at once.
        finished(reply.raw, () => done())
      }
      const call = plainSessionCall(request)
      if (call) {
        await answerPlain(reply, call, principal, false)
        return undefined
      }
      await sessions.serve(session, opened, request, reply, principal, newServer())
      return opened ? session.id : undefined
    }

    if (app.hasDecorator('metrics')) {
      app.metrics.gauge('mcp_active_sessions', 'MCP sessions this instance has served within their idle time.',
        () => sessions.size())
      app.metrics.gauge('mcp_open_transports',
        'MCP answers being written and event streams open on this instance.', () => sessions.openTransports())
    }
    app.decorate('mcp', {
      addTool: registry.addTool,
      addResource: registry.addResource,
      tools: registry.tools,
      resources,
      activeSessions: sessions.size,
      openTransports: sessions.openTransports,
      isStateless: (request: FastifyRequest) => routeOf(request) !== null,
      handle
    })
  },
  { name: 'mcp', dependencies: ['config', 'db'] }
)
