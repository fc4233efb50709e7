import { createHmac, hkdfSync, timingSafeEqual } from 'node:crypto'

/**
 * The one cursor codec of every keyset list (records, the delivery log, and every list after them).
 *
 * A cursor is `v1.<position>.<tag>`: the position (the last row shown, as base64url JSON) and an HMAC tag over the
 * version, the scope and the position. The scope is never written into the cursor, only into the tag: a cursor
 * edited by hand, cut short, made by someone else, or issued for another tenant, resource or order fails the same
 * check, and the caller answers each with one error. The key is derived from a service secret, so every instance
 * of a deployment reads the cursors of the others, and a cursor outlives no change of that secret.
 */

const VERSION = 'v1'
/** 128 bits: a forgery must guess the tag; longer adds bytes to every page for nothing. */
const TAG_BYTES = 16

/** Whose list, which list, in which order: a cursor reads only under the scope it was issued for. */
export interface CursorScope {
  /** The tenant (organisation and entity) the list belongs to. */
  tenant: readonly [org: string, entity: string]
  /** The list: a record kind, or a subscription's delivery log. */
  resource: string
  /** The listing order, when a list has more than one. */
  order?: string
}

export interface CursorCodec {
  /** The cursor that resumes the list after `position` (a JSON value: the last row's sort key). */
  encode (scope: CursorScope, position: unknown): string
  /**
   * The position a cursor names, or undefined when it is not one this codec issued for this scope, or when
   * `isPosition` refuses what it carries.
   */
  decode<T> (scope: CursorScope, cursor: string, isPosition: (value: unknown) => value is T): T | undefined
}

/** A codec keyed by `secret` (any service secret; the key is derived from it for this use only). */
export function cursorCodec (secret: string | Buffer): CursorCodec {
  const key = Buffer.from(hkdfSync('sha256', secret, '', 'marketplace-gateway cursor ' + VERSION, 32))
  // JSON of the parts: no two scopes give the same text, whatever characters the ids hold.
  const tag = (scope: CursorScope, payload: string): Buffer =>
    createHmac('sha256', key)
      .update(JSON.stringify([VERSION, scope.tenant[0], scope.tenant[1], scope.resource, scope.order ?? '']))
      .update('\n')
      .update(payload)
      .digest()
      .subarray(0, TAG_BYTES)

  return {
    encode (scope, position) {
      const payload = Buffer.from(JSON.stringify(position)).toString('base64url')
      return `${VERSION}.${payload}.${tag(scope, payload).toString('base64url')}`
    },

    decode (scope, cursor, isPosition) {
      const parts = cursor.split('.')
      if (parts.length !== 3 || parts[0] !== VERSION) return undefined
      const [, payload, given] = parts as [string, string, string]
      // The tag compared as text: base64url decoding forgives stray bits in the last character, which would let an
      // edited cursor through.
      const presented = Buffer.from(given)
      const expected = Buffer.from(tag(scope, payload).toString('base64url'))
      if (presented.length !== expected.length || !timingSafeEqual(presented, expected)) return undefined
      let value: unknown
      try {
        value = JSON.parse(Buffer.from(payload, 'base64url').toString('utf8'))
      } catch {
        return undefined
      }
      return isPosition(value) ? value : undefined
    }
  }
}
