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
