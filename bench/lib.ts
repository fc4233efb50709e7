import { spawn } from 'node:child_process'
import { randomBytes } from 'node:crypto'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { createRequire } from 'node:module'
import { cpus, tmpdir } from 'node:os'
import { join } from 'node:path'
import { Writable } from 'node:stream'
import autocannon from 'autocannon'
import pg from 'pg'
import { loadConfig, type Config } from '../plugins/infrastructure/config/index.js'
import type { Queryable } from '../plugins/infrastructure/db/types.js'

/**
 * What the benchmarks share: environment knobs, the app's configuration and a throw-away database, timing and
 * waiting, figures (quantiles, merged load slices, CPU readings), number formatting, tables and verdicts.
 * Long explanations belong in BENCHMARKS.md.
 */

// ---------------------------------------------------------------------------------------------------------------
// Environment

export function positiveInt (name: string, fallback: number, zeroOk = false): number {
  const raw = process.env[name]
  if (raw === undefined || raw === '') return fallback
  const n = Number(raw)
  if (!Number.isInteger(n) || n < (zeroOk ? 0 : 1)) {
    throw new Error(`${name} must be an integer ${zeroOk ? '>= 0' : '>= 1'} (got ${JSON.stringify(raw)})`)
  }
  return n
}

/** A comma-separated list of whole numbers from 1 to `max` (`fallback` when unset), e.g. BENCH_WORKERS=1,2,4. */
export function positiveInts (name: string, fallback: number[], max = Infinity): number[] {
  const raw = process.env[name]
  if (raw === undefined || raw === '') return fallback
  return raw.split(',').map(item => {
    const n = Number(item.trim())
    if (!Number.isInteger(n) || n < 1 || n > max) {
      throw new Error(`${name}: ${JSON.stringify(item)} is not a whole number from 1 to ${max}`)
    }
    return n
  })
}

/** A comma-separated choice among `allowed` (`fallback`, or all of them, when unset), in the order given. */
export function list (name: string, allowed: readonly string[], fallback: readonly string[] = allowed): Set<string> {
  const raw = process.env[name]
  if (!raw) return new Set(fallback)
  const items = raw.split(',').map(s => s.trim()).filter(Boolean)
  for (const item of items) {
    if (!allowed.includes(item)) {
      throw new Error(`${name}: unknown ${JSON.stringify(item)} (allowed: ${allowed.join(', ')})`)
    }
  }
  return new Set(items)
}

// ---------------------------------------------------------------------------------------------------------------
// Formatting

export const fmt = (n: number, digits = 0): string =>
  n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits })
export const verdict = (ok: boolean): string => ok ? 'PASS' : 'MISS'

/** "Node v20…, 2 CPU(s) (model)": the first thing each benchmark says about the machine. */
export function nodeAndCpus (): string {
  const cpu = cpus()
  return `Node ${process.version}, ${cpu.length} CPU(s) (${cpu[0]?.model ?? 'unknown'})`
}

/**
 * One figure for the summary table of `npm run bench` (bench/run.ts collects these lines from every benchmark's
 * output): what it is, its value, and its target and verdict when it has one.
 */
export function summary (figure: string, value: string, target?: { text: string, met: boolean }): void {
  const line = { figure, value, target: target?.text, verdict: target && verdict(target.met) }
  console.log(SUMMARY_PREFIX + JSON.stringify(line))
}
export const SUMMARY_PREFIX = 'summary\t'

/** UTC date and minute, the first cell of a markdown row. */
export const stamp = (): string => new Date().toISOString().slice(0, 16).replace('T', ' ')

/** Prints rows as a table: the first `left` columns left-aligned, the others right-aligned, two spaces of indent. */
export function printTable (rows: string[][], left = 1): void {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map(r => r[i]!.length)))
  for (const r of rows) {
    console.log('  ' + r.map((c, i) => i < left ? c.padEnd(widths[i]!) : c.padStart(widths[i]!)).join('  ').trimEnd())
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Time

/** Milliseconds on the process-wide monotonic clock (comparable between threads). */
export const now = (): number => Number(process.hrtime.bigint()) / 1e6
export const sleep = (ms: number): Promise<void> => new Promise(resolve => setTimeout(resolve, ms))

/** Polls `check` every `pollMs` until it holds (true) or `timeoutMs` passed (false). */
export async function waitFor (
  check: () => boolean | Promise<boolean>,
  timeoutMs: number,
  pollMs = 10
): Promise<boolean> {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) return false
    await sleep(pollMs)
  }
  return true
}

/** The q-quantile of ascending `sorted` (nearest rank); NaN when empty. */
export function quantile (sorted: number[], q: number): number {
  if (sorted.length === 0) return NaN
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!
}

// ---------------------------------------------------------------------------------------------------------------
// CPU (Linux /proc; elsewhere NaN or undefined)

/** Jiffies from /proc/stat: how busy the whole machine was, all cores. */
export function machineCpu (): { idle: number, total: number } | undefined {
  try {
    const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number)
    return { idle: fields[3]! + (fields[4] ?? 0), total: fields.reduce((s, x) => s + x, 0) }
  } catch {
    return undefined
  }
}

/** The busy fraction of the whole machine (all cores) between two `machineCpu()` readings. */
export const machineBusy = (a: ReturnType<typeof machineCpu>, b: ReturnType<typeof machineCpu>): number =>
  a && b ? 1 - (b.idle - a.idle) / Math.max(1, b.total - a.total) : NaN

/** CPU seconds used so far by all `postgres` processes (other databases' work included). */
export function postgresCpuSeconds (): number {
  let ticks = 0
  try {
    for (const pid of readdirSync('/proc')) {
      if (!/^\d+$/.test(pid)) continue
      try {
        const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
        const close = stat.lastIndexOf(')')
        if (stat.slice(stat.indexOf('(') + 1, close) !== 'postgres') continue
        const fields = stat.slice(close + 2).split(' ')
        ticks += Number(fields[11]) + Number(fields[12])
      } catch {}
    }
  } catch {
    return NaN
  }
  return ticks / 100
}

// ---------------------------------------------------------------------------------------------------------------
// The app and its database

/** A log destination that accepts and drops everything: logging is paid for up to the write. */
export const discard = (): Writable => new Writable({ write (_chunk, _encoding, cb) { cb() } })

export type Cleanup = () => Promise<void> | void

/** A fresh temporary directory, removed by the cleanups. */
export function tempDir (prefix: string, cleanups: Cleanup[]): string {
  const dir = mkdtempSync(join(tmpdir(), prefix))
  cleanups.push(() => rmSync(dir, { recursive: true, force: true }))
  return dir
}

/**
 * The app's configuration for a benchmark: test mode (development secrets in `dataDir`), the given database and
 * log level, and the public rate limit at the schema's maximum (per install and minute, far above what one
 * install sends here); `env` adds or overrides variables.
 */
export function benchConfig (
  dataDir: string,
  databaseUrl: string,
  logLevel: string,
  env: Record<string, string> = {}
): Config {
  return loadConfig({
    NODE_ENV: 'test',
    DATA_DIR: dataDir,
    DATABASE_URL: databaseUrl,
    LOG_LEVEL: logLevel,
    PUBLIC_RATE_LIMIT: '1000000',
    ...env
  })
}

/** A pg.Client as the service's Queryable, to run the service's own statements from a benchmark's connection. */
export const queryable = (client: pg.Client): Queryable => ({
  query: async <T>(sql: string, params?: unknown[]) => (await client.query(sql, params)).rows as T[]
})

/**
 * The development secrets a setup app generated into `dataDir`, as the environment variables that hand them to a
 * service started in production mode.
 */
export function devSecrets (dataDir: string): Record<string, string> {
  return JSON.parse(readFileSync(join(dataDir, 'dev-secrets.json'), 'utf8')) as Record<string, string>
}

/**
 * The test helpers a benchmark borrows for its setup (the OAuth install journey, a self-signed certificate).
 * test/support/helper.ts makes a database of its own when DATABASE_URL is set, and drops it at beforeExit, which
 * `process.exit` skips: benchmarks take their database from BENCH_DATABASE_URL only, so it is imported without.
 */
export async function testHelpers () {
  delete process.env.DATABASE_URL
  const { install } = await import('../test/support/helper.js')
  const { selfSigned } = await import('../test/support/receiver.js')
  return { install, selfSigned }
}

/**
 * BENCH_DATABASE_URL as it is, or a fresh database on the local Postgres (BENCH_ADMIN_URL) that `drop` removes.
 */
export async function benchDatabase (prefix: string): Promise<{ url: string, drop: () => Promise<void> }> {
  if (process.env.BENCH_DATABASE_URL) return { url: process.env.BENCH_DATABASE_URL, drop: async () => {} }
  const adminUrl = process.env.BENCH_ADMIN_URL ?? 'postgres://postgres@127.0.0.1:5432/postgres'
  const name = `${prefix}_${randomBytes(4).toString('hex')}`
  const run = async (sql: string): Promise<void> => {
    const c = new pg.Client({ connectionString: adminUrl })
    await c.connect()
    try { await c.query(sql) } finally { await c.end() }
  }
  await run(`create database ${pg.escapeIdentifier(name)}`)
  const url = new URL(adminUrl)
  url.pathname = `/${name}`
  return { url: url.toString(), drop: () => run(`drop database if exists ${pg.escapeIdentifier(name)} with (force)`) }
}

/**
 * Runs a benchmark's `main` with a list it pushes cleanups onto; they run last-in first-out (servers before the
 * database they use), whatever happened. Exits 0, or 1 when `main` threw.
 */
export function runBench (main: (cleanups: Cleanup[]) => Promise<void>): void {
  const cleanups: Cleanup[] = []
  // One cleanup, however many ways the run ends at once (Ctrl-C also stops the load process, which fails main).
  let cleaning: Promise<void> | undefined
  const cleanUp = (): Promise<void> => (cleaning ??= (async () => {
    for (const fn of cleanups.reverse()) {
      try {
        await fn()
      } catch (err) {
        console.error('cleanup failed:', err)
      }
    }
  })())
  // Ctrl-C or a kill cleans up too: the servers run in process groups of their own and would outlive this one.
  for (const signal of ['SIGINT', 'SIGTERM'] as const) {
    process.once(signal, () => { cleanUp().then(() => process.exit(130), () => process.exit(130)) })
  }
  main(cleanups).then(
    async () => { await cleanUp(); process.exit(0) },
    async err => { await cleanUp(); console.error('\nbench failed:', err); process.exit(1) })
}

// ---------------------------------------------------------------------------------------------------------------
// Load slices (autocannon) and their merge

/** What autocannon answers with `skipAggregateResult`: histograms still encoded, to be merged by `aggregateResult`. */
export interface RawResult {
  totalCompletedRequests: number
  duration: number
  errors: number
  timeouts: number
  mismatches: number
  non2xx: number
}

export const aggregateResult = (autocannon as unknown as {
  aggregateResult(results: RawResult[], opts: autocannon.Options): autocannon.Result
}).aggregateResult

/** One side's slices merged: req/s = completed requests / seconds, p50 and p99 of one latency histogram. */
export interface SliceFigures {
  rps: number
  p50: number
  p99: number
  total: number
  duration: number
}

/** Merges the slices of one side; throws if any answer was not the expected 200 body, or none came. */
export function mergeSlices (name: string, url: string, connections: number, results: RawResult[]): SliceFigures {
  const sum = (k: keyof RawResult): number => results.reduce((n, r) => n + r[k], 0)
  const bad = sum('non2xx') + sum('errors') + sum('timeouts') + sum('mismatches')
  const total = sum('totalCompletedRequests')
  if (bad > 0 || total === 0) {
    throw new Error(`${name}: ${total} answers, ${sum('non2xx')} non-2xx, ${sum('errors')} errors, ` +
      `${sum('timeouts')} timeouts, ${sum('mismatches')} unexpected bodies`)
  }
  const merged = aggregateResult(results, { url, connections })
  const duration = sum('duration')
  return { rps: total / duration, p50: merged.latency.p50, p99: merged.latency.p99, total, duration }
}

const AUTOCANNON = createRequire(import.meta.url).resolve('autocannon')

/**
 * autocannon in a process of its own (a fresh one per slice), so that the load generator shares neither an event
 * loop nor a heap with anything it measures. Functions cannot cross into it, so a per-connection session header
 * (`sessions`), a per-request access token (the lines of `tokensFile`, taken in turn), a per-request path and token
 * (the lines `<path>\t<token>` of `requestsFile`, taken in turn), a per-request body (the lines of `bodiesFile`, taken
 * in turn from the first) and a body check (`expect`, a substring) are built there from plain data. The options
 * arrive on standard input; the raw result leaves on standard output.
 */
const LOAD_SOURCE = `
let input = ''
process.stdin.setEncoding('utf8')
process.stdin.on('data', chunk => { input += chunk })
process.stdin.on('end', () => {
  const { autocannon, opts, sessions, tokensFile, requestsFile, bodiesFile, expect } = JSON.parse(input)
  const lines = file => require('node:fs').readFileSync(file, 'utf8').split('\\n').filter(Boolean)
  if (sessions) {
    let next = 0
    opts.setupClient = client =>
      client.setHeaders({ ...opts.headers, 'mcp-session-id': sessions[next++ % sessions.length] })
  }
  if (tokensFile) {
    const tokens = lines(tokensFile)
    // A random start: every slice is a fresh process, and starting each at the first token would use only the
    // first few thousand tokens of a long list.
    let next = Math.floor(Math.random() * tokens.length)
    const header = () => 'Bearer ' + tokens[next++ % tokens.length]
    opts.requests = [{ setupRequest: req => ({ ...req, headers: { ...req.headers, authorization: header() } }) }]
  }
  if (requestsFile || bodiesFile) {
    const targets = requestsFile ? lines(requestsFile).map(l => l.split('\\t')) : undefined
    const bodies = bodiesFile ? lines(bodiesFile) : undefined
    let next = targets ? Math.floor(Math.random() * targets.length) : 0
    let nextBody = 0
    opts.requests = [{
      setupRequest: req => {
        const out = { ...req }
        if (targets) {
          const [path, token] = targets[next++ % targets.length]
          out.path = path
          out.headers = { ...req.headers, authorization: 'Bearer ' + token }
        }
        if (bodies) out.body = bodies[nextBody++ % bodies.length]
        return out
      }
    }]
  }
  if (expect) opts.verifyBody = body => typeof body === 'string' && body.includes(expect)
  require(autocannon)(opts, (err, result) => {
    if (err) { console.error(String(err && err.stack || err)); process.exit(1) }
    process.stdout.write(JSON.stringify(result))
  })
})`

/** One slice of load, from a process of its own. */
export function loadSlice (
  opts: autocannon.Options,
  extras: { sessions?: string[], tokensFile?: string, requestsFile?: string, bodiesFile?: string, expect?: string } = {}
): Promise<RawResult> {
  return new Promise((resolve, reject) => {
    const env = { ...process.env }
    delete env.NODE_OPTIONS
    const child = spawn(process.execPath, ['-e', LOAD_SOURCE], { env, stdio: ['pipe', 'pipe', 'inherit'] })
    let out = ''
    child.stdout.setEncoding('utf8')
    child.stdout.on('data', (chunk: string) => { out += chunk })
    child.once('error', reject)
    child.once('exit', code => {
      if (code !== 0) return reject(new Error(`load process exited ${code}`))
      try {
        resolve(JSON.parse(out) as RawResult)
      } catch (err) {
        reject(new Error(`load process: no result (${(err as Error).message})`))
      }
    })
    child.stdin.end(JSON.stringify({ autocannon: AUTOCANNON, opts: { ...opts, skipAggregateResult: true }, ...extras }))
  })
}
