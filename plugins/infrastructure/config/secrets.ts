import { createPrivateKey, generateKeyPairSync, randomBytes } from 'node:crypto'
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { dirname } from 'node:path'

export const generateSigningKey = (): string =>
  generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'pem', type: 'pkcs8' }).toString()

export const generateRandomSecret = (): string => randomBytes(32).toString('base64url')

/**
 * Development secrets live in DATA_DIR/dev-secrets.json so that tokens and encrypted data survive a restart. Only the
 * service makes them (generateDevSecrets); the other commands read what it made (readDevSecrets), so that a command
 * run in another folder finds none and says so, rather than signing with secrets of its own that the service refuses.
 */
export const DEV_SECRETS_FILE = 'dev-secrets.json'

/** The secrets `file` holds, by name (non-empty strings only); undefined when there is no such file. */
export function readDevSecrets (file: string): Record<string, string> | undefined {
  if (!existsSync(file)) return undefined
  let parsed: unknown
  try {
    parsed = JSON.parse(readFileSync(file, 'utf8'))
  } catch (err) {
    throw new Error(`${file} is not JSON (${(err as Error).message}): restore it, or delete it and start the ` +
      'service, which makes new development secrets (tokens and webhook secrets made with the old ones stop working).')
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new Error(`${file} is not a JSON object of secrets: restore it, or delete it and start the service, ` +
      'which makes new development secrets (tokens and webhook secrets made with the old ones stop working).')
  }
  return Object.fromEntries(Object.entries(parsed)
    .filter((e): e is [string, string] => typeof e[1] === 'string' && e[1] !== ''))
}

/** The service's start: the secrets of `wanted` that `file` lacks are made and written to it (mode 0600). */
export function generateDevSecrets (
  file: string,
  wanted: ReadonlyArray<[name: string, generate: () => string]>
): { values: Record<string, string>, generated: string[] } {
  const values = readDevSecrets(file) ?? {}
  const generated: string[] = []
  for (const [name, generate] of wanted) {
    if (values[name] === undefined) {
      values[name] = generate()
      generated.push(name)
    }
  }
  if (generated.length > 0) {
    mkdirSync(dirname(file), { recursive: true })
    writeFileSync(file, JSON.stringify(values, null, 2) + '\n', { mode: 0o600 })
    chmodSync(file, 0o600)
  }
  return { values, generated }
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
