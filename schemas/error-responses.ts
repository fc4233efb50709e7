import { BODY_LIMIT } from '../lib/limits.js'
import { type ApiError, errors } from './error-catalog.js'
import { ErrorBody, STATUS_MEANING } from './errors.js'

/**
 * The error responses of a route for its OpenAPI document, from the catalog errors it can answer: one response per
 * status, described, with an example of every code (and message) under it, built by the catalog's own functions, so
 * codes and fixed messages cannot drift (messages with a value carry the route's sample value). The schema stays the
 * one `Error` shape (`x-` keys are read by @fastify/swagger and ignored by the serializer).
 */
export function errorResponses (...possible: ApiError[]): Record<number, typeof ErrorBody> {
  const byStatus = new Map<number, ApiError[]>()
  for (const e of possible) byStatus.set(e.statusCode, [...(byStatus.get(e.statusCode) ?? []), e])
  return Object.fromEntries([...byStatus].map(([status, list]) => {
    const codes = [...new Set(list.map(e => `\`${e.code}\``))].join(', ')
    const examples: Record<string, { summary: string, value: Record<string, unknown> }> = {}
    for (const e of list) {
      let name = e.code
      for (let n = 2; name in examples; n++) name = `${e.code}_${n}`
      examples[name] = { summary: e.message, value: e.body() }
    }
    return [status, {
      ...ErrorBody,
      'x-response-description': `${STATUS_MEANING[status] ?? 'Error.'} Codes: ${codes}.`,
      'x-examples': examples
    }]
  }))
}

/** A validation error as the error handler words it, for a route's examples. */
export const invalid = (location: string, path: string, message: string): ApiError =>
  errors.validation([{ location, path, message }])

/** Errors of any route that takes a JSON body of at most `limit` bytes. */
export const bodyErrors = (limit: number): ApiError[] => [
  errors.payloadTooLarge(limit),
  errors.unsupportedMediaType('text/plain'),
  errors.validation(
    [{ location: 'body', path: '/', message: 'is not valid JSON' }],
    'Request body is not valid JSON.'
  )
]

/** Errors of any route that takes a JSON body, of the size every route but POST /events takes. */
export const BODY_ERRORS = bodyErrors(BODY_LIMIT)

/** What the service itself can fail with on any route that reads the database. */
export const SERVICE_ERRORS = [errors.internal(), errors.serviceUnavailable()]

/** Every authenticated `/public/v1` route: the token, then the per-install rate limit (docs/rules.md). */
export const PUBLIC_ERRORS = [
  errors.missingBearer(),
  errors.invalidAccessToken(),
  errors.accessTokenExpired(),
  errors.installNotActive(),
  errors.apiKeyDisabled(),
  errors.rateLimited(12),
  ...SERVICE_ERRORS
]

/** Under the tenant prefix the path tenant must be the token's. */
export const TENANT_ERRORS = [...PUBLIC_ERRORS, errors.tenantMismatch()]

/** A route that needs scopes: the 403 names them. */
export const scopeError = (...scopes: string[]): ApiError => errors.insufficientScope(scopes, scopes)

/** Routes of a signed-in user of the accounting system (the internal surface). */
export const USER_ERRORS = [
  errors.missingUserSession(),
  errors.invalidUserSession(),
  errors.marketplaceTokenOnUserRoute(),
  ...SERVICE_ERRORS
]
