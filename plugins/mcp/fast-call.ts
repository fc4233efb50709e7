import type { FastifyRequest } from 'fastify'
import { SUPPORTED_PROTOCOL_VERSIONS } from '@modelcontextprotocol/server'

export interface PlainCall {
  id: string | number
  name: string
  args: unknown
}

/**
 * `tools/call` on an established 2025-11-25 session is the hot path. The SDK's Node transport converts every
 * request to a web-standard Request and back, which costs several times what the tool does (bench/mcp.ts); so a
 * call this function has vetted whole is answered by the caller as a plain JSON response, which streamable HTTP
 * allows, from the same tool dispatcher the SDK server uses. Anything else, malformed calls included, goes to the SDK.
 */
export function plainSessionCall (request: FastifyRequest): PlainCall | undefined {
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
  const accept = request.headers.accept ?? ''
  if (!accept.includes('application/json') || !accept.includes('text/event-stream')) return undefined
  // The session revisions only (the SDK's list holds no stateless one): the transport refuses any other.
  const version = request.headers['mcp-protocol-version']
  if (version !== undefined && !SUPPORTED_PROTOCOL_VERSIONS.includes(String(version))) return undefined
  return { id: body.id, name: params.name, args }
}
