import type { FastifyRequest } from 'fastify'
import {
  CLIENT_CAPABILITIES_META_KEY,
  CLIENT_INFO_META_KEY,
  isJsonContentType,
  PROTOCOL_VERSION_META_KEY,
  SUPPORTED_PROTOCOL_VERSIONS
} from '@modelcontextprotocol/server'
import { plainCallSpeaksStateless, STATELESS_REVISION } from './revisions.js'

/**
 * `tools/call` is the hot path of both revisions, and the SDK's way through costs several times what the tool does:
 * on a session, its Node transport converts every request to a web-standard Request and back; on the stateless
 * revision, a server is built, connected and torn down for every request (bench/mcp.ts, BENCHMARKS.md). So a call
 * vetted whole here is answered by the caller as a plain JSON response, which streamable HTTP allows, from the same
 * tool dispatcher the SDK's server calls. Anything else, malformed calls included, goes to the SDK, which answers it
 * with its own checks and errors; a test makes each revision's plain answer equal to the SDK's.
 */
export interface PlainCall {
  id: string | number
  name: string
  args: unknown
}

type CallBody = {
  jsonrpc?: unknown
  id?: unknown
  method?: unknown
  params?: { name?: unknown, arguments?: unknown, _meta?: Record<string, unknown> }
}

/** What the SDK's JSON-RPC request schema allows at the top: nothing more. */
const MESSAGE_KEYS = new Set(['jsonrpc', 'id', 'method', 'params'])

/**
 * The call's id, name and arguments when it is a JSON-RPC request as the SDK's schema has it (no other member; an
 * id that is a string or a safe integer) and its params hold nothing but `allowed` keys, well-formed.
 */
function vet (body: CallBody, allowed: ReadonlySet<string>): PlainCall | undefined {
  if (body.jsonrpc !== '2.0' || body.method !== 'tools/call') return undefined
  if (typeof body.id !== 'string' && !Number.isSafeInteger(body.id)) return undefined
  for (const key in body) if (!MESSAGE_KEYS.has(key)) return undefined
  const params = body.params
  if (typeof params?.name !== 'string') return undefined
  for (const key in params) if (!allowed.has(key)) return undefined
  const args = params.arguments
  if (args !== undefined && (typeof args !== 'object' || args === null || Array.isArray(args))) return undefined
  return { id: body.id as string | number, name: params.name, args }
}

const SESSION_PARAMS = new Set(['name', 'arguments'])
const STATELESS_PARAMS = new Set(['name', 'arguments', '_meta'])
/** The envelope keys and nothing else: a progress token or a log level asks for what only the SDK does. */
const ENVELOPE_KEYS = new Set([PROTOCOL_VERSION_META_KEY, CLIENT_INFO_META_KEY, CLIENT_CAPABILITIES_META_KEY])

/** A plain `tools/call` on an open 2025-11-25 session: only name and arguments (no `_meta`, no `task`). */
export function plainSessionCall (request: FastifyRequest): PlainCall | undefined {
  if (request.method !== 'POST') return undefined
  const call = vet(request.body as CallBody, SESSION_PARAMS)
  if (!call) return undefined
  const accept = request.headers.accept ?? ''
  if (!accept.includes('application/json') || !accept.includes('text/event-stream')) return undefined
  // The session revisions only (the SDK's list holds no stateless one): the transport refuses any other.
  const version = request.headers['mcp-protocol-version']
  if (version !== undefined && !SUPPORTED_PROTOCOL_VERSIONS.includes(String(version))) return undefined
  return call
}

/**
 * A plain `tools/call` on the stateless revision: only the envelope in `_meta`, the headers the revision requires
 * present and equal to the body, byte for byte (the SDK also accepts them with surrounding spaces, and a name
 * encoded as `=?base64?…?=`: it gets those), and an envelope the SDK's classifier takes for 2026-07-28
 * (revisions.ts).
 */
export function plainStatelessCall (request: FastifyRequest): PlainCall | undefined {
  const h = request.headers
  if (h['mcp-protocol-version'] !== STATELESS_REVISION || h['mcp-method'] !== 'tools/call') return undefined
  if (request.method !== 'POST' || !isJsonContentType(h['content-type'] ?? null)) return undefined
  const body = request.body as CallBody
  const call = vet(body, STATELESS_PARAMS)
  if (!call || h['mcp-name'] !== call.name || call.name.startsWith('=?')) return undefined
  const meta = body.params!._meta
  if (typeof meta !== 'object' || meta === null || Array.isArray(meta)) return undefined
  for (const key in meta) if (!ENVELOPE_KEYS.has(key)) return undefined
  return plainCallSpeaksStateless(call.name, meta) ? call : undefined
}
