// The service as its own process, reached over real HTTP only: started as users start it (`node dist/cli.js serve`,
// the build), its command line, and the calls of the public surfaces that a journey through the dashboard needs
// (register an app, consent, exchange the code, subscribe, publish an event, read a subscription's attempts).
//
// Nothing here loads the in-process helpers (helper.ts makes a database as it loads), so that the screenshots script
// (scripts/dashboard-screenshots.ts) uses it as the end-to-end tests do.
import { execFile, spawn, type ChildProcess } from 'node:child_process'
import { createHash, randomBytes } from 'node:crypto'
import { promisify } from 'node:util'
import { cli } from './processes.js'

const run = promisify(execFile)
export const JOURNEY_REDIRECT_URI = 'https://app.example.com/callback'

/** Probes until `until` accepts the value (polling, never a fixed sleep); throws after `timeout` ms, saying what. */
export async function waitFor<T> (
  probe: () => T | Promise<T>,
  o: { until?: (value: T) => boolean, timeout?: number, interval?: number, what: string }
): Promise<T> {
  const { until = Boolean, timeout = 60_000, interval = 100 } = o
  const deadline = Date.now() + timeout
  let last: T | undefined
  for (;;) {
    last = await probe()
    if (until(last)) return last
    if (Date.now() > deadline) {
      const seen = JSON.stringify(last)?.slice(0, 500)
      throw new Error(`timed out after ${timeout} ms waiting for ${o.what}; last: ${seen}`)
    }
    await new Promise(resolve => setTimeout(resolve, interval))
  }
}

export interface Gateway {
  origin: string
  child: ChildProcess
  /** Everything the process printed so far. */
  output (): string
  /** SIGTERM, and SIGKILL after `graceMs`; resolves when the process has exited. */
  stop (graceMs?: number): Promise<void>
}

/** `marketplace-gateway serve` with `env` (PUBLIC_BASE_URL is the origin), once it listens. */
export async function startGateway (env: NodeJS.ProcessEnv, timeout = 120_000): Promise<Gateway> {
  const origin = env.PUBLIC_BASE_URL
  if (!origin) throw new Error('startGateway: set PUBLIC_BASE_URL (and PORT) in env')
  const child = spawn(...cli('serve'), { env, stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  let exited = false
  const exit = new Promise<void>(resolve => child.once('exit', () => { exited = true; resolve() }))
  child.stdout!.on('data', d => { out += d })
  child.stderr!.on('data', d => { out += d })
  await waitFor(() => exited || /listening on/.test(out), { timeout, what: 'the service to listen' })
  if (exited) throw new Error(`the service exited before it listened:\n${out}`)
  return {
    origin,
    child,
    output: () => out,
    async stop (graceMs = 30_000) {
      if (exited) return
      child.kill('SIGTERM')
      const timer = setTimeout(() => child.kill('SIGKILL'), graceMs)
      await exit
      clearTimeout(timer)
    }
  }
}

/** One command of the built command line with `env`; what it printed, trimmed. */
export const command = (env: NodeJS.ProcessEnv, ...args: string[]): Promise<string> =>
  run(...cli(...args), { env }).then(r => r.stdout.trim())

export interface Answer<T = Record<string, unknown>> {
  status: number
  headers: Headers
  body: T
}

export interface RegisteredApp { clientId: string, clientSecret: string, name: string }
export interface Tenant { org: string, entity: string }
export interface JourneyInstall extends Tenant {
  installId: string
  accessToken: string
  refreshToken: string
}
export interface JourneySubscription { id: string, signing_secret: string }
export interface JourneyAttempt {
  id: string
  delivery_id: string
  event_id: string
  topic: string
  attempt: number
  attempted_at: string
  response_status: number
  delivery_status: 'pending' | 'succeeded' | 'failed' | 'cancelled'
}

/** The public surfaces of a running service, called as an app, a user's browser or the accounting system would. */
export function gatewayClient (origin: string) {
  async function call<T = Record<string, unknown>> (
    method: string,
    path: string,
    o: { bearer?: string, body?: unknown } = {}
  ): Promise<Answer<T>> {
    const res = await fetch(new URL(path, origin), {
      method,
      redirect: 'manual',
      headers: {
        ...(o.bearer !== undefined && { authorization: `Bearer ${o.bearer}` }),
        ...(o.body !== undefined && { 'content-type': 'application/json' })
      },
      body: o.body === undefined ? undefined : JSON.stringify(o.body)
    })
    const text = await res.text()
    let body: unknown = text
    try {
      body = text === '' ? {} : JSON.parse(text)
    } catch {}
    return { status: res.status, headers: res.headers, body: body as T }
  }

  async function expect<T> (answer: Promise<Answer<T>>, status: number, what: string): Promise<Answer<T>> {
    const a = await answer
    if (a.status !== status) throw new Error(`${what}: ${a.status} ${JSON.stringify(a.body)}`)
    return a
  }

  const hooks = (t: Tenant) => `/public/v1/orgs/${t.org}/entities/${t.entity}/webhooks`

  return {
    call,

    /** POST /apps as the developer (their user session token). */
    async registerApp (
      ownerToken: string, o: { slug: string, name: string, scopes: string[] }
    ): Promise<RegisteredApp> {
      const { body } = await expect(call<{ client_id: string, client_secret: string }>('POST', '/apps', {
        bearer: ownerToken, body: { ...o, redirect_uris: [JOURNEY_REDIRECT_URI] }
      }), 201, 'register an app')
      return { clientId: body.client_id, clientSecret: body.client_secret, name: o.name }
    },

    /** Consent (as the organisation's user, with PKCE) and the code's exchange (as the app): an install. */
    async install (
      app: RegisteredApp, o: { userToken: string, tenant: Tenant, scopes: string[] }
    ): Promise<JourneyInstall> {
      const verifier = randomBytes(32).toString('base64url')
      const consent = await expect(call('POST', '/oauth/authorize', {
        bearer: o.userToken,
        body: {
          client_id: app.clientId,
          redirect_uri: JOURNEY_REDIRECT_URI,
          scope: o.scopes.join(' '),
          state: 'journey',
          code_challenge: createHash('sha256').update(verifier).digest('base64url'),
          code_challenge_method: 'S256',
          org_ref_id: o.tenant.org,
          entity_ref_id: o.tenant.entity,
          decision: 'allow'
        }
      }), 302, 'consent')
      const code = new URL(consent.headers.get('location')!).searchParams.get('code')
      const { body } = await expect(call<{ install_id: string, access_token: string, refresh_token: string }>(
        'POST', '/oauth/token', {
          body: {
            grant_type: 'authorization_code',
            code,
            redirect_uri: JOURNEY_REDIRECT_URI,
            code_verifier: verifier,
            client_id: app.clientId,
            client_secret: app.clientSecret
          }
        }), 200, 'exchange the code')
      return {
        ...o.tenant, installId: body.install_id, accessToken: body.access_token, refreshToken: body.refresh_token
      }
    },

    /** A webhook subscription of the install. */
    async subscribe (i: JourneyInstall, o: { topics: string[], target_url: string }): Promise<JourneySubscription> {
      const { body } = await expect(call<JourneySubscription>('POST', hooks(i), { bearer: i.accessToken, body: o }),
        201, 'subscribe')
      return body
    },

    /** POST /events as the accounting system: one event of `topic` with the whole record. */
    async publish (eventsToken: string, tenant: Tenant, topic: string, data: object): Promise<string> {
      const { body } = await expect(call<{ id: string }>('POST', '/events', {
        bearer: eventsToken,
        body: { topic, org_ref_id: tenant.org, entity_ref_id: tenant.entity, data }
      }), 202, `publish ${topic}`)
      return body.id
    },

    /** The subscription's attempts, newest first (every page), as the install reads them. */
    async attempts (i: JourneyInstall, subscriptionId: string): Promise<JourneyAttempt[]> {
      const all: JourneyAttempt[] = []
      let cursor: string | null = null
      do {
        const query: string = `?limit=100${cursor ? `&cursor=${encodeURIComponent(cursor)}` : ''}`
        const { body }: Answer<{ attempts: JourneyAttempt[], next_cursor: string | null }> = await expect(
          call<{ attempts: JourneyAttempt[], next_cursor: string | null }>(
            'GET', `${hooks(i)}/${subscriptionId}/deliveries${query}`, { bearer: i.accessToken }),
          200, 'read the attempts')
        all.push(...body.attempts)
        cursor = body.next_cursor
      } while (cursor)
      return all
    }
  }
}

export type GatewayClient = ReturnType<typeof gatewayClient>
