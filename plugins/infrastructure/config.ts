import { createPrivateKey, generateKeyPairSync, randomBytes } from 'node:crypto'
import { chmodSync, existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { join, resolve } from 'node:path'
import { Type, type Static } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import fp from 'fastify-plugin'

const Bool = Type.Union([Type.Literal('true'), Type.Literal('false'), Type.Literal('1'), Type.Literal('0')], {
  description: 'true or false'
})
const Int = (min: number, max: number) =>
  Type.String({ pattern: '^[0-9]+$', description: `an integer from ${min} to ${max}`, min, max })
const Url = Type.String({ pattern: '^https?://[^\\s]+$', description: 'an absolute http(s) URL' })

/** The environment as the operator writes it (docs/rules.md#configuration); all strings, checked here. */
export const EnvSchema = Type.Object({
  PORT: Type.Optional(Int(0, 65535)),
  HOST: Type.Optional(Type.String({ minLength: 1 })),
  DATABASE_URL: Type.Optional(
    Type.String({ pattern: '^postgres(ql)?://', description: 'a postgres:// connection string' })
  ),
  DATABASE_STARTUP_WAIT_SECONDS: Type.Optional(Int(0, 3_600)),
  DATA_DIR: Type.Optional(Type.String({ minLength: 1 })),
  PUBLIC_BASE_URL: Type.Optional(Url),
  MCP_BASE_URL: Type.Optional(Url),
  TOKEN_SIGNING_KEY: Type.Optional(Type.String({ minLength: 1 })),
  USER_SESSION_SECRET: Type.Optional(Type.String({ minLength: 32, description: 'at least 32 characters' })),
  WEBHOOK_SECRET_KEY: Type.Optional(Type.String({ minLength: 1 })),
  EVENTS_TOKEN: Type.Optional(Type.String({ minLength: 24, description: 'at least 24 characters' })),
  REDIS_URL: Type.Optional(Type.String({ pattern: '^rediss?://', description: 'a redis:// URL' })),
  WEBHOOK_ALLOW_PRIVATE_TARGETS: Type.Optional(Bool),
  WEBHOOK_CA_FILE: Type.Optional(Type.String({ minLength: 1 })),
  ACCESS_TOKEN_MAX_LIFETIME: Type.Optional(Int(60, 86_400)),
  SHUTDOWN_DELAY_SECONDS: Type.Optional(Int(0, 60)),
  PUBLIC_RATE_LIMIT: Type.Optional(Int(1, 1_000_000)),
  MCP_RATE_LIMIT_IP: Type.Optional(Int(1, 1_000_000)),
  MCP_RATE_LIMIT_SESSION: Type.Optional(Int(1, 1_000_000)),
  MCP_SESSION_IDLE_MINUTES: Type.Optional(
    Type.String({ pattern: '^[0-9]+(\\.[0-9]+)?$', description: 'a number of minutes (decimals allowed)' })
  ),
  MCP_REQUEST_TIMEOUT_SECONDS: Type.Optional(
    Type.String({ pattern: '^[0-9]+(\\.[0-9]+)?$', description: 'a number of seconds (decimals allowed)' })
  ),
  WEBHOOK_RETRY_SCHEDULE: Type.Optional(
    Type.String({ pattern: '^[0-9]+(,[0-9]+)*$', description: 'comma-separated seconds' })
  ),
  WEBHOOK_DISABLE_AFTER_FAILURES: Type.Optional(Int(1, 1_000_000)),
  WEBHOOK_DISABLE_AFTER_HOURS: Type.Optional(Int(0, 1_000_000)),
  WEBHOOK_WORKER: Type.Optional(Bool),
  WEBHOOK_CONCURRENCY: Type.Optional(Int(1, 1_000)),
  WEBHOOK_SUBSCRIPTION_MAX_IN_FLIGHT: Type.Optional(Int(1, 1_000)),
  WEBHOOK_TENANT_MAX_IN_FLIGHT: Type.Optional(Int(1, 100_000)),
  WEBHOOK_LEASE_SECONDS: Type.Optional(Int(1, 3_600)),
  // At most 20 s: a worker's stop waits for attempts in flight (time-out + 2 s) inside the 25 s shutdown bound.
  WEBHOOK_ATTEMPT_TIMEOUT_SECONDS: Type.Optional(Int(1, 20)),
  WEBHOOK_REPLAY_LIMIT: Type.Optional(Int(1, 1_000_000)),
  MCP_ALLOWED_ORIGINS: Type.Optional(Type.String()),
  MCP_ALLOW_ANONYMOUS: Type.Optional(Bool),
  METRICS_TOKEN: Type.Optional(Type.String({ minLength: 24, description: 'at least 24 characters' })),
  LOGIN_URL: Type.Optional(Url),
  REGISTRATION_RATE_LIMIT: Type.Optional(Int(1, 1_000_000)),
  CLIENT_METADATA_TIMEOUT_SECONDS: Type.Optional(
    Type.String({ pattern: '^[0-9]+(\\.[0-9]+)?$', description: 'a number of seconds (decimals allowed)' })
  ),
  LOG_LEVEL: Type.Optional(
    Type.Union(
      ['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'].map(l => Type.Literal(l)),
      { description: 'one of fatal, error, warn, info, debug, trace, silent' }
    )
  ),
  NODE_ENV: Type.Optional(
    Type.Union(
      ['development', 'production', 'test'].map(l => Type.Literal(l)),
      { description: 'development, production or test' }
    )
  )
})
export type Env = Static<typeof EnvSchema>

export interface Config {
  port: number
  host: string
  databaseUrl: string | undefined
  /** How long a start waits for Postgres to come up (containers start together) before giving up. */
  databaseStartupWaitSeconds: number
  dataDir: string
  /** Where PGlite keeps its files; `memory://` keeps them in memory (tests). */
  embeddedDataDir: string
  /**
   * A dump of a data directory for PGlite to start from instead of creating one (tests: a migrated database made
   * once, since creating one costs seconds of CPU). Not from the environment.
   */
  embeddedSnapshot?: Blob
  publicBaseUrl: string
  mcpBaseUrl: string
  tokenSigningKey: string
  userSessionSecret: string
  webhookSecretKey: Buffer
  eventsToken: string
  redisUrl: string | undefined
  webhookAllowPrivateTargets: boolean
  webhookCaFile: string | undefined
  /** Seconds: an access token whose exp - iat is longer is refused, whoever signed it. */
  accessTokenMaxLifetime: number
  /** After SIGTERM, how long new connections are still taken (and told readiness 503) before the listener closes. */
  shutdownDelaySeconds: number
  publicRateLimit: number
  mcpRateLimitIp: number
  mcpRateLimitSession: number
  mcpSessionIdleMinutes: number
  /** An MCP request unanswered after this is answered with a JSON-RPC error and its resources freed. */
  mcpRequestTimeoutSeconds: number
  webhookRetrySchedule: number[]
  webhookDisableAfterFailures: number
  webhookDisableAfterHours: number
  /** Whether this process runs a delivery worker (a separate `marketplace-gateway worker` may do it instead). */
  webhookWorker: boolean
  /** Attempts one worker keeps in flight. */
  webhookConcurrency: number
  /** Attempts in flight one subscription may have, all workers together (docs/webhook-delivery.md#fair-delivery). */
  webhookSubscriptionMaxInFlight: number
  /** Attempts in flight one tenant may have, all its subscriptions and all workers together. */
  webhookTenantMaxInFlight: number
  /** How long a claim lasts; a dead worker's deliveries are retried after it. Longer than an attempt's 15 s. */
  webhookLeaseSeconds: number
  /** How long one delivery attempt may take in all (connecting, sending, the answer); then it is a time-out. */
  webhookAttemptTimeoutSeconds: number
  /** Deliveries one replay request enqueues at most. */
  webhookReplayLimit: number
  mcpAllowedOrigins: string[]
  /** Sessions without a token (catalog browsing, conformance runs); off, a request without one is a 401. */
  mcpAllowAnonymous: boolean
  /** Bearer token of GET /metrics; unset, /metrics is not served. */
  metricsToken: string | undefined
  /** The accounting system's sign-in page: a browser with no session is sent there with a `return_to`. */
  loginUrl: string | undefined
  /** Dynamic client registrations a minute per client IP (POST /oauth/register). */
  registrationRateLimit: number
  /** How long fetching a Client ID Metadata Document may take, connection to last byte. */
  clientMetadataTimeoutSeconds: number
  logLevel: string
  nodeEnv: 'development' | 'production' | 'test'
  /** Names of the secrets that were generated into DATA_DIR rather than configured. */
  generatedSecrets: string[]
}

/** A start that cannot go on, with a message for the operator and no stack trace (cli.ts prints only the message). */
export class StartupError extends Error {
  override name = 'StartupError'
}

/** Every problem with the environment, reported at once: one start, one list to fix. */
export class ConfigError extends StartupError {
  override name = 'ConfigError'
  readonly problems: Array<[variable: string, problem: string]>
  constructor (variable: string | Array<[string, string]>, problem = '') {
    const problems: Array<[string, string]> = typeof variable === 'string' ? [[variable, problem]] : variable
    super(problems.length === 1
      ? `Invalid configuration: ${problems[0]![0]} ${problems[0]![1]}`
      : `Invalid configuration (${problems.length} problems):\n` + problems.map(([v, p]) => `  ${v} ${p}`).join('\n'))
    this.problems = problems
  }
}

/** A connection URL fit for a log line: the password replaced by ***. */
export function maskUrl (url: string): string {
  try {
    const u = new URL(url)
    if (u.password) u.password = '***'
    return u.toString()
  } catch {
    return url.replace(/\/\/([^:/@]*):[^@/]*@/, '//$1:***@')
  }
}

/** How a bad value is echoed: secrets by length only, URLs without their password. */
function echo (variable: string, value: string | undefined): string {
  if (value === undefined) return '(not set)'
  if ([...SECRET_NAMES, 'METRICS_TOKEN'].includes(variable)) return `a value of ${value.length} characters`
  return JSON.stringify(/_URL$/.test(variable) ? maskUrl(value) : value)
}

const WILDCARD_HOSTS = new Set(['0.0.0.0', '::', '[::]'])
const SECRET_NAMES = ['TOKEN_SIGNING_KEY', 'USER_SESSION_SECRET', 'WEBHOOK_SECRET_KEY', 'EVENTS_TOKEN'] as const
type SecretName = (typeof SECRET_NAMES)[number]

function checkShape (env: Record<string, string | undefined>, problems: Array<[string, string]>): Env {
  const known: Record<string, string> = {}
  for (const key of Object.keys(EnvSchema.properties)) {
    const value = env[key]
    if (value !== undefined && value !== '') known[key] = value
  }
  const describe = (key: string) =>
    EnvSchema.properties[key as keyof Env] as { min?: number, max?: number, description?: string } | undefined
  const bad = new Set<string>()
  for (const error of Value.Errors(EnvSchema, known)) bad.add(error.path.replace(/^\//, '').split('/')[0]!)
  for (const [key, value] of Object.entries(known)) {
    const s = describe(key)!
    if (s.min !== undefined && (Number(value) < s.min || Number(value) > (s.max ?? Infinity))) bad.add(key)
  }
  for (const key of bad) {
    problems.push([key, `must be ${describe(key)?.description ?? 'valid'} (got ${echo(key, known[key])})`])
    // Left out, so that the checks after this one judge the rest of the configuration on its defaults.
    delete known[key]
  }
  return known as Env
}

function decodeKey32 (value: string): Buffer | undefined {
  for (const encoding of ['hex', 'base64url', 'base64'] as const) {
    const buf = Buffer.from(value, encoding)
    if (buf.length === 32 && buf.toString(encoding).replace(/=+$/, '') === value.replace(/=+$/, '')) return buf
  }
  return undefined
}

/** The key in PKCS#8 PEM, or the problem with it. */
function checkSigningKey (pem: string): string | [string, string] {
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

function generateSecret (name: SecretName): string {
  return name === 'TOKEN_SIGNING_KEY'
    ? generateKeyPairSync('rsa', { modulusLength: 2048 }).privateKey.export({ format: 'pem', type: 'pkcs8' }).toString()
    : randomBytes(32).toString('base64url')
}

/** Development secrets live in DATA_DIR/dev-secrets.json so that tokens and encrypted data survive a restart. */
function loadOrGenerateSecrets (dataDir: string, missing: SecretName[]): Record<string, string> {
  if (missing.length === 0) return {}
  const file = join(dataDir, 'dev-secrets.json')
  const stored: Record<string, string> = existsSync(file) ? JSON.parse(readFileSync(file, 'utf8')) : {}
  let changed = false
  for (const name of missing) {
    if (!stored[name]) {
      stored[name] = generateSecret(name)
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

const flag = (value: string | undefined, fallback: boolean): boolean =>
  value === undefined ? fallback : value === 'true' || value === '1'

/** Reads and checks the environment. Throws one ConfigError that names every bad or missing variable. */
export function loadConfig (rawEnv: Record<string, string | undefined> = process.env): Config {
  const problems: Array<[string, string]> = []
  const env = checkShape(rawEnv, problems)
  const nodeEnv = (env.NODE_ENV ?? 'development') as Config['nodeEnv']
  const port = Number(env.PORT ?? 3000)
  const host = env.HOST ?? '127.0.0.1'
  const dataDir = resolve(env.DATA_DIR ?? './data')
  // Listening on every interface, the service is still reached as localhost from its own machine, not 0.0.0.0.
  const hostForUrl = WILDCARD_HOSTS.has(host) ? 'localhost' : host.includes(':') ? `[${host}]` : host
  const defaultBase = `http://${hostForUrl}:${port}`

  const missing = SECRET_NAMES.filter(name => !env[name])
  if (nodeEnv === 'production') {
    for (const name of missing) {
      if (!rawEnv[name]) {
        problems.push([name, 'is required in production (generated development keys are refused)'])
      }
    }
    if (!env.DATABASE_URL && !problems.some(([v]) => v === 'DATABASE_URL')) {
      problems.push(['DATABASE_URL', 'is required in production (the embedded database is for development)'])
    }
    if (!env.PUBLIC_BASE_URL && !problems.some(([v]) => v === 'PUBLIC_BASE_URL')) {
      problems.push(['PUBLIC_BASE_URL', 'is required in production (the URL clients reach the service at: ' +
        'token issuer, OAuth metadata and MCP endpoint)'])
    }
  }
  if (problems.length > 0 && nodeEnv === 'production') throw new ConfigError(problems)
  // Only secrets that are not set at all are generated; one set to a bad value is reported above.
  const generated = loadOrGenerateSecrets(dataDir, missing.filter(name => !rawEnv[name]))
  const secret = (name: SecretName): string => env[name] ?? generated[name] ?? ''
  const reported = (name: string) => problems.some(([v]) => v === name)

  const webhookSecretKey = decodeKey32(secret('WEBHOOK_SECRET_KEY'))
  if (!webhookSecretKey && !reported('WEBHOOK_SECRET_KEY')) {
    problems.push(['WEBHOOK_SECRET_KEY', 'must be 32 bytes, written in hex or base64'])
  }
  const tokenSigningKey = checkSigningKey(secret('TOKEN_SIGNING_KEY'))
  if (Array.isArray(tokenSigningKey) && !reported('TOKEN_SIGNING_KEY')) problems.push(tokenSigningKey)

  const publicBaseUrl = (env.PUBLIC_BASE_URL ?? defaultBase).replace(/\/+$/, '')
  // The MCP endpoint is served by this same service, so by default it is advertised at the same place.
  const mcpBaseUrl = (env.MCP_BASE_URL ?? publicBaseUrl).replace(/\/+$/, '')
  const origins = env.MCP_ALLOWED_ORIGINS?.split(',')
    .map(s => s.trim())
    .filter(Boolean) ?? [new URL(mcpBaseUrl).origin]
  const badOrigin = origins.find(origin => !/^https?:\/\/[^/\s]+$/.test(origin))
  if (badOrigin !== undefined) {
    problems.push(['MCP_ALLOWED_ORIGINS', `must list origins like https://host:port (got ${JSON.stringify(badOrigin)})`])
  }
  if (env.WEBHOOK_CA_FILE && !existsSync(env.WEBHOOK_CA_FILE)) {
    problems.push(['WEBHOOK_CA_FILE', `names a file that does not exist (${JSON.stringify(env.WEBHOOK_CA_FILE)})`])
  }
  // A claim that expires while its attempt still runs hands the delivery to another worker: a second send.
  const leaseSeconds = Number(env.WEBHOOK_LEASE_SECONDS ?? 60)
  const attemptTimeoutSeconds = Number(env.WEBHOOK_ATTEMPT_TIMEOUT_SECONDS ?? 15)
  if (!reported('WEBHOOK_LEASE_SECONDS') && !reported('WEBHOOK_ATTEMPT_TIMEOUT_SECONDS') &&
    leaseSeconds <= attemptTimeoutSeconds) {
    problems.push(['WEBHOOK_LEASE_SECONDS',
      `must be longer than WEBHOOK_ATTEMPT_TIMEOUT_SECONDS (${attemptTimeoutSeconds}) (got ${leaseSeconds})`])
  }
  const metadataTimeoutSeconds = Number(env.CLIENT_METADATA_TIMEOUT_SECONDS ?? 3)
  const metadataTimeoutInRange = metadataTimeoutSeconds >= 0.1 && metadataTimeoutSeconds <= 60
  if (!reported('CLIENT_METADATA_TIMEOUT_SECONDS') && !metadataTimeoutInRange) {
    problems.push(['CLIENT_METADATA_TIMEOUT_SECONDS', `must be from 0.1 to 60 seconds (got ${metadataTimeoutSeconds})`])
  }
  const mcpRequestTimeoutSeconds = Number(env.MCP_REQUEST_TIMEOUT_SECONDS ?? 30)
  const mcpRequestTimeoutInRange = mcpRequestTimeoutSeconds >= 0.1 && mcpRequestTimeoutSeconds <= 3600
  if (!reported('MCP_REQUEST_TIMEOUT_SECONDS') && !mcpRequestTimeoutInRange) {
    problems.push(['MCP_REQUEST_TIMEOUT_SECONDS', `must be from 0.1 to 3600 seconds (got ${mcpRequestTimeoutSeconds})`])
  }
  if (problems.length > 0 || !webhookSecretKey || Array.isArray(tokenSigningKey)) throw new ConfigError(problems)

  return {
    port,
    host,
    databaseUrl: env.DATABASE_URL,
    databaseStartupWaitSeconds: Number(env.DATABASE_STARTUP_WAIT_SECONDS ?? 30),
    dataDir,
    embeddedDataDir: join(dataDir, 'pglite'),
    publicBaseUrl,
    mcpBaseUrl,
    tokenSigningKey,
    userSessionSecret: secret('USER_SESSION_SECRET'),
    webhookSecretKey,
    eventsToken: secret('EVENTS_TOKEN'),
    redisUrl: env.REDIS_URL,
    webhookAllowPrivateTargets: flag(env.WEBHOOK_ALLOW_PRIVATE_TARGETS, false),
    webhookCaFile: env.WEBHOOK_CA_FILE,
    accessTokenMaxLifetime: Number(env.ACCESS_TOKEN_MAX_LIFETIME ?? 3_600),
    shutdownDelaySeconds: Number(env.SHUTDOWN_DELAY_SECONDS ?? 0),
    publicRateLimit: Number(env.PUBLIC_RATE_LIMIT ?? 600),
    mcpRateLimitIp: Number(env.MCP_RATE_LIMIT_IP ?? 120),
    mcpRateLimitSession: Number(env.MCP_RATE_LIMIT_SESSION ?? 60),
    mcpSessionIdleMinutes: Number(env.MCP_SESSION_IDLE_MINUTES ?? 30),
    mcpRequestTimeoutSeconds,
    webhookRetrySchedule: (env.WEBHOOK_RETRY_SCHEDULE ?? '5,300,1800,7200,18000,36000,36000').split(',').map(Number),
    webhookDisableAfterFailures: Number(env.WEBHOOK_DISABLE_AFTER_FAILURES ?? 20),
    webhookDisableAfterHours: Number(env.WEBHOOK_DISABLE_AFTER_HOURS ?? 24),
    webhookWorker: flag(env.WEBHOOK_WORKER, true),
    webhookConcurrency: Number(env.WEBHOOK_CONCURRENCY ?? 128),
    webhookSubscriptionMaxInFlight: Number(env.WEBHOOK_SUBSCRIPTION_MAX_IN_FLIGHT ?? 16),
    webhookTenantMaxInFlight: Number(env.WEBHOOK_TENANT_MAX_IN_FLIGHT ?? 32),
    webhookLeaseSeconds: leaseSeconds,
    webhookAttemptTimeoutSeconds: attemptTimeoutSeconds,
    webhookReplayLimit: Number(env.WEBHOOK_REPLAY_LIMIT ?? 10_000),
    mcpAllowedOrigins: origins,
    mcpAllowAnonymous: flag(env.MCP_ALLOW_ANONYMOUS, false),
    loginUrl: env.LOGIN_URL,
    registrationRateLimit: Number(env.REGISTRATION_RATE_LIMIT ?? 120),
    clientMetadataTimeoutSeconds: metadataTimeoutSeconds,
    metricsToken: env.METRICS_TOKEN,
    logLevel: env.LOG_LEVEL ?? 'info',
    nodeEnv,
    generatedSecrets: missing
  }
}

declare module 'fastify' {
  interface FastifyInstance {
    config: Config
  }
}

/** Decorates the already-checked configuration as `app.config`. */
export default fp<{ config: Config }>(
  async (app, opts) => {
    app.decorate('config', opts.config)
  },
  { name: 'config' }
)
