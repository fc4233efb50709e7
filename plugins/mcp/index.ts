import { randomUUID } from 'node:crypto'
import type { IncomingMessage } from 'node:http'
import fp from 'fastify-plugin'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js'
import { AjvJsonSchemaValidator } from '@modelcontextprotocol/sdk/validation/ajv'
import {
  ClientRequestSchema,
  CallToolRequestSchema,
  ErrorCode,
  isInitializeRequest,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  ListToolsRequestSchema,
  ReadResourceRequestSchema,
  SUPPORTED_PROTOCOL_VERSIONS
} from '@modelcontextprotocol/sdk/types.js'
import type { AuthInfo } from '@modelcontextprotocol/sdk/server/auth/types.js'
import { VERSION } from '../../lib/root.js'
import type { Principal } from '../auth/access-state.js'
import { errors, sendError } from '../errors.js'
import { createRegistry, type Registry } from './registry.js'

/**
 * A JSON-RPC error for the SDK to send. Not McpError, whose message already starts "MCP error <code>:", which the
 * client's McpError then prefixes again.
 */
const rpcError = (code: number, message: string): Error => Object.assign(new Error(message), { code })

/** The SDK's schema of each client request, by method. */
const REQUEST_SCHEMAS = new Map(
  ClientRequestSchema.options.map(o => [(o.shape.method as unknown as { value: string }).value, o])
)

export const PROTOCOL_REVISION = '2025-11-25'
export const SERVER_NAME = 'marketplace-gateway'

interface Session {
  transport: StreamableHTTPServerTransport
  server: Server
  lastSeen: number
  /** The install whose token opened the session (null: none). Other credentials cannot use it. */
  installId: string | null
}

declare module 'fastify' {
  interface FastifyInstance {
    mcp: Pick<Registry, 'addTool' | 'addResource' | 'tools' | 'resources'> & {
      activeSessions(): number
      /**
       * Hands an already authenticated and rate-limited request to its session's transport. Returns the id of the
       * session an `initialize` opened, if it opened one.
       */
      handle(request: FastifyRequest, reply: FastifyReply, principal: Principal | null): Promise<string | undefined>
    }
  }
}

/**
 * The Model Context Protocol endpoint: stateful streamable-HTTP sessions, each with its own SDK server over the
 * shared tool registry. Sessions idle for MCP_SESSION_IDLE_MINUTES are closed; all close with the app.
 * It knows the protocol only: each plugin that owns a capability adds its tools and resources here.
 */
export default fp(
  async app => {
    const registry = createRegistry()
    const { resources, dispatch } = registry
    const resourceList = () =>
      resources.map(({ uri, name, description, mimeType }) => ({ uri, name, description, mimeType }))
    // One validator for every session: an Ajv instance per session would cost more than the session itself.
    const jsonSchemaValidator = new AjvJsonSchemaValidator()
    const sessions = new Map<string, Session>()
    const idleMs = app.config.mcpSessionIdleMinutes * 60_000

    function newServer (): Server {
      const server = new Server(
        { name: SERVER_NAME, title: 'Marketplace gateway', version: VERSION },
        {
          capabilities: { tools: { listChanged: false }, resources: { listChanged: false } },
          instructions:
            "Acts on one tenant of the accounting system as an installed marketplace app. Send the install's " +
            'access token as "Authorization: Bearer <token>"; tools act only in that token\'s organisation and entity.',
          jsonSchemaValidator
        }
      )
      server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: registry.described() }))
      server.setRequestHandler(CallToolRequestSchema, async (req, extra) => {
        const principal = (extra.authInfo?.extra?.principal as Principal | undefined) ?? null
        const result = await dispatch(req.params.name, req.params.arguments, principal)
        if (!result) throw rpcError(ErrorCode.InvalidParams, `Unknown tool: ${req.params.name}`)
        return result
      })
      server.setRequestHandler(ListResourcesRequestSchema, async () => ({ resources: resourceList() }))
      // No templates, but the method is part of the resources capability: clients (the Inspector) call it.
      server.setRequestHandler(ListResourceTemplatesRequestSchema, async () => ({ resourceTemplates: [] }))
      server.setRequestHandler(ReadResourceRequestSchema, async req => {
        const resource = resources.find(r => r.uri === req.params.uri)
        if (!resource) throw rpcError(-32002, `Resource not found: ${req.params.uri}`)
        return { contents: [{ uri: resource.uri, mimeType: resource.mimeType, text: resource.read() }] }
      })
      return server
    }

    async function closeSession (id: string): Promise<void> {
      const session = sessions.get(id)
      if (!session) return
      sessions.delete(id)
      await session.transport.close().catch(() => {})
      await session.server.close().catch(() => {})
    }

    const sweeper = setInterval(
      () => {
        const cutoff = Date.now() - idleMs
        for (const [id, s] of sessions) if (s.lastSeen < cutoff) closeSession(id).catch(() => {})
      },
      Math.min(30_000, Math.max(100, idleMs / 4))
    )
    sweeper.unref()
    // preClose, not onClose: an open GET event stream would otherwise keep the server from closing.
    app.addHook('preClose', async () => {
      clearInterval(sweeper)
      await Promise.all([...sessions.keys()].map(closeSession))
    })

    const hasNul = (v: unknown): boolean =>
      typeof v === 'string'
        ? v.includes('\0')
        : typeof v === 'object' && v !== null && Object.entries(v).some(([k, x]) => k.includes('\0') || hasNul(x))

    /**
     * `tools/call` on an established session is the hot path. The SDK's Node transport converts every request to a
     * web-standard Request and back, which costs four times what the tool does (bench/mcp.ts profile); so a
     * well-formed call is answered here, as a plain JSON response (which streamable HTTP allows), by the same
     * dispatcher the SDK server uses. Anything else, malformed calls included, goes through the SDK.
     */
    function fastToolCall (request: FastifyRequest): { id: string | number, name: string, args: unknown } | undefined {
      const body = request.body as {
        jsonrpc?: unknown
        id?: unknown
        method?: unknown
        params?: { name?: unknown, arguments?: unknown }
      }
      if (request.method !== 'POST' || body.jsonrpc !== '2.0' || body.method !== 'tools/call') return undefined
      if (typeof body.id !== 'string' && typeof body.id !== 'number') return undefined
      const params = body.params
      if (typeof params?.name !== 'string') return undefined
      // Only name and arguments: anything else (_meta, task) is for the SDK's schema and handling.
      for (const key in params) if (key !== 'name' && key !== 'arguments') return undefined
      const args = params.arguments
      if (args !== undefined && (typeof args !== 'object' || args === null || Array.isArray(args))) return undefined
      if (hasNul(args)) return undefined
      const accept = request.headers.accept ?? ''
      if (!accept.includes('application/json') || !accept.includes('text/event-stream')) return undefined
      const version = request.headers['mcp-protocol-version']
      if (version !== undefined && !SUPPORTED_PROTOCOL_VERSIONS.includes(String(version))) return undefined
      return { id: body.id, name: params.name, args }
    }

    /** JSON-RPC -32602 for the requests whose params the SDK would otherwise reject as an internal error. */
    function invalidParams (body: unknown): { id: string | number, message: string } | undefined {
      const b = body as { id?: unknown, method?: unknown, params?: Record<string, unknown> }
      if (typeof b.id !== 'string' && typeof b.id !== 'number') return undefined
      const params = b.params
      const isObject = (v: unknown) => typeof v === 'object' && v !== null && !Array.isArray(v)
      if (b.method === 'tools/call') {
        if (!isObject(params) || typeof params!.name !== 'string') {
          return { id: b.id, message: 'params.name must be a string.' }
        }
        if (params!.arguments !== undefined && !isObject(params!.arguments)) {
          return { id: b.id, message: 'params.arguments must be an object.' }
        }
        // Text with NUL cannot be stored or compared by the database; refused here, with the request's id.
        if (hasNul(params!.arguments)) {
          return { id: b.id, message: 'params.arguments must not contain NUL characters.' }
        }
      }
      if (b.method === 'resources/read' && (!isObject(params) || typeof params!.uri !== 'string')) {
        return { id: b.id, message: 'params.uri must be a string.' }
      }
      // Every other request the SDK knows, against the SDK's own schema: otherwise the SDK answers -32603.
      const schema = typeof b.method === 'string' ? REQUEST_SCHEMAS.get(b.method) : undefined
      const checked = schema?.safeParse({ method: b.method, params: b.params })
      if (checked && !checked.success) {
        const issue = checked.error.issues[0]!
        return { id: b.id, message: `${issue.path.join('.') || 'params'}: ${issue.message}` }
      }
      return undefined
    }

    async function handle (
      request: FastifyRequest,
      reply: FastifyReply,
      principal: Principal | null
    ): Promise<string | undefined> {
      const header = request.headers['mcp-session-id']
      const sessionId = Array.isArray(header) ? header[0] : header
      let session = sessionId ? sessions.get(sessionId) : undefined
      // A session answers only to the credentials that opened it; to anyone else it does not exist.
      if (sessionId && (!session || session.installId !== (principal?.installId ?? null))) {
        sendError(reply, errors.mcpSessionNotFound())
        return undefined
      }
      let opened: Session | undefined
      if (!session) {
        if (request.method !== 'POST' || !isInitializeRequest(request.body)) {
          sendError(reply, errors.mcpNoSession())
          return undefined
        }
        const entry: Session = {
          server: newServer(),
          installId: principal?.installId ?? null,
          lastSeen: Date.now(),
          transport: new StreamableHTTPServerTransport({
            sessionIdGenerator: () => randomUUID(),
            onsessioninitialized: id => {
              sessions.set(id, entry)
            },
            onsessionclosed: id => closeSession(id)
          })
        }
        entry.transport.onclose = () => {
          if (entry.transport.sessionId) sessions.delete(entry.transport.sessionId)
        }
        await entry.server.connect(entry.transport)
        session = opened = entry
      }
      session.lastSeen = Date.now()

      // A call the fast path has vetted whole needs no other check (invalidParams would pass it).
      const call = fastToolCall(request)
      if (call) {
        const result = await dispatch(call.name, call.args, principal)
        reply
          .type('application/json')
          .send(
            result
              ? { jsonrpc: '2.0', id: call.id, result }
              : {
                  jsonrpc: '2.0',
                  id: call.id,
                  error: { code: ErrorCode.InvalidParams, message: `Unknown tool: ${call.name}` }
                }
          )
        return undefined
      }

      const invalid = request.method === 'POST' ? invalidParams(request.body) : undefined
      if (invalid) {
        reply
          .type('application/json')
          .send({
            jsonrpc: '2.0',
            id: invalid.id,
            error: { code: ErrorCode.InvalidParams, message: `Invalid params: ${invalid.message}` }
          })
        return undefined
      }
      const raw = request.raw as IncomingMessage & { auth?: AuthInfo }
      if (principal) {
        raw.auth = { token: '', clientId: principal.clientId, scopes: [...principal.scopes], extra: { principal } }
      }
      // From here the SDK writes the answer (JSON or an SSE stream); Fastify steps aside.
      reply.hijack()
      for (const [name, value] of Object.entries(reply.getHeaders())) {
        if (value !== undefined) reply.raw.setHeader(name, value)
      }
      await session.transport.handleRequest(raw, reply.raw, request.body)
      return opened?.transport.sessionId
    }

    if (app.hasDecorator('metrics')) {
      app.metrics.gauge('mcp_active_sessions', 'Open MCP sessions on this instance.', () => sessions.size)
    }
    app.decorate('mcp', {
      addTool: registry.addTool,
      addResource: registry.addResource,
      tools: registry.tools,
      resources,
      activeSessions: () => sessions.size,
      handle
    })
  },
  { name: 'mcp', dependencies: ['config'] }
)
