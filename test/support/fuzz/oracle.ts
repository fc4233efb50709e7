import { ApiError, JsonRpcHttpError, errors } from '../../../plugins/infrastructure/errors.js'

/**
 * What the error catalog (plugins/infrastructure/errors.ts) can send, read from the catalog itself: every entry is
 * built once with placeholder arguments, and its status and code (or JSON-RPC code) noted. A new entry is known
 * here at once.
 */
function readCatalog (): { rest: Map<string, Set<number>>, rpc: Map<number, Set<number>> } {
  const rest = new Map<string, Set<number>>()
  const rpc = new Map<number, Set<number>>()
  const note = <K>(m: Map<K, Set<number>>, k: K, status: number) => m.set(k, (m.get(k) ?? new Set()).add(status))
  const placeholder = ['x']
  for (const [name, make] of Object.entries(errors) as Array<[string, (...args: unknown[]) => unknown]>) {
    const made = name === 'mcpUnauthorized' ? make(errors.missingBearer(), 'x') : make(placeholder, placeholder)
    // mcpInvalidRequest takes its status as an argument: any 4xx goes with -32600.
    if (made instanceof JsonRpcHttpError) note(rpc, made.rpcCode, made.statusCode)
    else if (made instanceof ApiError) note(rest, made.code, made.statusCode)
    else throw new Error(`catalog entry ${name} did not build an ApiError`)
  }
  return { rest, rpc }
}

export const CATALOG = readCatalog()

/** Standard JSON-RPC codes and MCP's, as the SDK answers them; -32603 (internal error) is not among them. */
const RPC_CODES = new Set([-32700, -32600, -32601, -32602, -32000, -32001, -32002, ...CATALOG.rpc.keys()])
RPC_CODES.delete(-32603)

const EXTRA_MEMBERS: Record<string, (code: string) => boolean> = {
  error_description: () => true,
  required: code => code === 'insufficient_scope',
  unknown: code => code === 'unknown_topic' || code === 'unknown_scope',
  details: code => code === 'validation_error'
}

export interface Answer {
  statusCode: number
  headers: Record<string, string | string[] | number | undefined>
  body: string
}

export interface Context {
  method: string
  /** The path asked for (percent-encoded, no query). */
  path: string
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

/** A catalog error body: `{error, message}` and only the members defined for that code. */
export function restBodyProblem (body: unknown, status: number | undefined, route: string): string | undefined {
  if (!isObject(body)) return 'error body is not a JSON object'
  const { error, message, ...extra } = body
  if (typeof error !== 'string' || typeof message !== 'string') return 'error body lacks string error and message'
  const statuses = CATALOG.rest.get(error)
  if (!statuses) return `error code ${JSON.stringify(error)} is not in the catalog`
  if (error === 'internal_error') return 'internal_error'
  if (status !== undefined && !statuses.has(status)) return `catalog code ${error} with status ${status}`
  for (const [k, v] of Object.entries(extra)) {
    const allowed = EXTRA_MEMBERS[k]
    if (!allowed || !allowed(error)) return `member ${JSON.stringify(k)} is not defined for ${error}`
    if (k === 'error_description' && (v !== message || !route.startsWith('/oauth/'))) {
      return 'error_description outside the OAuth endpoints, or not equal to message'
    }
  }
  return undefined
}

function rpcErrorProblem (error: unknown): string | undefined {
  if (!isObject(error) || typeof error.code !== 'number' || typeof error.message !== 'string') {
    return 'JSON-RPC error without a numeric code and a string message'
  }
  if (!RPC_CODES.has(error.code)) return `JSON-RPC error code ${error.code} (${error.message})`
  return undefined
}

/** JSON-RPC messages of an MCP answer: a JSON body, or the `data:` lines of an event stream. */
function rpcMessages (answer: Answer): unknown[] | undefined {
  const type = String(answer.headers['content-type'] ?? '')
  try {
    if (type.startsWith('application/json')) {
      const parsed: unknown = JSON.parse(answer.body)
      return Array.isArray(parsed) ? parsed : [parsed]
    }
    if (type.startsWith('text/event-stream')) {
      return answer.body
        .split('\n')
        .filter(l => l.startsWith('data:'))
        .map(l => l.slice(5).trim())
        .filter(l => l !== '')
        .map(l => JSON.parse(l) as unknown)
    }
  } catch {
    return undefined
  }
  return []
}

/** Problems inside a successful MCP answer: internal JSON-RPC errors, tool errors that are not catalog bodies. */
function mcpMessageProblem (message: unknown): string | undefined {
  if (!isObject(message)) return 'JSON-RPC message is not an object'
  if ('error' in message) return rpcErrorProblem(message.error)
  const result = message.result
  if (isObject(result) && result.isError === true) {
    const content = result.content
    const text = Array.isArray(content) && isObject(content[0]) ? content[0].text : undefined
    if (typeof text !== 'string') return 'tool error without text content'
    let parsed: unknown
    try {
      parsed = JSON.parse(text)
    } catch {
      return 'tool error text is not JSON'
    }
    const problem = restBodyProblem(parsed, undefined, '/mcp')
    return problem === undefined ? undefined : `tool error: ${problem}`
  }
  return undefined
}

/** Everything wrong with one answer, or undefined. The fuzz test's checks: no 5xx, every error from the catalog. */
export function answerProblem (ctx: Context, answer: Answer): string | undefined {
  const { statusCode: status } = answer
  const head = ctx.method === 'HEAD'
  const isMcp = ctx.path === '/mcp'
  if (answer.headers['x-request-id'] === undefined) return `status ${status} without x-request-id`
  let body: unknown
  if (!head && (status >= 400 || (isMcp && ctx.method === 'POST'))) {
    const type = String(answer.headers['content-type'] ?? '')
    // The consent flow and the dashboard answer a browser with an error page (docs/rules.md#authorization-request,
    // docs/dashboard.md): the catalog's status, code and message, in HTML.
    const pages = ctx.path === '/oauth/authorize' || ctx.path.startsWith('/dashboard')
    if (pages && status >= 400 && status < 500 && type.startsWith('text/html')) {
      const code = answer.body.match(/Error code: <code>([a-z_]+)<\/code>/)?.[1]
      return code ? undefined : `error page without a catalog code: ${answer.body.slice(0, 200)}`
    }
    if (status >= 400 && !type.startsWith('application/json')) {
      return `status ${status} with content-type ${JSON.stringify(type)}: ${answer.body.slice(0, 200)}`
    }
    if (type.startsWith('application/json')) {
      try {
        body = JSON.parse(answer.body)
      } catch {
        return `status ${status}, body is not JSON: ${answer.body.slice(0, 200)}`
      }
    }
  }
  if (status >= 500) return `status ${status}: ${answer.body.slice(0, 300)}`
  if (head) return undefined
  if (status >= 400) {
    if (isObject(body) && 'jsonrpc' in body) {
      if (!isMcp) return `JSON-RPC error body outside /mcp: ${answer.body.slice(0, 200)}`
      if (body.jsonrpc !== '2.0' || !('id' in body)) return `malformed JSON-RPC error: ${answer.body.slice(0, 200)}`
      const problem = rpcErrorProblem(body.error)
      return problem && `status ${status}: ${problem}`
    }
    const problem = restBodyProblem(body, status, ctx.path)
    return problem && `status ${status}: ${problem}: ${answer.body.slice(0, 300)}`
  }
  if (isMcp && ctx.method === 'POST' && status === 200) {
    const messages = rpcMessages(answer)
    if (!messages) return `MCP answer is not JSON nor an event stream of JSON: ${answer.body.slice(0, 200)}`
    for (const m of messages) {
      const problem = mcpMessageProblem(m)
      if (problem) return `status 200: ${problem}: ${JSON.stringify(m).slice(0, 300)}`
    }
  }
  return undefined
}
