/**
 * `npm run bench`: every benchmark, briefly, one after another, and one summary table of their figures at the end.
 *
 *   npm run bench                      all of them (about 2 minutes on 2 cores)
 *   BENCH_ONLY=me,events npm run bench some of them
 *
 * Each benchmark still runs alone, at full length and with its own options (`npx tsx bench/<name>.ts`, BENCHMARKS.md);
 * here each gets shorter settings, which a BENCH_* variable set by the caller overrides. Their whole output is kept in
 * a log file each (the path is printed); the table collects the `summary` lines they print (bench/lib.ts `summary`).
 * Exits 1 when a benchmark failed to run, never for a missed target.
 */
import { spawn } from 'node:child_process'
import { createWriteStream, mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { ROOT } from '../lib/root.js'
import { fmt, list, printTable, SUMMARY_PREFIX } from './lib.js'
import { cleanEnv, ensureBuilt } from './processes.js'

/** Each benchmark and its brief settings. */
const BRIEF: Record<string, Record<string, string>> = {
  me: { BENCH_SECONDS: '4', BENCH_ROUNDS: '2', BENCH_WARMUP: '1', BENCH_INSTALLS: '1,1000' },
  mcp: { BENCH_SECONDS: '4', BENCH_ROUNDS: '2', BENCH_WARMUP: '1', BENCH_SESSIONS: '1000' },
  webhooks: {
    BENCH_EVENTS: '3000',
    BENCH_FANOUT_SUBSCRIPTIONS: '100',
    BENCH_FANOUT_EVENTS: '30',
    BENCH_LATENCY_EVENTS: '50',
    BENCH_CEILING_REQUESTS: '3000'
  },
  fairness: { BENCH_SECONDS: '5', BENCH_PHASES: 'slow,dead,flaky,burst' },
  workers: { BENCH_EVENTS: '500', BENCH_WORKERS: '1,2' },
  events: { BENCH_SECONDS: '3' },
  dashboard: {
    BENCH_ATTEMPTS: '20000',
    BENCH_BIG_ATTEMPTS: '19000',
    BENCH_OTHER_INSTALLS: '1000',
    BENCH_PAGES: 'apps,webhooks,log,log-topic,log-later,delivery,connections',
    BENCH_SECONDS: '1',
    BENCH_ROUNDS: '1',
    BENCH_WARMUP: '1',
    BENCH_EXPLAIN: 'off'
  },
  records: {
    BENCH_INVOICES: '10000,100000',
    BENCH_SECONDS: '2',
    BENCH_ROUNDS: '2',
    BENCH_WARMUP: '1',
    BENCH_GET_REQUESTS: '5000',
    BENCH_INGEST_SECONDS: '3',
    BENCH_AGED_OPEN: '10000',
    BENCH_AGED_TENANTS: '200'
  }
}

interface Line { bench: string, figure: string, value: string, target?: string, verdict?: string }

function run (name: string, logFile: string): Promise<{ code: number | null, lines: Line[], seconds: number }> {
  const started = Date.now()
  const env = cleanEnv({ ...BRIEF[name], ...pick(process.env, /^BENCH_(?!ONLY$)/) })
  const child = spawn(process.execPath, ['--import', 'tsx', join('bench', `${name}.ts`)], {
    cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe']
  })
  const log = createWriteStream(logFile)
  const lines: Line[] = []
  let pending = ''
  child.stdout.on('data', (chunk: Buffer) => {
    log.write(chunk)
    pending += chunk.toString()
    const complete = pending.split('\n')
    pending = complete.pop()!
    for (const line of complete) {
      if (line.startsWith(SUMMARY_PREFIX)) lines.push({ bench: name, ...JSON.parse(line.slice(SUMMARY_PREFIX.length)) })
    }
  })
  child.stderr.on('data', (chunk: Buffer) => log.write(chunk))
  return new Promise(resolve => child.once('exit', code => {
    log.end()
    resolve({ code, lines, seconds: (Date.now() - started) / 1000 })
  }))
}

const pick = (env: NodeJS.ProcessEnv, pattern: RegExp): Record<string, string> =>
  Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => pattern.test(e[0]) && e[1] !== undefined))

const names = [...list('BENCH_ONLY', Object.keys(BRIEF))]
await ensureBuilt()
const dir = mkdtempSync(join(tmpdir(), 'mg-bench-run-'))
console.log(`marketplace-gateway benchmarks, brief: ${names.join(', ')} (logs in ${dir})`)
const all: Line[] = []
const failed: string[] = []
for (const name of names) {
  process.stdout.write(`  ${name}… `)
  const logFile = join(dir, `${name}.log`)
  const { code, lines, seconds } = await run(name, logFile)
  all.push(...lines)
  if (code !== 0) failed.push(name)
  const took = `${fmt(seconds)} s`
  console.log(code === 0 ? `done in ${took}` : `FAILED (exit ${code}) after ${took}, see ${logFile}`)
}
console.log('')
printTable([
  ['benchmark', 'figure', 'value', 'target', 'verdict'],
  ...all.map(l => [l.bench, l.figure, l.value, l.target ?? '', l.verdict ?? ''])
], 2)
if (failed.length > 0) {
  console.log(`\n${failed.length} benchmark(s) failed to run: ${failed.join(', ')}`)
  process.exitCode = 1
}
