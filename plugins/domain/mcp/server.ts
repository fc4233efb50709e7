import {
  ProtocolError,
  ProtocolErrorCode,
  Server,
  specTypeSchemas,
  type JSONRPCRequest,
  type Result,
  type ServerContext,
  type StandardSchemaV1
} from '@modelcontextprotocol/server'

/** Whether a JSON value holds NUL in a string or a key: text the database can neither store nor compare. */
export const hasNul = (v: unknown): boolean =>
  typeof v === 'string'
    ? v.includes('\0')
    : typeof v === 'object' && v !== null && Object.entries(v).some(([k, x]) => k.includes('\0') || hasNul(x))

/**
 * A request the server stopped waiting for, answered in band with its id: -32001, the code SDK clients give their
 * own time-outs.
 */
export const requestTimedOut = (timeoutMs: number): ProtocolError =>
  new ProtocolError(-32001, `Request timed out after ${timeoutMs / 1000} s.`)

/**
 * The SDK's schema of each request with params that the server has a handler for, by method; not `tools/call`,
 * whose bad params the SDK already answers -32602, nor `ping`, which has none.
 */
const REQUEST_SCHEMAS = new Map<string, StandardSchemaV1>([
  ['initialize', specTypeSchemas.InitializeRequest],
  ['server/discover', specTypeSchemas.DiscoverRequest],
  ['tools/list', specTypeSchemas.ListToolsRequest],
  ['resources/list', specTypeSchemas.ListResourcesRequest],
  ['resources/templates/list', specTypeSchemas.ListResourceTemplatesRequest],
  ['resources/read', specTypeSchemas.ReadResourceRequest]
])

/**
 * The SDK's server, with one correction: params its own schema refuses are answered JSON-RPC -32602 (invalid
 * params), on both revisions. The SDK finds them too, but for every method but `tools/call` it answers -32603, an
 * internal error, for what is the caller's mistake: a known bug (modelcontextprotocol/typescript-sdk#2284, fix
 * proposed in #2492); drop this class when a release carries the fix. The check runs where the SDK's would, after
 * everything the transport and the revision check first. Each wrapper is a closure per server, kept by every
 * 2025-11-25 session, hence only the methods that need it.
 */
export class GatewayServer extends Server {
  /**
   * Takes up a 2025-11-25 session that another server opened, maybe on another instance: what its initialize
   * negotiated, as the SDK's own handshake would have left it (the client's capabilities and info are private to
   * the SDK's class, with no setter: assigned by name).
   */
  resume (session: { protocolVersion: string, clientInfo: unknown, clientCapabilities: unknown }): void {
    this._negotiatedProtocolVersion = session.protocolVersion
    Object.assign(this, { _clientVersion: session.clientInfo, _clientCapabilities: session.clientCapabilities })
  }

  protected override _wrapHandler (
    method: string,
    handler: (request: JSONRPCRequest, ctx: ServerContext) => Promise<Result>
  ): (request: JSONRPCRequest, ctx: ServerContext) => Promise<Result> {
    const wrapped = super._wrapHandler(method, handler)
    const schema = REQUEST_SCHEMAS.get(method)
    if (!schema) return wrapped
    return (request, ctx) => {
      const checked = schema['~standard'].validate({ method: request.method, params: request.params })
      if (checked instanceof Promise) throw new Error(`the SDK's ${method} schema is asynchronous`)
      if (checked.issues) {
        const issue = checked.issues[0]!
        const where = (issue.path ?? []).map(p => (typeof p === 'object' ? p.key : p)).join('.') || 'params'
        throw new ProtocolError(ProtocolErrorCode.InvalidParams, `Invalid params: ${where}: ${issue.message}`)
      }
      return wrapped(request, ctx)
    }
  }
}
