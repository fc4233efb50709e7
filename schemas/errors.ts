import { Type, type Static } from '@sinclair/typebox'

/** Every error body the service sends. Optional members appear only on the errors that define them. */
export const ErrorBody = Type.Object(
  {
    error: Type.String({ description: 'Machine-readable error code.' }),
    message: Type.String({ description: 'Human-readable explanation.' }),
    error_description: Type.Optional(
      Type.String({ description: 'OAuth endpoints only: the same text as `message` (RFC 6749).' })
    ),
    required: Type.Optional(
      Type.Array(Type.String(), { description: '`insufficient_scope` only: every scope the route requires.' })
    ),
    unknown: Type.Optional(
      Type.Array(Type.String(), { description: '`unknown_topic` and `unknown_scope` only: the offending entries.' })
    ),
    details: Type.Optional(
      Type.Array(
        Type.Object({
          location: Type.String({ description: 'body, querystring, params or headers' }),
          path: Type.String({ description: 'JSON pointer to the offending value' }),
          message: Type.String()
        }),
        { description: '`validation_error` only: what failed.' }
      )
    )
  },
  { $id: 'ErrorBody', title: 'Error' }
)
// eslint-disable-next-line @typescript-eslint/no-redeclare -- TypeBox: a schema and its Static type share a name
export type ErrorBody = Static<typeof ErrorBody>

/** What each error status means, whichever code it carries: its response's description in the OpenAPI document. */
export const STATUS_MEANING: Record<number, string> = {
  400: 'The request is malformed or fails validation.',
  401: 'Credentials are missing, invalid, expired or revoked.',
  403: 'Authenticated, but not allowed: another tenant, or a scope is missing.',
  404: 'No such resource (or not yours).',
  409: 'Conflicts with the current state.',
  413: 'The body is larger than the route takes: 64 KiB, or 1 MiB for POST /events.',
  414: 'A path segment is too long.',
  415: 'The body is not JSON.',
  422: 'Well-formed, but refused: a limit or a rule of the resource.',
  429: 'Rate limit exceeded; see Retry-After.',
  500: "Unexpected error on the service's side.",
  501: 'Not built yet.',
  503: 'The database is unavailable or not answering in time; retry after Retry-After seconds.'
}
