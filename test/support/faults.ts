/**
 * The real peers of the fault tests: a Postgres cluster and a Redis server this test starts, stops and freezes
 * itself (never the machine's shared ones), the service in its own process, and a load generator over undici.
 */
import { execFileSync, spawn, type ChildProcess } from 'node:child_process'
import { chownSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import { Pool } from 'undici'
import { buildApp } from '../../app.js'
import { eventually, install, ISSUER, SIGNING_KEY, testConfig, type Installed } from './helper.js'
import { cli } from './processes.js'
import { subscribe, type Subscription } from './webhooks.js'

type Test = { teardown(fn: () => unknown): void, comment(...args: unknown[]): void }

export async function freePort (): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer()
    s.once('error', reject)
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number }
      s.close(() => resolve(port))
    })
  })
}

/** Debian keeps the server binaries out of PATH. */
function pgBin (): string | undefined {
  const root = '/usr/lib/postgresql'
  const versions = existsSync(root) ? readdirSync(root).sort((a, b) => Number(b) - Number(a)) : []
  for (const v of versions) if (existsSync(join(root, v, 'bin', 'pg_ctl'))) return join(root, v, 'bin')
  try {
    return join(execFileSync('pg_config', ['--bindir'], { encoding: 'utf8' }).trim())
  } catch {
    return undefined
  }
}

const hasCommand = (cmd: string): boolean => {
  try {
    execFileSync('sh', ['-c', `command -v ${cmd}`], { stdio: 'ignore' })
    return true
  } catch {
    return false
  }
}

/** Why the fault tests cannot run here, or undefined when they can. */
export function missingPeers (): string | undefined {
  if (!pgBin()) return 'no Postgres server binaries (initdb, pg_ctl)'
  if (!hasCommand('redis-server')) return 'no redis-server'
  if (process.getuid?.() === 0 && !hasCommand('runuser')) return 'running as root without runuser'
  return undefined
}

/** Postgres refuses to run as root: as root, its commands run as the postgres user. */
function pgCommand (cmd: string, args: string[]): void {
  const bin = join(pgBin()!, cmd)
  const [file, argv] = process.getuid?.() === 0 ? ['runuser', ['-u', 'postgres', '--', bin, ...args]] : [bin, args]
  execFileSync(file, argv, { stdio: 'ignore', timeout: 60_000 })
}

export interface Cluster {
  url: string
  start(): void
  /** `pg_ctl stop -m fast`: connections are cut, as in a fail-over or a crash of the server. */
  stop(): void
  /** SIGSTOP on the server and every backend: it stops answering, with every connection left open. */
  freeze(): void
  thaw(): void
}

/** A throw-away cluster in a temp dir, on a port of its own. */
export async function startCluster (t: Test): Promise<Cluster> {
  const dir = mkdtempSync(join(tmpdir(), 'mg-fault-pg-'))
  if (process.getuid?.() === 0) {
    const uid = Number(execFileSync('id', ['-u', 'postgres'], { encoding: 'utf8' }))
    const gid = Number(execFileSync('id', ['-g', 'postgres'], { encoding: 'utf8' }))
    chownSync(dir, uid, gid)
  }
  const data = join(dir, 'data')
  const port = await freePort()
  pgCommand('initdb', ['-D', data, '-U', 'postgres', '-A', 'trust', '--no-sync'])
  const options = `-p ${port} -k ${dir} -c listen_addresses=127.0.0.1 -c fsync=off -c max_connections=200`
  const processes = (): number[] => {
    const pidFile = join(data, 'postmaster.pid')
    if (!existsSync(pidFile)) return []
    const postmaster = Number(readFileSync(pidFile, 'utf8').split('\n')[0])
    const children = execFileSync('ps', ['-o', 'pid=', '--ppid', String(postmaster)], { encoding: 'utf8' })
      .split('\n').map(Number).filter(Boolean)
    return [postmaster, ...children]
  }
  const signal = (sig: NodeJS.Signals) => {
    for (const pid of processes()) {
      try { process.kill(pid, sig) } catch {}
    }
  }
  const cluster: Cluster = {
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    start: () => pgCommand('pg_ctl', ['-D', data, '-o', options, '-l', join(dir, 'log'), '-w', 'start']),
    stop: () => pgCommand('pg_ctl', ['-D', data, '-m', 'fast', '-w', 'stop']),
    freeze: () => signal('SIGSTOP'),
    thaw: () => signal('SIGCONT')
  }
  cluster.start()
  const remove = (): void => {
    cluster.thaw()
    try { pgCommand('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']) } catch {}
    rmSync(dir, { recursive: true, force: true })
  }
  t.teardown(remove)
  // Also when the test process is ended early (a time-out): never leave a cluster running.
  process.once('exit', () => { if (existsSync(dir)) remove() })
  return cluster
}

export interface RedisServer { url: string, freeze(): void, thaw(): void }

export async function startRedis (t: Test): Promise<RedisServer> {
  const port = await freePort()
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--appendonly', 'no']
  const child = spawn('redis-server', args, { stdio: 'ignore' })
  t.teardown(() => {
    child.kill('SIGCONT')
    child.kill('SIGKILL')
  })
  const url = `redis://127.0.0.1:${port}`
  await eventually(() => {
    try {
      return execFileSync('redis-cli', ['-p', String(port), 'ping'], { encoding: 'utf8' }).trim() === 'PONG'
    } catch {
      return false
    }
  }, { what: 'redis to answer' })
  return { url, freeze: () => child.kill('SIGSTOP'), thaw: () => child.kill('SIGCONT') }
}

export const SECRETS = {
  USER_SESSION_SECRET: 'fault-tests-user-session-secret-0123456789',
  EVENTS_TOKEN: 'fault-tests-events-token-0123456789',
  WEBHOOK_SECRET_KEY: '00112233445566778899aabbccddeeff00112233445566778899aabbccddeeff',
  TOKEN_SIGNING_KEY: SIGNING_KEY
}

export interface Service {
  base: string
  child: ChildProcess
  exited: Promise<number | null>
  output(): string
}

/** The service in its own process, as operators run it; resolves once it is ready. */
export async function startService (t: Test, env: Record<string, string>): Promise<Service> {
  const port = await freePort()
  const dataDir = mkdtempSync(join(tmpdir(), 'mg-fault-svc-'))
  const child = spawn(...cli('serve'), {
    env: {
      ...process.env,
      NODE_ENV: 'test',
      HOST: '127.0.0.1',
      PORT: String(port),
      DATA_DIR: dataDir,
      LOG_LEVEL: 'warn',
      PUBLIC_BASE_URL: ISSUER,
      PUBLIC_RATE_LIMIT: '1000000',
      ...SECRETS,
      ...env
    },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  let out = ''
  child.stdout!.on('data', d => { out += d })
  child.stderr!.on('data', d => { out += d })
  const exited = new Promise<number | null>(resolve => child.on('exit', code => resolve(code)))
  t.teardown(() => {
    child.kill('SIGKILL')
    rmSync(dataDir, { recursive: true, force: true })
  })
  const base = `http://127.0.0.1:${port}`
  // Only a bound on a stuck start: a loaded 2-core machine once took over 30 s.
  await eventually(async () => (await fetch(`${base}/health/ready`).catch(() => undefined))?.status === 200, {
    timeout: 90_000,
    what: 'the service to be ready'
  }).catch(err => { throw new Error(`${err.message}; it wrote: ${out}`) })
  return { base, child, exited, output: () => out }
}

export interface Outcome {
  kind: string
  status: number
  ms: number
  /** A transport error instead of an answer (ECONNRESET, a client time-out). */
  error?: string
  retryAfter?: string
  body?: { error?: string }
  /** When it was sent (performance.now()). */
  at?: number
  /** Its number in the load (`inFlight()`), for the load's own requests. */
  n?: number
}

export type RequestMaker = (n: number) => {
  kind: string
  method: 'GET' | 'POST'
  path: string
  headers?: Record<string, string>
  body?: string
}

/**
 * Keeps `concurrency` requests going until `stop()` is called, each over a keep-alive pool, recording every
 * outcome. The client gives up after `clientTimeoutMs`, which the service must never come near.
 */
export function startLoad (
  base: string,
  makers: RequestMaker[],
  opts: { concurrency?: number, clientTimeoutMs?: number } = {}
) {
  const pool = new Pool(base, { connections: opts.concurrency ?? 8 })
  const outcomes: Outcome[] = []
  const state = { running: true }
  /** The numbers of the requests sent and not yet answered (or failed). */
  const pending = new Set<number>()
  let n = 0
  const loop = async (): Promise<void> => {
    while (state.running) {
      const k = n++
      const r = makers[k % makers.length]!(k)
      const started = performance.now()
      pending.add(k)
      try {
        const res = await pool.request({
          method: r.method,
          path: r.path,
          headers: r.headers,
          body: r.body,
          headersTimeout: opts.clientTimeoutMs ?? 10_000,
          bodyTimeout: opts.clientTimeoutMs ?? 10_000
        })
        const text = await res.body.text()
        let body: Outcome['body']
        try { body = JSON.parse(text) } catch {}
        outcomes.push({
          kind: r.kind,
          status: res.statusCode,
          ms: performance.now() - started,
          retryAfter: res.headers['retry-after'] as string | undefined,
          body,
          at: started,
          n: k
        })
        pending.delete(k)
      } catch (err) {
        const error = (err as { code?: string }).code ?? String(err)
        outcomes.push({ kind: r.kind, status: 0, ms: performance.now() - started, error, at: started, n: k })
        pending.delete(k)
        await sleep(20)
      }
    }
  }
  const loops = Array.from({ length: opts.concurrency ?? 8 }, loop)
  return {
    outcomes,
    /** The numbers of the requests in flight now. */
    inFlight: (): number[] => [...pending],
    /**
     * Resolves once every request in flight now has been answered, or has failed (the client's own time-out ends a
     * request that hangs): a fault that lasts until then outlasts every wait it caused.
     */
    async settled (what: string): Promise<void> {
      const now = [...pending]
      await eventually(() => now.every(k => !pending.has(k)), { interval: 10, timeout: 60_000, what })
    },
    /** Resolves once `count` answers sent after `since` (performance.now()) pass `test`. */
    async answered (what: string, since: number, count: number, test: (o: Outcome) => boolean): Promise<Outcome[]> {
      const found = () => outcomes.filter(o => o.at! >= since && test(o))
      await eventually(() => found().length, { until: c => c >= count, interval: 10, timeout: 60_000, what })
      return found()
    },
    /** Stops the load (again: a no-op) and returns every outcome. */
    async stop (): Promise<Outcome[]> {
      if (!state.running) return outcomes
      state.running = false
      await Promise.all(loops)
      await pool.close()
      return outcomes
    }
  }
}

/** A summary for the test log: counts by kind and status, the slowest request. */
export function summary (outcomes: Outcome[]): string {
  const counts = new Map<string, number>()
  for (const o of outcomes) {
    const key = `${o.kind} ${o.status || o.error}`
    counts.set(key, (counts.get(key) ?? 0) + 1)
  }
  const slowest = Math.max(0, ...outcomes.map(o => o.ms))
  return `${[...counts].map(([k, v]) => `${k}: ${v}`).join(', ')}; slowest ${Math.round(slowest)} ms`
}

/**
 * An install and its subscription to `targetUrl`, made through the service's own routes by an app on the same
 * database (without a worker, so the service under test delivers); closed before the service starts.
 */
export async function subscribedInstall (
  t: Test,
  env: Record<string, string>,
  targetUrl: string
): Promise<{ install: Installed, subscription: Subscription }> {
  const setup = await buildApp(testConfig(t, { ...env, WEBHOOK_WORKER: 'false' }))
  try {
    await setup.ready()
    const i = await install(setup)
    return { install: i, subscription: await subscribe(setup, i, { target_url: targetUrl }) }
  } finally {
    await setup.close()
  }
}
