import { randomBytes } from 'node:crypto'
import { createRequire } from 'node:module'
import { Writable } from 'node:stream'
import { Worker } from 'node:worker_threads'
import autocannon from 'autocannon'
import pg from 'pg'

/** What the benchmarks share: environment knobs, number formatting, verdicts and a throw-away database. */

export function positiveInt (name: string, fallback: number, zeroOk = false): number {
  const raw = process.env[name]
  if (raw === undefined || raw === '') return fallback
  const n = Number(raw)
  if (!Number.isInteger(n) || n < (zeroOk ? 0 : 1)) throw new Error(`${name} must be an integer ${zeroOk ? '>= 0' : '>= 1'} (got ${JSON.stringify(raw)})`)
  return n
}

export const fmt = (n: number, digits = 0): string => n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits })
export const verdict = (ok: boolean): string => ok ? 'PASS' : 'MISS'

/** A log destination that accepts and drops everything: logging is paid for up to the write. */
export const discard = (): Writable => new Writable({ write (_chunk, _encoding, cb) { cb() } })

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

type Cleanup = () => Promise<void> | void

/**
 * Runs a benchmark's `main` with a list it pushes cleanups onto; they run last-in first-out (servers before the
 * database they use), whatever happened. Exits 0, or 1 when `main` threw.
 */
export function runBench (main: (cleanups: Cleanup[]) => Promise<void>): void {
  const cleanups: Cleanup[] = []
  const cleanUp = async (): Promise<void> => {
    for (const fn of cleanups.reverse()) {
      try {
        await fn()
      } catch (err) {
        console.error('cleanup failed:', err)
      }
    }
  }
  main(cleanups).then(
    async () => { await cleanUp(); process.exit(0) },
    async err => { await cleanUp(); console.error('\nbench failed:', err); process.exit(1) })
}

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

const AUTOCANNON = createRequire(import.meta.url).resolve('autocannon')

/**
 * autocannon in a worker thread (a fresh one per slice), so that it neither shares the servers' event loop nor
 * pollutes their heap. Functions cannot cross into the worker, so a per-connection session header (`sessions`) and
 * a body check (`expect`, a substring) are built there from plain data.
 */
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads')
const { autocannon, opts, sessions, expect } = workerData
if (sessions) {
  let next = 0
  opts.setupClient = client => client.setHeaders({ ...opts.headers, 'mcp-session-id': sessions[next++ % sessions.length] })
}
if (expect) opts.verifyBody = body => typeof body === 'string' && body.includes(expect)
require(autocannon)(opts, (err, result) => {
  if (err) parentPort.postMessage({ error: String(err && err.stack || err) })
  else parentPort.postMessage({ result })
})`

/** One slice of load; `inline` runs autocannon on this thread instead (BENCH_INLINE). */
export function loadSlice (opts: autocannon.Options, extras: { sessions?: string[], expect?: string } = {}, inline = false): Promise<RawResult> {
  if (inline) return autocannon({ ...opts, skipAggregateResult: true }) as unknown as Promise<RawResult>
  return new Promise((resolve, reject) => {
    const worker = new Worker(WORKER_SOURCE, { eval: true, workerData: { autocannon: AUTOCANNON, opts: { ...opts, skipAggregateResult: true }, ...extras } })
    worker.once('message', (msg: { error?: string, result?: RawResult }) => {
      if (msg.result) resolve(msg.result)
      else reject(new Error(`autocannon: ${msg.error}`))
      void worker.terminate()
    })
    worker.once('error', reject)
    worker.once('exit', code => reject(new Error(`load worker exited (${code}) without a result`)))
  })
}
