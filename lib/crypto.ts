import { createHash, randomBytes, timingSafeEqual } from 'node:crypto'

/** An opaque credential or identifier: a prefix that says what it is, then `bytes` random bytes in base64url. */
export function randomToken (prefix: string, bytes = 32): string {
  return prefix + randomBytes(bytes).toString('base64url')
}

/**
 * Client secrets, refresh tokens and authorization codes are 256-bit random values, so a fast one-way hash is
 * enough: nobody can brute-force a 256-bit pre-image, and a slow KDF would only slow down the token endpoint.
 */
export function sha256 (value: string): string {
  return createHash('sha256').update(value).digest('base64url')
}

export function safeEqual (a: string, b: string): boolean {
  const ab = Buffer.from(a)
  const bb = Buffer.from(b)
  return ab.length === bb.length && timingSafeEqual(ab, bb)
}

/** RFC 7636 S256: BASE64URL(SHA256(ASCII(code_verifier))). */
export function pkceChallenge (verifier: string): string {
  return createHash('sha256').update(verifier, 'ascii').digest('base64url')
}

/** RFC 9562 UUIDv7: the first 48 bits are the Unix time in milliseconds, the rest random. */
export function uuidv7 (unixMs: number): string {
  const b = randomBytes(16)
  b.writeUIntBE(unixMs, 0, 6)
  b[6] = (b[6]! & 0x0f) | 0x70
  b[8] = (b[8]! & 0x3f) | 0x80
  const h = b.toString('hex')
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-${h.slice(12, 16)}-${h.slice(16, 20)}-${h.slice(20)}`
}

/** The millisecond timestamp of a UUIDv7, or undefined for anything else. */
export function uuidv7Time (id: string): number | undefined {
  if (!/^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/.test(id)) return undefined
  return parseInt(id.slice(0, 8) + id.slice(9, 13), 16)
}
