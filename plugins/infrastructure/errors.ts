import { randomUUID } from 'node:crypto'
import type { Socket } from 'node:net'
import fp from 'fastify-plugin'
import type {
  FastifyError, FastifyReply, FastifyRequest, FastifySchemaValidationError, FastifyServerOptions
} from 'fastify'
import { ApiError, errors, JsonRpcHttpError } from '../../schemas/error-catalog.js'
import { DatabaseUnavailableError } from './db/types.js'

// The catalog is data below the plugins (schemas/error-catalog.ts); the service's parts take it from here, with the
// handlers that send it.
export { ApiError, errors, JsonRpcHttpError }

/** A browser navigating, not a program calling: it asks for HTML (programs ask for JSON or nothing). */
export const wantsHtml = (request: FastifyRequest): boolean => /\btext\/html\b/.test(request.headers.accept ?? '')

export function sendError (reply: FastifyReply, err: ApiError): FastifyReply {
  return reply.code(err.statusCode).headers(err.headers).send(err.body())
}

declare module 'fastify' {
  interface FastifyContextConfig {
    /**
     * RFC 6749 endpoints: a malformed request is `invalid_request`, not `validation_error`; the registration
     * endpoint names its own code (RFC 7591: `invalid_client_metadata`).
     */
    oauthErrors?: boolean | 'invalid_client_metadata'
    /** The MCP endpoint: a malformed request is a JSON-RPC parse error. */
    jsonRpcErrors?: boolean
    /** Pages a person opens: a browser (Accept: text/html) gets the error as this page, with the same status. */
    htmlErrors?: (e: ApiError, request: FastifyRequest) => { headers: Record<string, string>, body: string }
  }
}

type Detail = NonNullable<ApiError['extra']['details']>[number]
type SchemaError = FastifySchemaValidationError

/** The value at a JSON pointer (an Ajv `instancePath`) of `data`; undefined when there is none. */
function valueAt (data: unknown, pointer: string): unknown {
  let value = data
  for (const token of pointer.split('/').slice(1)) {
    if (typeof value !== 'object' || value === null) return undefined
    value = (value as Record<string, unknown>)[token.replace(/~1/g, '/').replace(/~0/g, '~')]
  }
  return value
}

/** A value a schema allows, as a detail names it: a string as it is, anything else as JSON. */
const named = (value: unknown): string => typeof value === 'string' ? value : JSON.stringify(value)
/** A JSON type as a detail names it: `an integer`, `a string`, `null`. */
const typeNamed = (type: unknown): string =>
  String(type).split(',').map(t => t === 'null' ? 'null' : `${/^[aeiou]/.test(t) ? 'an' : 'a'} ${t}`).join(' or ')

/**
 * What a union allows, from the errors of its branches (`branches`: the errors under its schema path): the values
 * of the branches that are literals or enums, and the types of the branches that failed on their type alone; or
 * undefined when a branch failed on more than that (an object, a pattern), which no short list can say.
 */
function unionAllows (union: SchemaError, branches: SchemaError[]): string | undefined {
  const byBranch = new Map<string, SchemaError[]>()
  for (const e of branches) {
    const branch = e.schemaPath.slice(union.schemaPath.length + 1).split('/')[0]!
    byBranch.set(branch, [...(byBranch.get(branch) ?? []), e])
  }
  const values: string[] = []
  const types: string[] = []
  for (const failed of byBranch.values()) {
    if (failed.some(e => e.instancePath !== union.instancePath)) return undefined
    const literal = failed.flatMap(e => e.keyword === 'const'
      ? [e.params.allowedValue]
      : e.keyword === 'enum' ? (e.params.allowedValues as unknown[]) : [])
    if (literal.length > 0) values.push(...literal.map(named))
    else if (failed.every(e => e.keyword === 'type')) types.push(typeNamed(failed[0]!.params.type))
    else return undefined
  }
  const distinct = [...new Set(types)]
  return values.length === 0 ? distinct.join(' or ') : `one of ${[...new Set([...values, ...distinct])].join(', ')}`
}

/**
 * Ajv's errors as details, one for each thing to fix. A union (`anyOf`, `oneOf`; TypeBox writes a choice of
 * literals as one) fails in each of its branches, and Ajv reports every branch's errors, then the union's own:
 * `status=a&status=b` against four statuses made nine details. They become one at the union's path that names what
 * it allows (`must be one of draft, authorised, paid, voided`), as does an enum. A query parameter given several
 * times where one value is expected says so. An if/then/else schema (one event or a batch) adds 'must match "then"
 * schema' to the branch's own errors, which already say what is wrong: dropped. The same detail twice is one.
 */
function schemaDetails (validation: SchemaError[], location: string, valueOf: (path: string) => unknown): Detail[] {
  const unions = validation.filter(v => (v.keyword === 'anyOf' || v.keyword === 'oneOf') &&
    // A oneOf that more than one branch passed has no branch errors: its own message says what is wrong.
    v.params.passingSchemas == null)
  const inUnion = (v: SchemaError) => unions.some(u => v.schemaPath.startsWith(`${u.schemaPath}/`))
  const details = new Map<string, Detail>()
  for (const v of validation) {
    if (v.keyword === 'if' || inUnion(v)) continue
    const path = v.instancePath || '/'
    const allows = v.keyword === 'enum'
      ? `one of ${(v.params.allowedValues as unknown[]).map(named).join(', ')}`
      : v.keyword === 'type'
        ? typeNamed(v.params.type)
        : unions.includes(v)
          ? unionAllows(v, validation.filter(e => e.schemaPath.startsWith(`${v.schemaPath}/`)))
          : undefined
    const given = valueOf(v.instancePath)
    const message = Array.isArray(given) && allows !== undefined && !/\barray\b/.test(allows)
      ? `is given ${given.length} times: give it once, as ${allows}`
      : v.keyword === 'additionalProperties'
        ? `unknown field ${JSON.stringify((v.params as { additionalProperty?: string }).additionalProperty)}`
        : v.keyword === 'type' || allows === undefined
          ? (unions.includes(v) ? 'must match one of the forms it allows' : (v.message ?? 'is invalid'))
          : `must be ${allows}`
    details.set(`${path}\n${message}`, { location, path, message })
  }
  return [...details.values()]
}

/** Maps whatever was thrown to a catalog error. Anything unforeseen is answered as a bare 500. */
export function toApiError (
  err: FastifyError & { validationContext?: string },
  request: FastifyRequest,
  bodyLimit: number
): ApiError {
  const apiError = mapError(err, request, bodyLimit)
  if (
    request.routeOptions.config?.jsonRpcErrors &&
    !(apiError instanceof JsonRpcHttpError) &&
    apiError.statusCode !== 401
  ) {
    if (apiError.code === 'validation_error') return errors.mcpParseError(apiError.message)
    if (apiError.statusCode < 500) return errors.mcpInvalidRequest(apiError.statusCode, apiError.message)
    return apiError.code === 'service_unavailable' ? errors.mcpServiceUnavailable() : errors.mcpInternal()
  }
  if (apiError.code === 'validation_error' && request.routeOptions.config?.oauthErrors) {
    // Each detail in words, where it is, then what is wrong ("body/a must be integer"); a detail the message already
    // says ("Request body is not valid JSON.") is not said twice.
    const detail = apiError.extra.details
      ?.map(d => `${d.location}${d.path === '/' ? '' : d.path} ${d.message}`)
      .filter(text => !apiError.message.toLowerCase().includes(text.toLowerCase()))
      .join('; ')
    const message = detail ? `${apiError.message} ${detail}.` : apiError.message
    return request.routeOptions.config.oauthErrors === 'invalid_client_metadata'
      ? errors.invalidClientMetadata(message)
      : errors.oauthInvalidRequest(message)
  }
  return apiError
}

function mapError (
  err: FastifyError & { validationContext?: string },
  request: FastifyRequest,
  bodyLimit: number
): ApiError {
  if (err instanceof ApiError) return err
  if (err instanceof DatabaseUnavailableError) return errors.serviceUnavailable()
  if (err.validation) {
    const location = err.validationContext ?? 'body'
    const query = location === 'querystring' ? request.query : undefined
    return errors.validation(schemaDetails(err.validation, location, path => valueAt(query, path)))
  }
  switch (err.code) {
    case 'FST_ERR_CTP_BODY_TOO_LARGE':
      return errors.payloadTooLarge(bodyLimit)
    case 'FST_ERR_CTP_INVALID_MEDIA_TYPE':
      return errors.unsupportedMediaType(request.headers['content-type'])
    case 'FST_ERR_CTP_EMPTY_JSON_BODY':
      return errors.validation(
        [{ location: 'body', path: '/', message: 'is empty' }],
        'Request body must be a JSON object.'
      )
    case 'FST_ERR_CTP_INVALID_JSON_BODY':
      return errors.validation(
        [{ location: 'body', path: '/', message: 'is not valid JSON' }],
        'Request body is not valid JSON.'
      )
  }
  if (err instanceof SyntaxError || (err as { type?: string }).type === 'entity.parse.failed') {
    return errors.validation(
      [{ location: 'body', path: '/', message: 'is not valid JSON' }],
      'Request body is not valid JSON.'
    )
  }
  // Postgres refuses NUL in text (22021) and characters its encoding cannot hold (22P05): the input's fault.
  if (err.code === '22021' || err.code === '22P05') return errors.nulCharacter()
  // Fastify's router, on a method it has no route table for at all.
  if (err.code === 'FST_ERR_NOT_FOUND') {
    return errors.notFound(`No route ${request.method} ${request.url.split('?')[0]}.`)
  }
  if (err.statusCode === 400) {
    return errors.validation([{ location: 'request', path: '/', message: err.message }], 'The request is malformed.')
  }
  // The static files of /docs: a path it refuses to serve is one that does not exist; a Range past the file is 416.
  if (err.statusCode === 403 || err.statusCode === 404) return errors.notFound()
  if (err.statusCode === 416) return errors.rangeNotSatisfiable()
  return errors.internal()
}

/** The one error handler and the one not-found handler. */
export default fp(
  async app => {
    const bodyLimit = app.initialConfig.bodyLimit ?? 1_048_576
    app.setErrorHandler((err: FastifyError, request, reply) => {
      const apiError = toApiError(err, request, request.routeOptions.bodyLimit ?? bodyLimit)
      // Only the unforeseen is worth a log line of its own.
      if (apiError.code === 'internal_error') request.log.error({ err }, 'request failed')
      // Also on the paths that skip the request hooks (a method the router has no table for).
      reply.header('x-request-id', request.id)
      const html = request.routeOptions.config?.htmlErrors
      if (html && wantsHtml(request)) {
        const page = html(apiError, request)
        return reply.code(apiError.statusCode).headers({ ...apiError.headers, ...page.headers }).send(page.body)
      }
      return sendError(reply, apiError)
    })
    // Node answers an Expect other than 100-continue by itself, with an empty 417; this one is from the catalog.
    app.server.on('checkExpectation', (_request, response: import('node:http').ServerResponse) => {
      const body = JSON.stringify(errors.expectationFailed().body())
      response.writeHead(417, {
        'content-type': 'application/json; charset=utf-8',
        'content-length': Buffer.byteLength(body),
        'x-request-id': randomUUID(),
        connection: 'close'
      }).end(body)
    })
    app.setNotFoundHandler((request, reply) => {
      const path = request.url.split('?')[0]
      return sendError(reply, errors.notFound(`No route ${request.method} ${path}.`))
    })
  },
  { name: 'errors' }
)

/** Errors Fastify raises before routing (bad percent-encoding, over-long path segments), through the catalog. */
export const frameworkErrors: NonNullable<FastifyServerOptions['frameworkErrors']> = (err, request, reply) => {
  reply.header('x-request-id', request.id)
  sendError(reply, err.code === 'FST_ERR_MAX_PARAM_LENGTH' ? errors.uriTooLong() : errors.badUrl())
}

/** Requests Node's HTTP parser rejects before Fastify sees them: still a catalog body and a request id. */
export function clientErrorHandler (err: NodeJS.ErrnoException, socket: Socket): void {
  if (err.code === 'ECONNRESET' || socket.destroyed || !socket.writable) return
  const e =
    err.code === 'HPE_HEADER_OVERFLOW'
      ? errors.headersTooLarge()
      : err.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? errors.requestTimeout()
        : errors.malformedRequest()
  const body = JSON.stringify(e.body())
  socket.end(
    `HTTP/1.1 ${e.statusCode} ${e.code.replace(/_/g, ' ')}\r\n` +
      'Connection: close\r\nContent-Type: application/json; charset=utf-8\r\n' +
      `Content-Length: ${Buffer.byteLength(body)}\r\nx-request-id: ${randomUUID()}\r\n\r\n${body}`
  )
}
