import { randomBytes } from 'node:crypto'
import { Writable } from 'node:stream'
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
