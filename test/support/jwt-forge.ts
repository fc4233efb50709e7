import { createHmac, createPublicKey, createSign, generateKeyPairSync } from 'node:crypto'
import { SIGNING_KEY } from './helper.js'

const b64 = (v: unknown): string => Buffer.from(JSON.stringify(v)).toString('base64url')

/** Builds a JWT by hand, so that tests can make every kind of bad token the service must refuse. */
export function forge (
  header: Record<string, unknown>,
  payload: Record<string, unknown>,
  sign: (input: string) => string
): string {
  const input = `${b64(header)}.${b64(payload)}`
  return `${input}.${sign(input)}`
}

export const rs256With =
  (privateKeyPem: string) =>
    (input: string): string =>
      createSign('RSA-SHA256').update(input).sign(privateKeyPem).toString('base64url')

export const hs256With =
  (secret: string | Buffer) =>
    (input: string): string =>
      createHmac('sha256', secret).update(input).digest('base64url')

export const OTHER_KEY = generateKeyPairSync('rsa', { modulusLength: 2048 })
  .privateKey.export({ format: 'pem', type: 'pkcs8' })
  .toString()
export const PUBLIC_KEY_PEM = createPublicKey(SIGNING_KEY).export({ format: 'pem', type: 'spki' }).toString()

/** Decodes a token's header and payload without verifying it. */
export function decode (token: string): { header: Record<string, unknown>, payload: Record<string, unknown> } {
  const [h, p] = token.split('.')
  return {
    header: JSON.parse(Buffer.from(h!, 'base64url').toString()),
    payload: JSON.parse(Buffer.from(p!, 'base64url').toString())
  }
}
