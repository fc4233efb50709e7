/**
 * Benchmark: `GET /public/v1/me` of the service as users run it, against a bare Fastify route.
 *
 *   npx tsx bench/me.ts
 *
 * Three kinds of process: the service started with `npm start` (the compiled build, NODE_ENV production, real
 * Postgres, its log lines on standard output, which goes to /dev/null); the baseline, bench/bare-server.ts, a bare
 * Fastify route answering the same JSON with the same logger settings, the same one log line per request and the
 * same LOG_LEVEL; and autocannon, a fresh process per slice. After a warm-up of each side the sides are measured
 * in alternating slices (bare, /me, /me, bare, …) so that other work on the machine weighs on both alike, and each
 * side's slices are merged (completed requests / seconds, one latency histogram). Each server's CPU time per
 * request is read from /proc around its slices. The whole comparison runs once per log level and install count;
 * the ratios and the verdicts are printed last.
 *
 * Needs Postgres at 127.0.0.1:5432 with trust auth for user `postgres`: a fresh database `mg_bench_<random>` is
 * created for the run and dropped at the end. Environment:
 *
 *   BENCH_LOG_LEVELS     LOG_LEVEL of both sides, one comparison each (default warn,info)
 *   BENCH_INSTALLS       installs the tokens are spread over, one comparison each (default 1; e.g. 1,1000,100000):
 *                        each request takes the next token in turn, so past the caches' sizes every request misses
 *   BENCH_SECONDS        seconds of measurement per side, in total (default 10)
 *   BENCH_ROUNDS         slices each side's seconds are cut into, alternating the sides (default 5)
 *   BENCH_WARMUP         seconds of warm-up per side (default 2)
 *   BENCH_CONNECTIONS    concurrent connections (default 50)
 *   BENCH_REDIS_URL      run the service with REDIS_URL (rate-limit counters in Redis, as several instances do)
 *   BENCH_CPU_PROF=dir   V8 CPU profiles of both servers into dir/bare-<level> and dir/service-<level>; the service
 *                        then starts as `node --cpu-prof … dist/cli.js serve` (what npm start runs, profiled)
 *   BENCH_DATABASE_URL   use this database as it is instead (migrated, never dropped)
 *   BENCH_ADMIN_URL      where to create the fresh database (default postgres://postgres@127.0.0.1:5432/postgres)
 *
 * Targets: ratio me / bare >= 0.6 at every log level; p99 of /me <= 25 ms; no answer but the expected
 * 200. Exits non-zero only when the run itself fails (setup, or an unexpected answer, which would make the figures
 * meaningless), never for a missed target.
 */
import { writeFileSync } from 'node:fs'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import { buildApp, type AppInstance } from '../app.js'
import { loadConfig } from '../plugins/infrastructure/config/index.js'
import {
  benchDatabase, devSecrets, discard, fmt, list, loadSlice, mergeSlices, nodeAndCpus, positiveInt, positiveInts,
  printTable, runBench, stamp, summary, tempDir, testHelpers, verdict, type Cleanup, type RawResult, type SliceFigures
} from './lib.js'
import { cleanEnv, ensureBuilt, freePort, startServer, startService, type ServerProcess } from './processes.js'

const LOG_LEVELS = [...list('BENCH_LOG_LEVELS', ['warn', 'info', 'error', 'debug'], ['warn', 'info'])]
const INSTALLS = positiveInts('BENCH_INSTALLS', [1]).sort((a, b) => a - b)
const SECONDS = positiveInt('BENCH_SECONDS', 10)
const WARMUP = positiveInt('BENCH_WARMUP', 2, true)
const CONNECTIONS = positiveInt('BENCH_CONNECTIONS', 50)
const ROUNDS = positiveInt('BENCH_ROUNDS', 5)
const PROFILE = process.env.BENCH_CPU_PROF
const PATH = '/public/v1/me'
const TARGET_RATIO = 0.6
const TARGET_P99_MS = 25
const METRICS_TOKEN = 'bench-metrics-token-of-this-run'

interface Side {
  name: string
  server: ServerProcess
  /** Every answer must contain this (the whole body when there is one install). */
  expect: string
}

interface Measured extends SliceFigures {
  cpuMicrosPerRequest: number
}

interface Row {
  level: string
  installs: number
  bare: Measured
  me: Measured
  missShare: number
  rssMiB: number
}

/** One install through the public OAuth journey, then `count - 1` more of the same app in one statement. */
async function makeInstalls (app: AppInstance, count: number): Promise<{ tokens: string[], me: string }> {
  const first = await (await testHelpers()).install(app)
  const headers = { authorization: `Bearer ${first.accessToken}` }
  const probe = await app.inject({ method: 'GET', url: PATH, headers })
  if (probe.statusCode !== 200) throw new Error(`GET ${PATH}: ${probe.statusCode} ${probe.body}`)
  const tokens = [first.accessToken]
  if (count === 1) return { tokens, me: probe.body }
  const me = probe.json() as { client_id: string, org_ref_id: string, scopes: string[] }
  const rows = await app.db.query<{ install_id: string, entity_ref_id: string }>(
    `insert into installs (install_id, client_id, org_ref_id, entity_ref_id, scopes, installed_by)
     select 'ins_bench' || lpad(g::text, 7, '0'), $1, $2, 'ent_bench' || g, $3, 'bench'
     from generate_series(1, $4::int) g
     returning install_id, entity_ref_id`,
    [me.client_id, me.org_ref_id, me.scopes, count - 1]
  )
  const issuedAt = Date.now()
  for (const row of rows) {
    const subject = { clientId: me.client_id, orgRefId: me.org_ref_id, scopes: me.scopes }
    const installId = row.install_id
    tokens.push(app.accessTokens.issue({ ...subject, installId, entityRefId: row.entity_ref_id }, issuedAt))
  }
  return { tokens, me: probe.body }
}

/** Every request each server answered in this run, warm-ups included (to read a CPU profile per request). */
const served = new Map<string, number>()

/** One token in a fixed header, or a file of tokens taken in turn (a new header for every request). */
type Tokens = { header: string } | { file: string }

async function measure (side: Side, seconds: number, tokens: Tokens): Promise<{ raw: RawResult, cpu: number }> {
  const before = side.server.cpuSeconds()
  const raw = await loadSlice(
    {
      url: side.server.url + PATH,
      connections: CONNECTIONS,
      duration: seconds,
      headers: 'header' in tokens ? { authorization: tokens.header } : {}
    },
    { tokensFile: 'file' in tokens ? tokens.file : undefined, expect: side.expect }
  )
  served.set(side.server.name, (served.get(side.server.name) ?? 0) + raw.totalCompletedRequests)
  return { raw, cpu: side.server.cpuSeconds() - before }
}

/** Warm-up, then alternating slices; each side's slices merged. */
async function compare (bare: Side, me: Side, tokens: Tokens): Promise<{ bare: Measured, me: Measured }> {
  for (const side of WARMUP > 0 ? [bare, me] : []) {
    mergeSlices(side.name, side.server.url, CONNECTIONS, [(await measure(side, WARMUP, tokens)).raw])
  }
  const perSlice = SECONDS / ROUNDS
  const raw = new Map([bare, me].map(side => [side, { results: [] as RawResult[], cpu: 0 }]))
  for (let round = 0; round < ROUNDS; round++) {
    const parts: string[] = []
    for (const side of round % 2 === 0 ? [bare, me] : [me, bare]) {
      const { raw: r, cpu } = await measure(side, perSlice, tokens)
      raw.get(side)!.results.push(r)
      raw.get(side)!.cpu += cpu
      parts.push(`${side.name} ${fmt(r.totalCompletedRequests / r.duration)} req/s`)
    }
    console.log(`    round ${round + 1}/${ROUNDS} (${fmt(perSlice, 1)} s each, load average ` +
      `${loadavg()[0]!.toFixed(2)}): ${parts.join(', ')}`)
  }
  const merged = (side: Side): Measured => {
    const { results, cpu } = raw.get(side)!
    const figures = mergeSlices(side.name, side.server.url, CONNECTIONS, results)
    return { ...figures, cpuMicrosPerRequest: cpu * 1e6 / figures.total }
  }
  return { bare: merged(bare), me: merged(me) }
}

/** The service's access-cache lookups so far, from its /metrics. */
async function cacheLookups (server: ServerProcess): Promise<{ hit: number, miss: number }> {
  const text = await fetch(server.url + '/metrics', { headers: { authorization: `Bearer ${METRICS_TOKEN}` } })
    .then(r => r.text())
  const read = (result: string): number =>
    Number(text.match(new RegExp(`^access_cache_lookups_total\\{result="${result}"\\} (\\S+)$`, 'm'))?.[1] ?? 0)
  return { hit: read('hit'), miss: read('miss') }
}

const profiled = (side: string): string[] => PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${join(PROFILE, side)}`] : []

function startBare (cleanups: Cleanup[], level: string, port: number, me: string): Promise<ServerProcess> {
  return startServer({
    name: 'bare Fastify',
    cleanups,
    command: process.execPath,
    args: [...profiled(`bare-${level}`), '--import', 'tsx', 'bench/bare-server.ts'],
    env: cleanEnv({ PORT: String(port), LOG_LEVEL: level, BARE_PATH: PATH, BARE_BODY: me }),
    port,
    readyPath: '/health'
  })
}

async function main (cleanups: Cleanup[]): Promise<void> {
  await ensureBuilt()
  const database = await benchDatabase('mg_bench')
  cleanups.push(database.drop)
  const dataDir = tempDir('mg-bench-', cleanups)
  const servicePort = await freePort()
  const publicBaseUrl = `http://127.0.0.1:${servicePort}`

  // Setup in this process, on the service's database and keys: the development secrets it generates into dataDir
  // are handed to the service as production secrets.
  const setupEnv = { DATA_DIR: dataDir, DATABASE_URL: database.url, PUBLIC_BASE_URL: publicBaseUrl }
  const setup = await buildApp({ ...loadConfig(setupEnv), webhookWorker: false, logLevel: 'warn' }, {
    logStream: discard()
  })
  await setup.ready()
  process.stdout.write(`making ${fmt(INSTALLS.at(-1)!)} install(s) and their tokens… `)
  const { tokens, me } = await makeInstalls(setup, INSTALLS.at(-1)!).finally(() => setup.close())
  process.stdout.write('done\n')
  const serviceEnv = { ...devSecrets(dataDir), ...setupEnv }
  const clientId = (JSON.parse(me) as { client_id: string }).client_id
  const spread = (count: number): Tokens => {
    if (count === 1) return { header: `Bearer ${tokens[0]}` }
    const file = join(dataDir, `tokens-${count}.txt`)
    writeFileSync(file, tokens.slice(0, count).join('\n'))
    return { file }
  }

  console.log(`marketplace-gateway bench: GET ${PATH} (npm start) vs a bare Fastify route, separate processes`)
  console.log(`  ${CONNECTIONS} connections, ${SECONDS} s per side in ${ROUNDS} alternating slices (warm-up ` +
    `${WARMUP} s each), autocannon in its own process; LOG_LEVEL ${LOG_LEVELS.join(', then ')} on both sides; ` +
    `tokens over ${INSTALLS.map(n => fmt(n)).join(', ')} install(s)` +
    (process.env.BENCH_REDIS_URL ? '; REDIS_URL set' : ''))
  console.log(`  ${nodeAndCpus()}, Postgres ${new URL(database.url).host}`)

  const rows: Row[] = []
  for (const level of LOG_LEVELS) {
    const bareServer = await startBare(cleanups, level, await freePort(), me)
    const service = await startService({
      cleanups,
      env: {
        ...serviceEnv,
        // The schema's maximum: one install sends far more than the default 600 a minute here.
        PUBLIC_RATE_LIMIT: '1000000',
        METRICS_TOKEN,
        ...(process.env.BENCH_REDIS_URL ? { REDIS_URL: process.env.BENCH_REDIS_URL } : {})
      },
      port: servicePort,
      logLevel: level,
      nodeArgs: PROFILE ? profiled(`service-${level}`) : undefined
    })
    const answer = await fetch(service.url + PATH, { headers: { authorization: `Bearer ${tokens[0]}` } })
    if (await answer.text() !== me) throw new Error(`the service does not answer ${PATH} as the setup saw it`)
    const bareAnswer = await fetch(bareServer.url + PATH).then(r => r.text())
    if (bareAnswer !== me) throw new Error('the bare route answers another body')

    for (const installs of INSTALLS) {
      console.log(`  LOG_LEVEL ${level}, ${fmt(installs)} install(s):`)
      const expect = installs === 1 ? me : `"client_id":"${clientId}"`
      const before = await cacheLookups(service)
      const result = await compare(
        { name: 'bare', server: bareServer, expect }, { name: '/me', server: service, expect }, spread(installs)
      )
      const after = await cacheLookups(service)
      const lookups = after.hit + after.miss - before.hit - before.miss
      const missShare = lookups === 0 ? NaN : (after.miss - before.miss) / lookups
      rows.push({ level, installs, ...result, missShare, rssMiB: service.rssKiB() / 1024 })
    }
    await service.stop()
    await bareServer.stop()
    if (PROFILE) {
      console.log(`  profiles in ${PROFILE}: the service answered ${fmt(served.get(service.name) ?? 0)} requests, ` +
        `the bare route ${fmt(served.get(bareServer.name) ?? 0)}`)
      served.clear()
    }
  }
  report(rows)
}

function report (rows: Row[]): void {
  console.log('')
  const table = [['LOG_LEVEL', 'installs', 'side', 'req/s', 'p50 ms', 'p99 ms', 'requests', 'server CPU µs/req']]
  for (const r of rows) {
    for (const [name, m] of [['bare Fastify', r.bare], ['GET /public/v1/me', r.me]] as const) {
      table.push([
        r.level, fmt(r.installs), name, fmt(m.rps), fmt(m.p50), fmt(m.p99), fmt(m.total), fmt(m.cpuMicrosPerRequest)
      ])
    }
  }
  printTable(table)
  console.log('')
  if (rows.some(r => r.installs > 1)) {
    printTable([['LOG_LEVEL', 'installs', 'access-cache misses', 'service RSS MiB'], ...rows.map(r => [
      r.level, fmt(r.installs), `${fmt(r.missShare * 100, 1)} %`, fmt(r.rssMiB)
    ])])
    console.log('')
  }
  for (const r of rows) {
    console.log(`markdown row: | ${stamp()} | ${r.level} | ${fmt(r.installs)} | ${fmt(r.bare.rps)} | ` +
      `${fmt(r.me.rps)} | ${fmt(r.me.p99)} | ${fmt(r.bare.cpuMicrosPerRequest)} | ${fmt(r.me.cpuMicrosPerRequest)} | ` +
      `${(r.me.rps / r.bare.rps).toFixed(3)} |`)
  }
  console.log('')
  for (const r of rows) {
    const ratio = r.me.rps / r.bare.rps
    const label = `/me ${r.level}${r.installs > 1 ? `, ${fmt(r.installs)} installs` : ''}`
    const met = ratio >= TARGET_RATIO
    summary(`${label}: ratio to bare Fastify`, ratio.toFixed(3), { text: `>= ${TARGET_RATIO}`, met })
    summary(`${label}: p99`, `${fmt(r.me.p99)} ms`, { text: `<= ${TARGET_P99_MS} ms`, met: r.me.p99 <= TARGET_P99_MS })
  }
  for (const r of rows) {
    const ratio = r.me.rps / r.bare.rps
    console.log(`  LOG_LEVEL ${r.level.padEnd(5)} ${fmt(r.installs).padStart(7)} install(s): ratio (me / bare) ` +
      `${ratio.toFixed(3)} (target >= ${TARGET_RATIO}) ${verdict(ratio >= TARGET_RATIO)}; p99 of /me ` +
      `${fmt(r.me.p99)} ms (target <= ${TARGET_P99_MS} ms) ${verdict(r.me.p99 <= TARGET_P99_MS)}`)
  }
}

runBench(main)
