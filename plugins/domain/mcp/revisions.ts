import type { IncomingHttpHeaders } from 'node:http'
import { classifyInboundRequest, PROTOCOL_VERSION_META_KEY } from '@modelcontextprotocol/server'

/** The revision with sessions (initialize, Mcp-Session-Id), the one the endpoint first spoke. */
export const SESSION_REVISION = '2025-11-25'
/** The stateless revision: every request names it in params._meta; no session, no initialize. */
export const STATELESS_REVISION = '2026-07-28'
/** Both, oldest first: what /catalog.json and the agent card state. */
export const PROTOCOL_REVISIONS = [SESSION_REVISION, STATELESS_REVISION] as const

/**
 * Whether a request is for the stateless revision's handler: one that speaks it, or that the SDK refuses on its
 * behalf (a malformed envelope, headers that disagree with the body, a revision it does not serve). Only a request
 * that claims a modern revision, in `params._meta` or in the MCP-Protocol-Version header, can be one, so every
 * 2025-11-25 request is answered by this cheap test; the others are classified by the SDK itself, which owns the
 * edge cases (an `initialize` is a handshake unless its envelope names a modern revision), so the routing here
 * cannot disagree with the handler behind it.
 */
export function speaksStateless (httpMethod: string, body: unknown, headers: IncomingHttpHeaders): boolean {
  if (httpMethod !== 'POST') return false
  const meta = (body as { params?: { _meta?: unknown } } | undefined)?.params?._meta
  const header = text(headers['mcp-protocol-version'])
  const claims = (typeof meta === 'object' && meta !== null && PROTOCOL_VERSION_META_KEY in meta) ||
    (header !== undefined && header.trim() >= STATELESS_REVISION)
  if (!claims) return false
  return classifyInboundRequest({
    httpMethod: 'POST',
    body,
    protocolVersionHeader: header,
    mcpMethodHeader: text(headers['mcp-method']),
    mcpNameHeader: text(headers['mcp-name'])
  }).kind !== 'legacy'
}

/** A header sent once; repeated, it is no value the SDK would take. */
const text = (value: string | string[] | undefined): string | undefined => typeof value === 'string' ? value : undefined

/** The SDK's verdicts on plain calls' envelopes, by tool name and envelope, oldest out. */
const verdicts = new Map<string, boolean>()
const MAX_VERDICTS = 1_000
/** Longer keys are classified every time, not kept: an envelope is a few hundred bytes, a caller's choice. */
const MAX_KEY_LENGTH = 1_024

/**
 * Whether the SDK's classifier takes a plain `tools/call` of `name` carrying this `_meta` envelope, with the
 * revision's headers equal to the body, for a request of the stateless revision it serves. It decides on such a
 * call itself; its verdict depends on the envelope, the method, the name and those headers, not on which id (any
 * string or safe integer: fast-call.ts has checked) or which arguments object, and a client sends the same envelope
 * with every call, so the verdict is remembered. Classifying costs about a sixth of a whole call (zod, and the
 * garbage it leaves: BENCHMARKS.md).
 */
export function plainCallSpeaksStateless (name: string, meta: Record<string, unknown>): boolean {
  const key = `${name}\n${JSON.stringify(meta)}`
  let verdict = verdicts.get(key)
  if (verdict === undefined) {
    const route = classifyInboundRequest({
      httpMethod: 'POST',
      body: { jsonrpc: '2.0', id: 0, method: 'tools/call', params: { name, arguments: {}, _meta: meta } },
      protocolVersionHeader: STATELESS_REVISION,
      mcpMethodHeader: 'tools/call',
      mcpNameHeader: name
    })
    verdict = route.kind === 'modern' && route.messageKind === 'request' &&
      route.classification.revision === STATELESS_REVISION
    if (key.length <= MAX_KEY_LENGTH) {
      if (verdicts.size >= MAX_VERDICTS) verdicts.delete(verdicts.keys().next().value!)
      verdicts.set(key, verdict)
    }
  }
  return verdict
}
