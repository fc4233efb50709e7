import { createCipheriv, createDecipheriv, createHmac, randomBytes } from 'node:crypto'

/**
 * How a secret keys `webhook-signature`: `standard` with the bytes its base64 part decodes to (the Standard Webhooks
 * libraries' rule); `legacy`, for subscriptions created before it, with the UTF-8 bytes of the whole string.
 */
export type SigningScheme = 'legacy' | 'standard'

export interface SigningKey {
  secret: string
  scheme: SigningScheme
}

const PREFIX = 'whsec_'

/** `whsec_` and 32 random bytes in standard base64, the Standard Webhooks format (docs/rules.md#signatures). */
export function newSigningSecret (): string {
  return PREFIX + randomBytes(32).toString('base64')
}

function hmacKey (k: SigningKey): Buffer {
  return k.scheme === 'standard' ? Buffer.from(k.secret.slice(PREFIX.length), 'base64') : Buffer.from(k.secret, 'utf8')
}

/** X-Service-Signature: lowercase hex HMAC-SHA256 of the raw body, keyed with the UTF-8 bytes of the whole secret. */
export function serviceSignature (secret: string, body: string | Buffer): string {
  return createHmac('sha256', Buffer.from(secret, 'utf8')).update(body).digest('hex')
}

/**
 * Standard Webhooks `webhook-signature`: `v1,` and the base64 HMAC-SHA256 of `id.timestamp.body`, once per key,
 * space-separated: during a rotation's overlap a receiver holding either secret finds its own.
 */
export function standardSignature (keys: SigningKey[], id: string, timestamp: number, body: string | Buffer): string {
  return keys
    .map(k => 'v1,' + createHmac('sha256', hmacKey(k)).update(`${id}.${timestamp}.`).update(body).digest('base64'))
    .join(' ')
}

/** AES-256-GCM, the subscription id as associated data so that a ciphertext cannot be moved to another row. */
export function encryptSecret (key: Buffer, subscriptionId: string, secret: string): string {
  const iv = randomBytes(12)
  const cipher = createCipheriv('aes-256-gcm', key, iv)
  cipher.setAAD(Buffer.from(subscriptionId))
  const ciphertext = Buffer.concat([cipher.update(secret, 'utf8'), cipher.final()])
  return 'v1.' + Buffer.concat([iv, cipher.getAuthTag(), ciphertext]).toString('base64url')
}

export function decryptSecret (key: Buffer, subscriptionId: string, stored: string): string {
  if (!stored.startsWith('v1.')) throw new Error('unknown secret format')
  const raw = Buffer.from(stored.slice(3), 'base64url')
  const decipher = createDecipheriv('aes-256-gcm', key, raw.subarray(0, 12))
  decipher.setAAD(Buffer.from(subscriptionId))
  decipher.setAuthTag(raw.subarray(12, 28))
  return Buffer.concat([decipher.update(raw.subarray(28)), decipher.final()]).toString('utf8')
}
