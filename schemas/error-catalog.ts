import type { ErrorBody } from './errors.js'

// The error catalog: what the service answers, as data the OpenAPI document (schemas/error-responses.ts) and the
// error handler (plugins/infrastructure/errors.ts) both read. It sits with the schemas, below the plugins, so that the
// schemas need nothing from a plugin.

type Extra = Omit<ErrorBody, 'error' | 'message'>

/** An error the client caused or must know about. The only way any part of the service answers with an error. */
export class ApiError extends Error {
  constructor (
    readonly statusCode: number,
    readonly code: string,
    message: string,
    readonly extra: Extra = {},
    readonly headers: Record<string, string> = {}
  ) {
    super(message)
    this.name = 'ApiError'
  }

  body (): Record<string, unknown> {
    return { error: this.code, message: this.message, ...this.extra }
  }
}

/** An HTTP error on the MCP endpoint: the body is a JSON-RPC error, as MCP clients expect. */
export class JsonRpcHttpError extends ApiError {
  constructor (
    statusCode: number,
    readonly rpcCode: number,
    message: string,
    headers: Record<string, string> = {},
    /** The request's id, when the refusal concerns one request the client can tell apart. */
    readonly id: string | number | null = null
  ) {
    super(statusCode, 'jsonrpc_error', message, {}, headers)
  }

  override body (): Record<string, unknown> {
    return { jsonrpc: '2.0', error: { code: this.rpcCode, message: this.message }, id: this.id }
  }
}

/** How long a client should wait before retrying after a 503: about how long a database fail-over takes. */
const RETRY_AFTER_S = 5
const SERVICE_UNAVAILABLE = 'The service is temporarily unavailable. Try again in a few seconds.'

const quote = (s: string): string => s.replace(/["\\]/g, '\\$&')

/** A 401 on the public surface, with its RFC 6750 challenge (docs/rules.md#public-request-pipeline). */
function publicUnauthorized (code: string, message: string): ApiError {
  return new ApiError(
    401,
    code,
    message,
    {},
    {
      'www-authenticate': `Bearer realm="public", error="invalid_token", error_description="${quote(message)}"`
    }
  )
}

/** RFC 6749 section 5.2 errors: `error_description` for OAuth clients, `message` like every other error body. */
function oauthError (status: number, code: string, message: string, headers: Record<string, string> = {}): ApiError {
  return new ApiError(
    status,
    code,
    message,
    { error_description: message },
    { 'cache-control': 'no-store', pragma: 'no-cache', ...headers }
  )
}

/** The error catalog: every error body the service can send is built here. */
export const errors = {
  // Public pipeline (docs/rules.md#public-request-pipeline), in its order.
  missingBearer: () =>
    new ApiError(401, 'invalid_token', 'Missing bearer token.', {}, { 'www-authenticate': 'Bearer realm="public"' }),
  invalidAccessToken: () => publicUnauthorized('invalid_token', 'Invalid access token.'),
  accessTokenExpired: () => publicUnauthorized('invalid_token', 'Access token expired.'),
  accessTokenNotForMcp: (resource: string) =>
    publicUnauthorized('invalid_token',
      `The access token was not issued for this endpoint: ask for one with resource=${resource}.`),
  apiKeyDisabled: () => publicUnauthorized('invalid_client', "The app's API key is disabled."),
  installNotActive: () => publicUnauthorized('invalid_token', 'Install is not active.'),
  tenantMismatch: () => new ApiError(403, 'tenant_mismatch', "Path tenant does not match the token's tenant."),
  insufficientScope: (required: string[], missing: string[]) =>
    new ApiError(
      403,
      'insufficient_scope',
      `Missing scope: ${missing.join(', ')}`,
      { required },
      { 'www-authenticate': `Bearer error="insufficient_scope", scope="${required.join(' ')}"` }
    ),
  notImplemented: (method: string, route: string) =>
    new ApiError(501, 'not_implemented', `${method} ${route} is not implemented yet.`),
  rateLimited: (retryAfterSeconds: number) =>
    new ApiError(429, 'rate_limited', 'Rate limit exceeded.', {}, { 'retry-after': String(retryAfterSeconds) }),

  // Internal user surface.
  marketplaceTokenOnUserRoute: () =>
    new ApiError(401, 'invalid_token', 'Marketplace app tokens cannot be used on user routes.'),
  missingUserSession: () =>
    new ApiError(401, 'invalid_token', 'Missing user session.', {}, { 'www-authenticate': 'Bearer realm="user"' }),
  invalidUserSession: () =>
    new ApiError(
      401,
      'invalid_token',
      'Invalid or expired user session.',
      {},
      { 'www-authenticate': 'Bearer realm="user", error="invalid_token"' }
    ),
  notMemberOfTenant: () => new ApiError(403, 'forbidden', 'You do not belong to this organisation or entity.'),
  crossSiteRequest: () => new ApiError(403, 'forbidden', 'Cross-site form submissions are not accepted.'),
  // The dashboard's pages (routes/dashboard): a form without a valid token of the signed-in session, an action
  // without a session, a sign-in link that cannot be used.
  formTokenRefused: () => new ApiError(403, 'forbidden',
    'This form was not sent from your current dashboard session. Reload the page and try again.'),
  dashboardSignInRequired: () => new ApiError(403, 'forbidden', 'Sign in to the dashboard first.'),
  signInLinkRefused: () => new ApiError(400, 'invalid_sign_in_link',
    'This sign-in link has been used already, has expired or is not valid.'),
  unknownScope: (unknown: string[]) =>
    new ApiError(400, 'unknown_scope', `Unknown scope: ${unknown.join(', ')}`, { unknown }),
  conflict: (message: string) => new ApiError(409, 'conflict', message),
  invalidRedirectUri: (message: string) => new ApiError(400, 'invalid_redirect_uri', message),

  // OAuth (RFC 6749 codes).
  oauthInvalidRequest: (message: string) => oauthError(400, 'invalid_request', message),
  oauthInvalidClient: (message = 'Client authentication failed.', basic = false) =>
    oauthError(401, 'invalid_client', message, basic ? { 'www-authenticate': 'Basic realm="oauth"' } : {}),
  oauthInvalidGrant: (message: string) => oauthError(400, 'invalid_grant', message),
  oauthUnsupportedGrantType: () =>
    oauthError(400, 'unsupported_grant_type', 'grant_type must be authorization_code or refresh_token.'),
  /** RFC 8707 2: a resource this server issues no tokens for. */
  oauthInvalidTarget: (message: string) => oauthError(400, 'invalid_target', message),
  /** A client_id whose metadata document could not be used, at the authorization endpoint (not a redirect). */
  clientMetadataRefused: (message: string) => oauthError(400, 'invalid_client', message),
  // Dynamic Client Registration (RFC 7591 3.2.2).
  registrationInvalidRedirectUri: (message: string) => oauthError(400, 'invalid_redirect_uri', message),
  invalidClientMetadata: (message: string) => oauthError(400, 'invalid_client_metadata', message),

  // Tool protocol (docs/rules.md#mcp-endpoint).
  mcpSessionNotFound: () => new JsonRpcHttpError(404, -32001, 'Session not found.'),
  mcpNoSession: () =>
    new JsonRpcHttpError(400, -32000, 'Bad Request: no valid session; send initialize first, without Mcp-Session-Id.'),
  /** With the id of the request it refuses, when the body was one request with an id. */
  mcpRateLimited: (retryAfterSeconds: number, id: string | number | null = null) =>
    new JsonRpcHttpError(429, -32000, 'Rate limit exceeded.', { 'retry-after': String(retryAfterSeconds) }, id),
  mcpForbidden: (message: string) => new JsonRpcHttpError(403, -32000, message),
  mcpParseError: (message: string) => new JsonRpcHttpError(400, -32700, `Parse error: ${message}`),
  mcpInvalidRequest: (status: number, message: string) =>
    new JsonRpcHttpError(status, -32600, `Invalid Request: ${message}`),
  mcpIdInUse: (id: string | number) => new JsonRpcHttpError(409, -32600,
    `Invalid Request: id ${JSON.stringify(id)} is already in use by a request in progress in this session.`, {}, id),
  /** As the SDK's own session transport answers a second event stream. */
  mcpStreamConflict: () => new JsonRpcHttpError(409, -32000, 'Conflict: Only one SSE stream is allowed per session'),
  mcpNulParams: (id: string | number | null) =>
    new JsonRpcHttpError(400, -32602, 'Invalid params: params must not contain NUL characters.', {}, id),
  /**
   * A refused or missing token on /mcp: the same error, pointing clients at the protected-resource metadata
   * (RFC 9728) and the scopes the tools use, so that an MCP client starts OAuth on its own.
   */
  mcpUnauthorized: (e: ApiError, resourceMetadata: string, scope: string) =>
    new ApiError(e.statusCode, e.code, e.message, e.extra, {
      // As on /public/v1: no error attribute when no credentials came at all (RFC 6750 section 3.1).
      'www-authenticate': `Bearer resource_metadata="${resourceMetadata}", scope="${scope}"` +
        (/error=/.test(e.headers['www-authenticate'] ?? '')
          ? `, error="invalid_token", error_description="${quote(e.message)}"`
          : '')
    }),
  missingToolToken: (tool: string) =>
    new ApiError(
      401,
      'invalid_token',
      `The ${tool} tool acts in a tenant: send the install's access token as "Authorization: Bearer <token>".`
    ),

  // Webhooks (docs/rules.md#webhooks).
  unknownTopic: (unknown: string[]) =>
    new ApiError(400, 'unknown_topic', `Unknown topic: ${unknown.join(', ')}`, { unknown }),
  topicNotEmitted: (topic: string) =>
    new ApiError(422, 'topic_not_emitted', `Topic ${topic} is planned and not emitted yet.`),
  invalidTargetUrl: (message: string) => new ApiError(400, 'invalid_target_url', message),
  eventConflict: () => new ApiError(409, 'event_conflict',
    'An event with this id was already accepted with a different topic, tenant or data.'),
  limitExceeded: (message: string) => new ApiError(422, 'limit_exceeded', message),
  appNotFound: () => errors.notFound('No such app among yours.'),
  installNotFound: () => errors.notFound('No active install with this id in your organisation.'),
  subscriptionNotFound: () => errors.notFound('No such subscription among yours.'),
  recordNotFound: (title: 'Invoice' | 'Bill' | 'Customer') => errors.notFound(`${title} not found.`),
  invalidCursor: () => new ApiError(400, 'invalid_cursor',
    'The cursor is not one this listing gave: pass next_cursor unchanged, with the same order.'),
  deliveryNotFound: () => errors.notFound('No such delivery for this subscription.'),
  subscriptionInactive: () => errors.conflict('The subscription is not active; create a new one.'),
  idempotencyConflict: () => new ApiError(409, 'idempotency_conflict',
    'This Idempotency-Key was used with other parameters.'),
  invalidEventsToken: () =>
    new ApiError(
      401,
      'invalid_token',
      'A valid events token is required.',
      {},
      { 'www-authenticate': 'Bearer realm="events"' }
    ),

  invalidMetricsToken: () =>
    new ApiError(401, 'invalid_token', 'A valid metrics token is required.', {},
      { 'www-authenticate': 'Bearer realm="metrics"' }),

  // Generic (docs/rules.md#error-catalog).
  notFound: (message = 'Not found.') => new ApiError(404, 'not_found', message),
  validation: (details: NonNullable<ErrorBody['details']>, message = 'Request validation failed.') =>
    new ApiError(400, 'validation_error', message, { details }),
  unsupportedMediaType: (contentType: string | undefined) =>
    new ApiError(
      415,
      'unsupported_media_type',
      `Content-Type ${contentType ? JSON.stringify(contentType) : '(none)'} is not supported; send application/json.`
    ),
  payloadTooLarge: (limit: number) =>
    new ApiError(413, 'payload_too_large', `Request body is larger than ${limit} bytes.`),
  nulCharacter: () =>
    errors.validation(
      [{ location: 'request', path: '/', message: 'contains a NUL character' }],
      'Text must not contain NUL characters.'
    ),
  badUrl: () =>
    new ApiError(400, 'validation_error', 'The URL is not valid (bad percent-encoding).', {
      details: [{ location: 'url', path: '/', message: 'is not a valid URL' }]
    }),
  rangeNotSatisfiable: () => new ApiError(416, 'range_not_satisfiable', 'The requested range is not satisfiable.'),
  expectationFailed: () =>
    new ApiError(417, 'expectation_failed', 'Only "Expect: 100-continue" is supported.'),
  nestingTooDeep: (limit: number) =>
    errors.validation(
      [{ location: 'body', path: '/', message: `nests deeper than ${limit} levels` }],
      `JSON must not nest deeper than ${limit} levels.`
    ),
  uriTooLong: () => new ApiError(414, 'uri_too_long', 'A path segment is too long.'),
  headersTooLarge: () => new ApiError(431, 'request_header_fields_too_large', 'Request headers are too large.'),
  requestTimeout: () => new ApiError(408, 'request_timeout', 'The request took too long to arrive.'),
  malformedRequest: () => new ApiError(400, 'bad_request', 'Malformed HTTP request.'),
  internal: () =>
    new ApiError(500, 'internal_error', 'Something went wrong on our side. It has been logged; try again later.'),
  /** A dependency (the database) is down or not answering in time: nothing is wrong with the request. */
  serviceUnavailable: () =>
    new ApiError(503, 'service_unavailable', SERVICE_UNAVAILABLE, {}, { 'retry-after': String(RETRY_AFTER_S) }),
  mcpServiceUnavailable: () =>
    new JsonRpcHttpError(503, -32000, SERVICE_UNAVAILABLE, { 'retry-after': String(RETRY_AFTER_S) }),
  mcpInternal: () => new JsonRpcHttpError(500, -32603, 'Internal error.')
}
