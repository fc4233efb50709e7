import { createHash, generateKeyPairSync, randomBytes, randomUUID } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { inspect } from 'node:util'
import pg from 'pg'
import { buildApp, type AppInstance, type BuildOptions } from '../../app.js'
import { loadConfig, type Config } from '../../plugins/infrastructure/config/index.js'
import { initialCluster } from '../../plugins/infrastructure/db/initial-cluster.js'

type Test = { teardown(fn: () => unknown): void }

// One RSA key for the whole test process: generating one per app would dominate the run time.
export const SIGNING_KEY = generateKeyPairSync('rsa', { modulusLength: 2048 })
  .privateKey.export({ format: 'pem', type: 'pkcs8' })
  .toString()
export const ISSUER = 'http://gateway.test'
export const REDIRECT_URI = 'https://app.example.com/callback'

/** Makes a database of its own on the Postgres `server` (named for the CI sweep: `mg_t_…`); its URL and a drop. */
async function createDatabase (server: string): Promise<{ url: string, drop: () => Promise<void> }> {
  const name = `mg_t_${process.pid}_${randomBytes(4).toString('hex')}`
  const admin = new pg.Client({ connectionString: server })
  await admin.connect()
  await admin.query(`create database ${name}`)
  await admin.end()
  const url = new URL(server)
  url.pathname = `/${name}`
  const drop = async () => {
    const c = new pg.Client({ connectionString: server })
    try {
      await c.connect()
      await c.query(`drop database if exists ${name} with (force)`)
    } finally {
      await c.end().catch(() => {})
    }
  }
  return { url: url.toString(), drop }
}

/**
 * On Postgres, each test file (one process) gets a database of its own, made from DATABASE_URL and dropped at the
 * end: every app runs a delivery worker, and workers of other files, with other settings, must not take this
 * file's deliveries.
 */
async function databaseForThisFile (base: string | undefined): Promise<string | undefined> {
  if (!base) return undefined
  const { url, drop } = await createDatabase(base)
  let dropped = false
  process.on('beforeExit', () => {
    if (dropped) return
    dropped = true
    drop().catch(() => {})
  })
  return url
}

export const TEST_DATABASE_URL = await databaseForThisFile(process.env.DATABASE_URL || undefined)

/**
 * The Postgres server of the tests that need one whatever the database under test is (worker processes sharing a
 * queue, the docs' worker-apart recipe, a URL without a user name): DATABASE_URL's when that is set, else
 * TEST_POSTGRES_URL (CI sets it, so that each end-to-end file runs once and still covers both kinds of database).
 * Those tests make databases of their own on it (`postgresDatabase`); without either they are skipped with
 * `needsPostgres` as the reason.
 */
const POSTGRES_SERVER = process.env.DATABASE_URL || process.env.TEST_POSTGRES_URL || undefined
export const needsPostgres = POSTGRES_SERVER
  ? false
  : 'needs Postgres: set TEST_POSTGRES_URL or DATABASE_URL (CI sets both)'

/** A database of its own on `server` for one test, dropped when the test ends; its URL. */
export async function freshDatabase (t: Test, server: string): Promise<string> {
  const { url, drop } = await createDatabase(server)
  t.teardown(drop)
  return url
}

/** A database of its own on the tests' Postgres for one test (skip the test with `needsPostgres` first). */
export function postgresDatabase (t: Test): Promise<string> {
  if (!POSTGRES_SERVER) throw new Error(needsPostgres as string)
  return freshDatabase(t, POSTGRES_SERVER)
}

// Every app of the tests on the embedded database starts from the one migrated cluster
// (plugins/infrastructure/db/initial-cluster.ts).
const EMBEDDED_SNAPSHOT = TEST_DATABASE_URL ? undefined : await initialCluster()

/** Configuration for a test: the database under test (this file's Postgres database, else in-memory embedded). */
export function testConfig (t: Test, env: Record<string, string | undefined> = {}): Config {
  const dataDir = mkdtempSync(join(tmpdir(), 'mg-test-'))
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }))
  const config = loadConfig({
    NODE_ENV: 'test',
    DATA_DIR: dataDir,
    DATABASE_URL: TEST_DATABASE_URL,
    LOG_LEVEL: 'silent',
    PUBLIC_BASE_URL: ISSUER,
    TOKEN_SIGNING_KEY: SIGNING_KEY,
    ...env
  })
  return config.databaseUrl ? config : { ...config, embeddedDataDir: 'memory://', embeddedSnapshot: EMBEDDED_SNAPSHOT }
}

/** Builds the app for one test and closes it when the test ends. */
export async function build (
  t: Test,
  env: Record<string, string | undefined> = {},
  opts: BuildOptions = {}
): Promise<AppInstance> {
  const app = await buildApp(testConfig(t, env), opts)
  t.teardown(() => app.close())
  await app.ready()
  return app
}

export interface EventuallyOptions<T> {
  /** When the probed value is good enough (default: truthy). */
  until?: (value: T) => boolean
  timeout?: number
  interval?: number
  /** What is awaited, for the time-out message. */
  what?: string
}

/**
 * The one way tests wait for something asynchronous: probes until `until` accepts the value and returns it, or
 * throws after `timeout` ms, naming what it waited for and the last value it saw.
 */
export async function eventually<T> (probe: () => T | Promise<T>, opts: EventuallyOptions<T> = {}): Promise<T> {
  const { until = Boolean, timeout = 10_000, interval = 25, what = 'the condition' } = opts
  const deadline = performance.now() + timeout
  for (;;) {
    const value = await probe()
    if (until(value)) return value
    if (performance.now() > deadline) {
      throw new Error(`timed out after ${timeout} ms waiting for ${what}; last value: ${inspect(value, { depth: 3 })}`)
    }
    await new Promise(resolve => setTimeout(resolve, interval))
  }
}

export const unique = (prefix: string): string => `${prefix}_${randomUUID().slice(0, 8)}`

export function pkcePair (): { verifier: string, challenge: string } {
  const verifier = randomBytes(32).toString('base64url')
  return { verifier, challenge: createHash('sha256').update(verifier).digest('base64url') }
}

export interface Installed {
  userToken: string
  orgRefId: string
  entityRefId: string
  clientId: string
  clientSecret: string
  appSlug: string
  installId: string
  accessToken: string
  refreshToken: string
  ownerToken: string
}

export interface InstallOptions {
  scopes?: string[]
  appScopes?: string[]
  orgRefId?: string
  entityRefId?: string
  /**
   * The RFC 8707 resource asked for at consent: by default the MCP endpoint, whose tokens work on /mcp and
   * /public/v1 alike; null: none, a token for /public/v1 alone.
   */
  resource?: string | null
  /** Install an existing app instead of registering a new one. */
  app?: { clientId: string, clientSecret: string, appSlug: string, ownerToken: string }
}

/** The whole journey through the public surfaces: register an app, consent, exchange the code. */
export async function install (app: AppInstance, opts: InstallOptions = {}): Promise<Installed> {
  const orgRefId = opts.orgRefId ?? unique('org')
  const entityRefId = opts.entityRefId ?? unique('ent')
  const userToken = app.userSessions.sign({ sub: unique('user'), orgRefId, entityRefIds: [entityRefId] })

  let registered = opts.app
  if (!registered) {
    const ownerToken = app.userSessions.sign({ sub: unique('dev'), orgRefId: unique('devorg'), entityRefIds: [] })
    const slug = unique('app').replace(/_/g, '-')
    const res = await app.inject({
      method: 'POST',
      url: '/apps',
      headers: { authorization: `Bearer ${ownerToken}`, 'content-type': 'application/json' },
      payload: JSON.stringify({
        slug,
        name: 'Test App',
        redirect_uris: [REDIRECT_URI],
        scopes: opts.appScopes ?? ['invoices:read', 'bills:read', 'customers:read']
      })
    })
    if (res.statusCode !== 201) throw new Error(`register app: ${res.statusCode} ${res.body}`)
    const created = res.json()
    registered = { clientId: created.client_id, clientSecret: created.client_secret, appSlug: slug, ownerToken }
  }

  const { verifier, challenge } = pkcePair()
  const decision = await app.inject({
    method: 'POST',
    url: '/oauth/authorize',
    headers: { authorization: `Bearer ${userToken}`, 'content-type': 'application/json' },
    payload: JSON.stringify({
      client_id: registered.clientId,
      redirect_uri: REDIRECT_URI,
      scope: (opts.scopes ?? opts.appScopes ?? ['invoices:read', 'bills:read', 'customers:read']).join(' '),
      state: 'xyz',
      code_challenge: challenge,
      code_challenge_method: 'S256',
      org_ref_id: orgRefId,
      entity_ref_id: entityRefId,
      decision: 'allow',
      ...(opts.resource !== null && { resource: opts.resource ?? `${app.config.mcpBaseUrl}/mcp` })
    })
  })
  if (decision.statusCode !== 302) throw new Error(`authorize: ${decision.statusCode} ${decision.body}`)
  const code = new URL(decision.headers.location as string).searchParams.get('code')
  if (!code) throw new Error(`authorize: redirected without a code to ${decision.headers.location}`)
  const tokens = await app.inject({
    method: 'POST',
    url: '/oauth/token',
    headers: { 'content-type': 'application/json' },
    payload: JSON.stringify({
      grant_type: 'authorization_code',
      code,
      redirect_uri: REDIRECT_URI,
      code_verifier: verifier,
      client_id: registered.clientId,
      client_secret: registered.clientSecret
    })
  })
  if (tokens.statusCode !== 200) throw new Error(`token: ${tokens.statusCode} ${tokens.body}`)
  const t = tokens.json()
  return {
    userToken,
    orgRefId,
    entityRefId,
    ...registered,
    installId: t.install_id,
    accessToken: t.access_token,
    refreshToken: t.refresh_token
  }
}

export const bearer = (token: string) => ({ authorization: `Bearer ${token}` })
