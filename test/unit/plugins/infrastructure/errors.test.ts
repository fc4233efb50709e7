import type { Socket } from 'node:net'
import { Writable } from 'node:stream'
import { Ajv } from 'ajv'
import Fastify, { type FastifyInstance } from 'fastify'
import { TypeCompiler } from '@sinclair/typebox/compiler'
import t from 'tap'
import { ErrorBody } from '../../../../schemas/errors.js'
import { DatabaseUnavailableError } from '../../../../plugins/infrastructure/db/types.js'
import errorsPlugin, {
  ApiError,
  clientErrorHandler,
  errors,
  frameworkErrors,
  JsonRpcHttpError,
  sendError
} from '../../../../plugins/infrastructure/errors.js'

/**
 * The error handler on a bare Fastify instance, with routes that throw what the service's routes and Fastify itself
 * throw: no app, no database. Every body is checked against the one ErrorBody schema the OpenAPI document states.
 */
const isErrorBody = TypeCompiler.Compile(ErrorBody)
const logged: Array<Record<string, unknown>> = []
const app: FastifyInstance = Fastify({
  bodyLimit: 100,
  routerOptions: { maxParamLength: 20 },
  frameworkErrors,
  // As the service validates bodies: unknown fields refused, nothing coerced.
  ajv: { customOptions: { removeAdditional: false, coerceTypes: false, allErrors: false } },
  logger: {
    level: 'error',
    stream: new Writable({
      write (chunk, _enc, done) {
        logged.push(JSON.parse(String(chunk)))
        done()
      }
    })
  }
})
await app.register(errorsPlugin)

const strictBody = {
  type: 'object',
  properties: { a: { type: 'integer' }, b: { type: 'string' } },
  required: ['a'],
  additionalProperties: false
}
const throwing = new Map<string, () => unknown>()
app.post('/json', { schema: { body: strictBody } }, async () => ({ ok: true }))
app.get('/query', { schema: { querystring: { type: 'object', properties: { n: { type: 'integer' } } } } },
  async () => ({ ok: true }))
// As the service validates requests: every error of every branch; query strings coerced, bodies not (app.ts).
const serviceAjv = (coerceTypes: boolean | 'array') =>
  new Ajv({ allErrors: true, coerceTypes, removeAdditional: false, useDefaults: true, strict: false })
const [strictAjv, coercingAjv] = [serviceAjv(false), serviceAjv('array')]
// A choice of literals as TypeBox writes one (Type.Union of Type.Literal).
const literals = { anyOf: ['draft', 'paid', 'voided'].map(v => ({ type: 'string', const: v })) }
app.post('/choices', {
  schema: {
    querystring: { type: 'object', properties: { status: literals }, additionalProperties: false },
    body: {
      type: 'object',
      properties: {
        status: literals,
        note: { anyOf: [{ type: 'string' }, { type: 'null' }] },
        limit: { anyOf: [{ type: 'integer' }, { const: 'all' }] },
        shape: { anyOf: [{ type: 'object', required: ['a'] }, { type: 'string', pattern: '^s' }] },
        mode: { enum: [1, 'two'] },
        both: { allOf: [literals, { anyOf: [{ const: 'draft' }, { const: 'paid' }] }] }
      },
      additionalProperties: false
    }
  },
  validatorCompiler: ({ schema, httpPart }) => (httpPart === 'body' ? strictAjv : coercingAjv).compile(schema)
}, async () => ({ ok: true }))
app.get('/throw/:what', async request => {
  throw throwing.get((request.params as { what: string }).what)!()
})
app.get('/p/:id', async () => ({ ok: true }))
app.post('/oauth', { schema: { body: strictBody }, config: { oauthErrors: true } }, async () => ({ ok: true }))
app.post('/register', { schema: { body: strictBody }, config: { oauthErrors: 'invalid_client_metadata' } },
  async () => ({ ok: true }))
app.post('/rpc', { schema: { body: strictBody }, config: { jsonRpcErrors: true } }, async () => ({ ok: true }))
app.get('/rpc/throw/:what', { config: { jsonRpcErrors: true } }, async request => {
  throw throwing.get((request.params as { what: string }).what)!()
})
app.get('/page/throw/:what', {
  config: {
    htmlErrors: e => ({ headers: { 'content-type': 'text/html' }, body: `<h1>${e.statusCode} ${e.message}</h1>` })
  }
}, async request => {
  throw throwing.get((request.params as { what: string }).what)!()
})
throwing.set('api', () => errors.insufficientScope(['invoices:read', 'bills:read'], ['bills:read']))
throwing.set('db', () => new DatabaseUnavailableError('timeout', { cause: new Error('x') }))
throwing.set('bug', () => new TypeError('secret internals'))
throwing.set('nul', () => Object.assign(new Error('invalid byte sequence'), { code: '22021' }))
throwing.set('encoding', () => Object.assign(new Error('character cannot be encoded'), { code: '22P05' }))
throwing.set('400', () => Object.assign(new Error('bad thing'), { statusCode: 400 }))
throwing.set('403', () => Object.assign(new Error('forbidden path'), { statusCode: 403 }))
throwing.set('404', () => Object.assign(new Error('no file'), { statusCode: 404 }))
throwing.set('416', () => Object.assign(new Error('range'), { statusCode: 416 }))
throwing.set('418', () => Object.assign(new Error('teapot'), { statusCode: 418 }))
throwing.set('syntax', () => new SyntaxError('Unexpected token'))
throwing.set('expired', () => errors.accessTokenExpired())
throwing.set('notfound', () => errors.subscriptionNotFound())
throwing.set('rate', () => errors.rateLimited(7))
await app.ready()
t.teardown(() => app.close())

const NO_STORE = { 'cache-control': 'no-store', pragma: 'no-cache' }
const post = (url: string, payload: string, contentType: string | undefined = 'application/json') =>
  app.inject({ method: 'POST', url, payload, headers: contentType ? { 'content-type': contentType } : {} })

t.test('the catalog: status, code, byte-exact message and headers of every entry', async t => {
  const rows: Array<[ApiError, number, string, string, Record<string, string>?]> = [
    [errors.missingBearer(), 401, 'invalid_token', 'Missing bearer token.',
      { 'www-authenticate': 'Bearer realm="public"' }],
    [errors.invalidAccessToken(), 401, 'invalid_token', 'Invalid access token.', {
      'www-authenticate': 'Bearer realm="public", error="invalid_token", error_description="Invalid access token."'
    }],
    [errors.accessTokenExpired(), 401, 'invalid_token', 'Access token expired.', {
      'www-authenticate': 'Bearer realm="public", error="invalid_token", error_description="Access token expired."'
    }],
    [errors.apiKeyDisabled(), 401, 'invalid_client', "The app's API key is disabled.", {
      'www-authenticate': 'Bearer realm="public", error="invalid_token", ' +
        'error_description="The app\'s API key is disabled."'
    }],
    [errors.installNotActive(), 401, 'invalid_token', 'Install is not active.'],
    [errors.tenantMismatch(), 403, 'tenant_mismatch', "Path tenant does not match the token's tenant.", {}],
    [errors.insufficientScope(['a:read', 'b:read'], ['b:read']), 403, 'insufficient_scope', 'Missing scope: b:read',
      { 'www-authenticate': 'Bearer error="insufficient_scope", scope="a:read b:read"' }],
    [errors.notImplemented('GET', '/x/{id}'), 501, 'not_implemented', 'GET /x/{id} is not implemented yet.', {}],
    [errors.rateLimited(12), 429, 'rate_limited', 'Rate limit exceeded.', { 'retry-after': '12' }],
    [errors.marketplaceTokenOnUserRoute(), 401, 'invalid_token',
      'Marketplace app tokens cannot be used on user routes.', {}],
    [errors.missingUserSession(), 401, 'invalid_token', 'Missing user session.',
      { 'www-authenticate': 'Bearer realm="user"' }],
    [errors.invalidUserSession(), 401, 'invalid_token', 'Invalid or expired user session.',
      { 'www-authenticate': 'Bearer realm="user", error="invalid_token"' }],
    [errors.notMemberOfTenant(), 403, 'forbidden', 'You do not belong to this organisation or entity.', {}],
    [errors.crossSiteRequest(), 403, 'forbidden', 'Cross-site form submissions are not accepted.', {}],
    [errors.unknownScope(['x', 'y']), 400, 'unknown_scope', 'Unknown scope: x, y', {}],
    [errors.conflict('Taken.'), 409, 'conflict', 'Taken.', {}],
    [errors.invalidRedirectUri('Bad.'), 400, 'invalid_redirect_uri', 'Bad.', {}],
    [errors.oauthInvalidRequest('Why.'), 400, 'invalid_request', 'Why.', NO_STORE],
    [errors.oauthInvalidClient(), 401, 'invalid_client', 'Client authentication failed.',
      NO_STORE],
    [errors.oauthInvalidClient('Nope.', true), 401, 'invalid_client', 'Nope.',
      { 'cache-control': 'no-store', pragma: 'no-cache', 'www-authenticate': 'Basic realm="oauth"' }],
    [errors.oauthInvalidGrant('Used.'), 400, 'invalid_grant', 'Used.', NO_STORE],
    [errors.oauthUnsupportedGrantType(), 400, 'unsupported_grant_type',
      'grant_type must be authorization_code or refresh_token.', NO_STORE],
    [errors.oauthInvalidTarget('Where.'), 400, 'invalid_target', 'Where.', NO_STORE],
    [errors.clientMetadataRefused('Doc.'), 400, 'invalid_client', 'Doc.', NO_STORE],
    [errors.registrationInvalidRedirectUri('R.'), 400, 'invalid_redirect_uri', 'R.',
      NO_STORE],
    [errors.invalidClientMetadata('M.'), 400, 'invalid_client_metadata', 'M.',
      NO_STORE],
    [errors.missingToolToken('whoami'), 401, 'invalid_token',
      'The whoami tool acts in a tenant: send the install\'s access token as "Authorization: Bearer <token>".', {}],
    [errors.unknownTopic(['a.b']), 400, 'unknown_topic', 'Unknown topic: a.b', {}],
    [errors.topicNotEmitted('lot.created'), 422, 'topic_not_emitted',
      'Topic lot.created is planned and not emitted yet.', {}],
    [errors.invalidTargetUrl('T.'), 400, 'invalid_target_url', 'T.', {}],
    [errors.eventConflict(), 409, 'event_conflict',
      'An event with this id was already accepted with a different topic, tenant or data.', {}],
    [errors.limitExceeded('L.'), 422, 'limit_exceeded', 'L.', {}],
    [errors.appNotFound(), 404, 'not_found', 'No such app among yours.', {}],
    [errors.installNotFound(), 404, 'not_found', 'No active install with this id in your organisation.', {}],
    [errors.subscriptionNotFound(), 404, 'not_found', 'No such subscription among yours.', {}],
    [errors.deliveryNotFound(), 404, 'not_found', 'No such delivery for this subscription.', {}],
    [errors.subscriptionInactive(), 409, 'conflict', 'The subscription is not active; create a new one.', {}],
    [errors.idempotencyConflict(), 409, 'idempotency_conflict',
      'This Idempotency-Key was used with other parameters.', {}],
    [errors.invalidEventsToken(), 401, 'invalid_token', 'A valid events token is required.',
      { 'www-authenticate': 'Bearer realm="events"' }],
    [errors.invalidMetricsToken(), 401, 'invalid_token', 'A valid metrics token is required.',
      { 'www-authenticate': 'Bearer realm="metrics"' }],
    [errors.notFound(), 404, 'not_found', 'Not found.', {}],
    [errors.unsupportedMediaType('text/xml'), 415, 'unsupported_media_type',
      'Content-Type "text/xml" is not supported; send application/json.', {}],
    [errors.unsupportedMediaType(undefined), 415, 'unsupported_media_type',
      'Content-Type (none) is not supported; send application/json.', {}],
    [errors.payloadTooLarge(65536), 413, 'payload_too_large', 'Request body is larger than 65536 bytes.', {}],
    [errors.nulCharacter(), 400, 'validation_error', 'Text must not contain NUL characters.', {}],
    [errors.badUrl(), 400, 'validation_error', 'The URL is not valid (bad percent-encoding).', {}],
    [errors.rangeNotSatisfiable(), 416, 'range_not_satisfiable', 'The requested range is not satisfiable.', {}],
    [errors.expectationFailed(), 417, 'expectation_failed', 'Only "Expect: 100-continue" is supported.', {}],
    [errors.nestingTooDeep(64), 400, 'validation_error', 'JSON must not nest deeper than 64 levels.', {}],
    [errors.uriTooLong(), 414, 'uri_too_long', 'A path segment is too long.', {}],
    [errors.headersTooLarge(), 431, 'request_header_fields_too_large', 'Request headers are too large.', {}],
    [errors.requestTimeout(), 408, 'request_timeout', 'The request took too long to arrive.', {}],
    [errors.malformedRequest(), 400, 'bad_request', 'Malformed HTTP request.', {}],
    [errors.internal(), 500, 'internal_error',
      'Something went wrong on our side. It has been logged; try again later.', {}],
    [errors.serviceUnavailable(), 503, 'service_unavailable',
      'The service is temporarily unavailable. Try again in a few seconds.', { 'retry-after': '5' }]
  ]
  for (const [e, status, code, message, headers] of rows) {
    const what = `${code}: ${message}`
    t.ok(e instanceof ApiError && !(e instanceof JsonRpcHttpError), `${what}: a catalog error`)
    t.equal(e.statusCode, status, `${what}: ${status}`)
    t.equal(e.code, code)
    t.equal(e.message, message)
    if (headers) t.same(e.headers, headers, `${what}: headers`)
    t.ok(isErrorBody.Check(e.body()), `${what}: an ErrorBody`)
    t.same(Object.keys(e.body()).slice(0, 2), ['error', 'message'], `${what}: error and message first`)
  }
  t.same(errors.insufficientScope(['a:read', 'b:read'], ['b:read']).body(),
    { error: 'insufficient_scope', message: 'Missing scope: b:read', required: ['a:read', 'b:read'] })
  t.same(errors.unknownTopic(['a.b', 'c']).body().unknown, ['a.b', 'c'])
  t.same(errors.oauthInvalidGrant('Used.').body(),
    { error: 'invalid_grant', message: 'Used.', error_description: 'Used.' })
  t.same(errors.nestingTooDeep(64).body().details,
    [{ location: 'body', path: '/', message: 'nests deeper than 64 levels' }])
  t.not(errors.notFound(), errors.notFound(), 'each call makes a new error (headers are not shared)')
})

t.test('JSON-RPC errors of the MCP endpoint', async t => {
  const rows: Array<[JsonRpcHttpError, number, number, string, Record<string, string>]> = [
    [errors.mcpSessionNotFound(), 404, -32001, 'Session not found.', {}],
    [errors.mcpNoSession(), 400, -32000,
      'Bad Request: no valid session; send initialize first, without Mcp-Session-Id.', {}],
    [errors.mcpRateLimited(3), 429, -32000, 'Rate limit exceeded.', { 'retry-after': '3' }],
    [errors.mcpForbidden('Origin refused.'), 403, -32000, 'Origin refused.', {}],
    [errors.mcpParseError('bad'), 400, -32700, 'Parse error: bad', {}],
    [errors.mcpInvalidRequest(413, 'too big'), 413, -32600, 'Invalid Request: too big', {}],
    [errors.mcpServiceUnavailable(), 503, -32000, 'The service is temporarily unavailable. Try again in a few seconds.',
      { 'retry-after': '5' }],
    [errors.mcpInternal(), 500, -32603, 'Internal error.', {}]
  ]
  for (const [e, status, code, message, headers] of rows) {
    t.equal(e.statusCode, status, `${message}: ${status}`)
    t.same(e.headers, headers)
    t.same(e.body(), { jsonrpc: '2.0', error: { code, message }, id: null }, `${message}: the JSON-RPC body`)
  }
})

t.test('a 401 on /mcp points at the protected-resource metadata, with the error only when a token came', async t => {
  const meta = 'https://gw.example/.well-known/oauth-protected-resource/mcp'
  const missing = errors.mcpUnauthorized(errors.missingBearer(), meta, 'invoices:read bills:read')
  t.equal(missing.statusCode, 401)
  t.equal(missing.headers['www-authenticate'],
    `Bearer resource_metadata="${meta}", scope="invoices:read bills:read"`)
  const expired = errors.mcpUnauthorized(errors.accessTokenExpired(), meta, 'invoices:read')
  t.equal(expired.headers['www-authenticate'], `Bearer resource_metadata="${meta}", scope="invoices:read", ` +
    'error="invalid_token", error_description="Access token expired."')
  t.same(expired.body(), errors.accessTokenExpired().body(), 'the catalog body')
  const quoted = errors.mcpUnauthorized(new ApiError(401, 'invalid_token', 'a "b" \\c', {},
    { 'www-authenticate': 'Bearer error="invalid_token"' }), meta, 's')
  t.match(quoted.headers['www-authenticate'], /error_description="a \\"b\\" \\\\c"$/, 'quotes and backslashes escaped')
})

t.test('schema failures: 400 validation_error with where and what', async t => {
  const res = await post('/json', JSON.stringify({ a: 'x', c: 1 }))
  t.equal(res.statusCode, 400)
  const body = res.json()
  t.equal(body.error, 'validation_error')
  t.equal(body.message, 'Request validation failed.')
  t.ok(isErrorBody.Check(body))
  t.ok(body.details.length >= 1)
  t.ok(body.details.every((d: { location: string }) => d.location === 'body'))
  const missing = await post('/json', '{}')
  t.same(missing.json().details, [{ location: 'body', path: '/', message: "must have required property 'a'" }])
  const unknown = await post('/json', '{"a":1,"c":1}')
  t.same(unknown.json().details, [{ location: 'body', path: '/', message: 'unknown field "c"' }])
  const wrongType = await post('/json', '{"a":"x"}')
  t.same(wrongType.json().details, [{ location: 'body', path: '/a', message: 'must be integer' }])
  const query = await app.inject({ url: '/query?n=abc' })
  t.equal(query.statusCode, 400)
  t.same(query.json().details, [{ location: 'querystring', path: '/n', message: 'must be integer' }])
  t.ok(query.headers['x-request-id'], 'the request id on an error')
})

t.test('a choice fails once, naming what it takes; a query parameter given several times says so', async t => {
  const details = async (query: string, body: object) =>
    (await post(`/choices${query}`, JSON.stringify(body))).json().details
  const q = (message: string) => [{ location: 'querystring', path: '/status', message }]
  const b = (path: string, message: string) => ({ location: 'body', path, message })
  t.same(await details('?status=sent', {}), q('must be one of draft, paid, voided'), 'not one detail per value')
  t.same(await details('?status=paid&status=voided', {}), q('is given 2 times: give it once, as one of draft, ' +
    'paid, voided'), 'given twice: one detail that says so, not nine')
  t.same(await details('?status=paid&status=paid&status=x', {}), q('is given 3 times: give it once, as one of ' +
    'draft, paid, voided'))
  t.same(await details('?status=paid', {
    status: ['paid'], note: 5, limit: 'some', shape: { b: 1 }, mode: 2, both: 'voided'
  }), [
    b('/status', 'must be one of draft, paid, voided'),
    b('/note', 'must be a string or null'),
    b('/limit', 'must be one of all, an integer'),
    b('/shape', 'must match one of the forms it allows'),
    b('/mode', 'must be one of 1, two'),
    b('/both', 'must be one of draft, paid')
  ], 'in a body too: an array is not "given several times"; types, a mix, shapes and enums each once')
  t.same(await details('', { status: 'paid', note: null, limit: 'all', shape: 'square', mode: 'two', both: 'paid' }),
    undefined, 'and every choice it allows passes')
})

t.test('what Fastify throws while reading a body', async t => {
  const large = await post('/json', JSON.stringify({ a: 1, b: 'x'.repeat(200) }))
  t.equal(large.statusCode, 413)
  t.same(large.json(), { error: 'payload_too_large', message: 'Request body is larger than 100 bytes.' })
  const bad = await post('/json', '{"a":')
  t.equal(bad.statusCode, 400)
  t.same(bad.json(), {
    error: 'validation_error',
    message: 'Request body is not valid JSON.',
    details: [{ location: 'body', path: '/', message: 'is not valid JSON' }]
  })
  const empty = await post('/json', '')
  t.equal(empty.statusCode, 400)
  t.same(empty.json(), {
    error: 'validation_error',
    message: 'Request body must be a JSON object.',
    details: [{ location: 'body', path: '/', message: 'is empty' }]
  })
  const xml = await post('/json', '<a/>', 'application/xml')
  t.equal(xml.statusCode, 415)
  t.same(xml.json(), {
    error: 'unsupported_media_type',
    message: 'Content-Type "application/xml" is not supported; send application/json.'
  })
  const proto = await post('/json', '{"a":1,"__proto__":{"x":1}}')
  t.equal(proto.statusCode, 400, 'a prototype-poisoning body is a bad body')
  t.equal(proto.json().error, 'validation_error')
})

t.test('what a route throws', async t => {
  const get = (what: string, prefix = '/throw') => app.inject({ url: `${prefix}/${what}` })
  const api = await get('api')
  t.equal(api.statusCode, 403)
  t.equal(api.headers['www-authenticate'], 'Bearer error="insufficient_scope", scope="invoices:read bills:read"')
  t.same(api.json(), errors.insufficientScope(['invoices:read', 'bills:read'], ['bills:read']).body())
  const db = await get('db')
  t.equal(db.statusCode, 503)
  t.equal(db.headers['retry-after'], '5')
  t.equal(db.json().error, 'service_unavailable')
  logged.length = 0
  const bug = await get('bug')
  t.equal(bug.statusCode, 500)
  t.same(bug.json(), errors.internal().body(), 'a generic message')
  t.notMatch(bug.body, /secret internals/, 'nothing of the error leaks')
  t.equal(logged.length, 1, 'the unforeseen is logged')
  t.equal((logged[0]!.err as { message: string }).message, 'secret internals')
  logged.length = 0
  await get('api')
  await get('db')
  t.equal(logged.length, 0, 'catalog errors and outages are not logged as failures')
  t.same((await get('nul')).json(), errors.nulCharacter().body(), 'Postgres 22021: NUL in text')
  t.same((await get('encoding')).json(), errors.nulCharacter().body(), 'Postgres 22P05: not encodable')
  const malformed = await get('400')
  t.same(malformed.json(), {
    error: 'validation_error',
    message: 'The request is malformed.',
    details: [{ location: 'request', path: '/', message: 'bad thing' }]
  })
  t.same((await get('403')).json(), errors.notFound().body(), 'a refused static path is one that does not exist')
  t.same((await get('404')).json(), errors.notFound().body())
  t.equal((await get('416')).statusCode, 416)
  t.same((await get('418')).json(), errors.internal().body(), 'any other status is a 500')
  t.same((await get('syntax')).json().message, 'Request body is not valid JSON.')
  const notFound = await app.inject({ url: '/nowhere/at/all?token=secret' })
  t.equal(notFound.statusCode, 404)
  t.same(notFound.json(), { error: 'not_found', message: 'No route GET /nowhere/at/all.' }, 'the query is not echoed')
})

t.test('OAuth routes: a malformed request is invalid_request (or invalid_client_metadata), the details in words',
  async t => {
    const res = await post('/oauth', '{"a":"x"}')
    t.equal(res.statusCode, 400)
    t.same(res.json(), {
      error: 'invalid_request',
      message: 'Request validation failed. body/a must be integer.',
      error_description: 'Request validation failed. body/a must be integer.'
    })
    t.equal(res.headers['cache-control'], 'no-store')
    t.same((await post('/oauth', '{}')).json().message,
      "Request validation failed. body must have required property 'a'.",
      'a detail at the root names no path')
    const bad = await post('/oauth', '{')
    t.same(bad.json().message, 'Request body is not valid JSON.', 'a detail the message already says is not repeated')
    t.same((await post('/oauth', '')).json().message, 'Request body must be a JSON object. body is empty.',
      'one it does not say is added, where it is, then what is wrong')
    const reg = await post('/register', '{"a":1,"z":2}')
    t.same(reg.json(), {
      error: 'invalid_client_metadata',
      message: 'Request validation failed. body unknown field "z".',
      error_description: 'Request validation failed. body unknown field "z".'
    })
    const media = await post('/oauth', 'a=1', 'text/csv')
    t.equal(media.json().error, 'unsupported_media_type', 'only validation errors are reshaped')
  })

t.test('the MCP endpoint: errors before the transport are JSON-RPC bodies, except the 401s', async t => {
  const parse = await post('/rpc', '{"a":')
  t.equal(parse.statusCode, 400)
  t.same(parse.json(),
    { jsonrpc: '2.0', error: { code: -32700, message: 'Parse error: Request body is not valid JSON.' }, id: null })
  const invalid = await post('/rpc', '{"a":"x"}')
  t.same(invalid.json().error, { code: -32700, message: 'Parse error: Request validation failed.' })
  const large = await post('/rpc', JSON.stringify({ a: 1, b: 'x'.repeat(200) }))
  t.equal(large.statusCode, 413)
  t.same(large.json().error, { code: -32600, message: 'Invalid Request: Request body is larger than 100 bytes.' })
  const media = await post('/rpc', 'x', 'text/csv')
  t.equal(media.statusCode, 415)
  t.equal(media.json().error.code, -32600)
  const get = (what: string) => app.inject({ url: `/rpc/throw/${what}` })
  const expired = await get('expired')
  t.equal(expired.statusCode, 401)
  t.same(expired.json(), errors.accessTokenExpired().body(), 'a 401 keeps its catalog body')
  const db = await get('db')
  t.equal(db.statusCode, 503)
  t.equal(db.headers['retry-after'], '5')
  t.same(db.json().error,
    { code: -32000, message: 'The service is temporarily unavailable. Try again in a few seconds.' })
  const bug = await get('bug')
  t.equal(bug.statusCode, 500)
  t.same(bug.json().error, { code: -32603, message: 'Internal error.' })
  const rate = await get('rate')
  t.equal(rate.statusCode, 429)
  // Reshaped, a catalog error keeps its status but not its headers: the MCP route throws its own mcpRateLimited,
  // which carries Retry-After (next subtest), rather than the catalog's rateLimited.
  t.equal(rate.headers['retry-after'], undefined, 'the catalog error\'s headers are not carried over')
  t.same(rate.json().error, { code: -32600, message: 'Invalid Request: Rate limit exceeded.' })
})

t.test('a JSON-RPC error thrown on the MCP endpoint is sent as it is, headers included', async t => {
  throwing.set('mcp-rate', () => errors.mcpRateLimited(9))
  const res = await app.inject({ url: '/rpc/throw/mcp-rate' })
  t.equal(res.statusCode, 429)
  t.equal(res.headers['retry-after'], '9')
  t.same(res.json(), { jsonrpc: '2.0', error: { code: -32000, message: 'Rate limit exceeded.' }, id: null })
})

t.test('pages a person opens: the error as a page for a browser, as JSON for a program', async t => {
  const html = await app.inject({ url: '/page/throw/notfound', headers: { accept: 'text/html,application/xhtml+xml' } })
  t.equal(html.statusCode, 404)
  t.equal(html.headers['content-type'], 'text/html')
  t.equal(html.body, '<h1>404 No such subscription among yours.</h1>')
  const rate = await app.inject({ url: '/page/throw/rate', headers: { accept: 'text/html' } })
  t.equal(rate.headers['retry-after'], '7', 'the error\'s own headers too')
  const json = await app.inject({ url: '/page/throw/notfound', headers: { accept: 'application/json' } })
  t.same(json.json(), errors.subscriptionNotFound().body())
})

t.test('errors before routing: bad percent-encoding, an over-long path segment', async t => {
  const bad = await app.inject({ url: '/p/%zz' })
  t.equal(bad.statusCode, 400)
  t.same(bad.json(), errors.badUrl().body())
  t.ok(bad.headers['x-request-id'])
  const long = await app.inject({ url: `/p/${'x'.repeat(21)}` })
  t.equal(long.statusCode, 414)
  t.same(long.json(), errors.uriTooLong().body())
  t.equal((await app.inject({ url: `/p/${'x'.repeat(20)}` })).statusCode, 200, 'at the limit: served')
})

t.test('requests Node rejects before Fastify: a catalog body on the raw socket', async t => {
  const socket = (destroyed = false, writable = true) => {
    const s = { destroyed, writable, written: undefined as string | undefined, end (data: string) { s.written = data } }
    return s
  }
  const answer = (code: string | undefined) => {
    const s = socket()
    clientErrorHandler(Object.assign(new Error('x'), { code }), s as unknown as Socket)
    return s.written!
  }
  const parse = (raw: string) => {
    const [head, body] = raw.split('\r\n\r\n')
    const [status, ...lines] = head!.split('\r\n')
    const headers = Object.fromEntries(lines.map(l => [l.slice(0, l.indexOf(':')).toLowerCase(),
      l.slice(l.indexOf(':') + 2)]))
    return { status, headers, body: body! }
  }
  for (const [code, status, e] of [
    ['HPE_HEADER_OVERFLOW', 'HTTP/1.1 431 request header fields too large', errors.headersTooLarge()],
    ['ERR_HTTP_REQUEST_TIMEOUT', 'HTTP/1.1 408 request timeout', errors.requestTimeout()],
    ['HPE_INVALID_METHOD', 'HTTP/1.1 400 bad request', errors.malformedRequest()],
    [undefined, 'HTTP/1.1 400 bad request', errors.malformedRequest()]
  ] as Array<[string | undefined, string, ApiError]>) {
    const r = parse(answer(code))
    t.equal(r.status, status, String(code))
    t.equal(r.body, JSON.stringify(e.body()))
    t.equal(r.headers['content-length'], String(Buffer.byteLength(r.body)))
    t.equal(r.headers.connection, 'close')
    t.match(r.headers['x-request-id'], /^[0-9a-f-]{36}$/)
  }
  for (const [what, s, code] of [
    ['a reset connection', socket(), 'ECONNRESET'],
    ['a destroyed socket', socket(true), 'HPE_INVALID_METHOD'],
    ['a socket no longer writable', socket(false, false), 'HPE_INVALID_METHOD']
  ] as Array<[string, ReturnType<typeof socket>, string]>) {
    clientErrorHandler(Object.assign(new Error('x'), { code }), s as unknown as Socket)
    t.equal(s.written, undefined, `${what}: nothing written`)
  }
})

t.test('an Expect other than 100-continue: the catalog 417', async t => {
  const res = { status: 0, headers: {} as Record<string, unknown>, body: '' }
  const response = {
    writeHead (status: number, headers: Record<string, unknown>) {
      res.status = status
      res.headers = headers
      return response
    },
    end (body: string) { res.body = body }
  }
  app.server.emit('checkExpectation', {}, response)
  t.equal(res.status, 417)
  t.same(JSON.parse(res.body), errors.expectationFailed().body())
  t.equal(res.headers['content-length'], Buffer.byteLength(res.body))
  t.equal(res.headers.connection, 'close')
  t.ok(res.headers['x-request-id'])
})

t.test('sendError writes status, headers and body', async t => {
  const one = Fastify()
  one.get('/', (_request, reply) => sendError(reply, errors.rateLimited(3)))
  t.teardown(() => one.close())
  const res = await one.inject({ url: '/' })
  t.equal(res.statusCode, 429)
  t.equal(res.headers['retry-after'], '3')
  t.same(res.json(), { error: 'rate_limited', message: 'Rate limit exceeded.' })
})
