import { createPrivateKey, generateKeyPairSync, randomBytes } from 'node:crypto'
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'

export const generateSigningKey = (): string =>
  generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'pem', type: 'pkcs8' }).toString()

export const generateRandomSecret = (): string => randomBytes(32).toString('base64url')

/** Development secrets live in DATA_DIR/dev-secrets.json so that tokens and encrypted data survive a restart. */
export function loadOrGenerateSecrets (
  dataDir: string,
  missing: ReadonlyArray<[name: string, generate: () => string]>
): Record<string, string> {
  if (missing.length === 0) return {}
  const file = join(dataDir, 'dev-secrets.json')
  const stored: Record<string, string> = existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) : {}
  let changed = false
  for (const [name, generate] of missing) {
    if (!stored[name]) {
      stored[name] = generate()
      changed = true
    }
  }
  if (changed) {
    mkdirSync(dataDir, { recursive: true })
    writeFileSync(file, JSON.stringify(stored, null, 2) + '\n', { mode: 0o600 })
    chmodSync(file, 0o600)
  }
  return stored
}

/** 32 bytes written in hex, base64url or base64, or undefined. */
export function decodeKey32 (value: string): Buffer | undefined {
  for (const encoding of ['hex', 'base64url', 'base64'] as const) {
    const buf = Buffer.from(value, encoding)
    if (buf.length === 32 && buf.toString(encoding).replace(/=+$/, '') === value.replace(/=+$/, '')) return buf
  }
  return undefined
}

/** The key in PKCS#8 PEM, or the problem with it. */
export function checkSigningKey (pem: string): string | [string, string] {
  const text = pem.includes('\\n') ? pem.replace(/\\n/g, '\n') : pem
  let key
  try {
    key = createPrivateKey(text)
  } catch {
    return ['TOKEN_SIGNING_KEY', 'must be an RSA private key in PEM (PKCS#8)']
  }
  if (key.asymmetricKeyType !== 'rsa' || (key.asymmetricKeyDetails?.modulusLength ?? 0) < 2048) {
    return ['TOKEN_SIGNING_KEY', 'must be an RSA private key of at least 2048 bits']
  }
  return key.export({ format: 'pem', type: 'pkcs8' }).toString()
}
