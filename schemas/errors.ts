import { Type, type Static } from '@sinclair/typebox'

/** Every error body the service sends. Optional members appear only on the errors that define them. */
export const ErrorBody = Type.Object({
  error: Type.String({ description: 'Machine-readable error code.' }),
  message: Type.String({ description: 'Human-readable explanation.' }),
  error_description: Type.Optional(Type.String({ description: 'OAuth endpoints only: the same text as `message` (RFC 6749).' })),
  required: Type.Optional(Type.Array(Type.String(), { description: '`insufficient_scope` only: every scope the route requires.' })),
  unknown: Type.Optional(Type.Array(Type.String(), { description: '`unknown_topic` and `unknown_scope` only: the offending entries.' })),
  details: Type.Optional(Type.Array(Type.Object({
    location: Type.String({ description: 'body, querystring, params or headers' }),
    path: Type.String({ description: 'JSON pointer to the offending value' }),
    message: Type.String()
  }), { description: '`validation_error` only: what failed.' }))
}, { $id: 'ErrorBody', title: 'Error' })
export type ErrorBody = Static<typeof ErrorBody>

/** Response schemas for a set of error statuses, for a route's `schema.response`. */
export function errorResponses (...statuses: number[]): Record<number, typeof ErrorBody> {
  return Object.fromEntries(statuses.map(s => [s, ErrorBody]))
}
