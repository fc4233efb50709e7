/**
 * Benchmark (issue 2): `GET /public/v1/me` of the real app on real Postgres, against a bare Fastify route that
 * answers the same JSON under the same logger settings.
 *
 *   npx tsx bench/me.ts            (or: npm run bench)
 *
 * Needs Postgres at 127.0.0.1:5432 with trust auth for user `postgres`: a fresh database `mg_bench_<random>` is
 * created for the run and dropped at the end. Environment:
 *
 *   BENCH_DATABASE_URL   use this database as it is instead (migrated, never dropped)
 *   BENCH_ADMIN_URL      where to create the fresh database (default postgres://postgres@127.0.0.1:5432/postgres)
 *   BENCH_SECONDS        seconds of measurement per side, in total (default 10)
 *   BENCH_ROUNDS         slices each side's seconds are cut into, alternating the sides (default 5; 1 = one run each)
 *   BENCH_WARMUP         seconds of warm-up per side (default 2)
 *   BENCH_CONNECTIONS    concurrent connections (default 50)
 *   BENCH_INLINE=1       run autocannon on the servers' own thread instead of a worker thread
 *
 * Both servers listen on 127.0.0.1 in this process; autocannon runs in a worker thread, so the load generator has
 * its own event loop (it still competes with the servers and Postgres for the machine's cores; both sides face the
 * same conditions, so the ratio is fair). After a warm-up of each side, the sides are measured in alternating
 * slices (bare, /me, /me, bare, bare, …) so that other work on the machine weighs on both alike; each side's
 * slices are merged (requests / seconds, one latency histogram).
 *
 * Logging on both sides: `loggerOptions('info', discardingStream)` from plugins/request-log.ts and that plugin's
 * one JSON line per request (onResponse, level info), Fastify's own request logging off, the same genReqId.
 * The lines are serialised exactly as in production and then thrown away.
 *
 * Prints req/s (completed requests / seconds), p50 and p99 of each side (autocannon records whole
 * milliseconds), the ratio, and PASS/MISS per target (ratio >= 0.5, p99 of /me <= 25 ms).
 * Exits non-zero only when the run itself fails (setup error, or a side that answered anything but the expected
 * 200 body, which would make its figures meaningless) — never for a missed target.
 */
import { loadavg } from 'node:os'
import Fastify, { LogController, type FastifyInstance } from 'fastify'
import { buildApp, type AppInstance } from '../app.js'
import requestLog, { genReqId, loggerOptions } from '../plugins/request-log.js'
import { install } from '../test/helper.js'
import {
  benchConfig, benchDatabase, discard, fmt, loadSlice, mergeSlices, nodeAndCpus, positiveInt, printTable, runBench,
  stamp, tempDir, verdict, type Cleanup, type RawResult, type SliceFigures
} from './lib.js'

const SECONDS = positiveInt('BENCH_SECONDS', 10)
const WARMUP = positiveInt('BENCH_WARMUP', 2, true)
const CONNECTIONS = positiveInt('BENCH_CONNECTIONS', 50)
const ROUNDS = positiveInt('BENCH_ROUNDS', 5)
const INLINE = process.env.BENCH_INLINE === '1'
const LOG_LEVEL = 'info'
const PATH = '/public/v1/me'
const TARGET_RATIO = 0.5
const TARGET_P99_MS = 25

interface Side {
  name: string
  url: string
  headers: Record<string, string>
  body: string
}

function slice (side: Side, seconds: number): Promise<RawResult> {
  return loadSlice(
    { url: side.url, connections: CONNECTIONS, duration: seconds, headers: side.headers, expectBody: side.body },
    {},
    INLINE
  )
}

/** Merges the slices of one side; throws if any answer was not the expected 200 body. */
function figures (side: Side, results: RawResult[]): SliceFigures {
  return mergeSlices(side.name, side.url, CONNECTIONS, results)
}

/** The baseline: plain Fastify, the same logger, the same per-request log line, a handler returning a constant. */
async function buildBare (body: unknown): Promise<FastifyInstance> {
  const bare = Fastify({
    logger: loggerOptions(LOG_LEVEL, discard()),
    logController: new LogController({ disableRequestLogging: true }),
    requestIdHeader: false,
    genReqId
  })
  await bare.register(requestLog)
  bare.get(PATH, async () => body)
  return bare
}

async function listen (app: FastifyInstance | AppInstance): Promise<string> {
  await app.listen({ host: '127.0.0.1', port: 0 })
  const address = app.server.address()
  if (!address || typeof address === 'string') throw new Error('no TCP address')
  return `http://127.0.0.1:${address.port}${PATH}`
}

async function main (cleanups: Cleanup[]): Promise<void> {
  const database = await benchDatabase('mg_bench')
  cleanups.push(database.drop)
  const databaseUrl = database.url

  const config = benchConfig(tempDir('mg-bench-', cleanups), databaseUrl, LOG_LEVEL)

  const app = await buildApp(config, { logStream: discard() })
  cleanups.push(() => app.close())
  await app.ready()

  const installed = await install(app)
  const headers = { authorization: `Bearer ${installed.accessToken}` }
  const probe = await app.inject({ method: 'GET', url: PATH, headers })
  if (probe.statusCode !== 200) throw new Error(`GET ${PATH}: ${probe.statusCode} ${probe.body}`)
  const identity: unknown = probe.json()

  const bare = await buildBare(identity)
  cleanups.push(() => bare.close())
  const bareSide: Side = { name: 'bare', url: await listen(bare), headers, body: probe.body }
  const meSide: Side = { name: '/me', url: await listen(app), headers, body: probe.body }
  const check = await fetch(bareSide.url, { headers })
  if (await check.text() !== probe.body) throw new Error('the bare route does not answer the same body as /me')

  console.log(`marketplace-gateway bench: GET ${PATH} vs bare Fastify`)
  console.log(`  ${CONNECTIONS} connections, ${SECONDS} s per side in ${ROUNDS} alternating slice(s) ` +
    `(warm-up ${WARMUP} s each), ` +
    `autocannon ${INLINE ? 'on the servers\' thread' : 'in a worker thread'}, LOG_LEVEL ${LOG_LEVEL} on both`)
  console.log(`  ${nodeAndCpus()}, Postgres ${new URL(databaseUrl).host}`)
  console.log(`  body: ${probe.body}`)

  if (WARMUP > 0) {
    process.stdout.write('warming up… ')
    figures(bareSide, [await slice(bareSide, WARMUP)])
    figures(meSide, [await slice(meSide, WARMUP)])
    process.stdout.write('done\n')
  }
  // Other work on the machine moves the figures a lot on 2 cores: the 1-minute load average is shown per round.
  const perSlice = SECONDS / ROUNDS
  const raw = new Map<Side, RawResult[]>([[bareSide, []], [meSide, []]])
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 2 === 0 ? [bareSide, meSide] : [meSide, bareSide]
    const parts: string[] = []
    for (const side of order) {
      const r = await slice(side, perSlice)
      raw.get(side)!.push(r)
      parts.push(`${side.name} ${fmt(r.totalCompletedRequests / r.duration)} req/s`)
    }
    console.log(`  round ${round + 1}/${ROUNDS} (${fmt(perSlice, 1)} s each, ` +
      `load average ${loadavg()[0]!.toFixed(2)}): ${parts.join(', ')}`)
  }
  console.log('')
  const b = figures(bareSide, raw.get(bareSide)!)
  const m = figures(meSide, raw.get(meSide)!)

  const ratio = m.rps / b.rps
  const rows = [
    ['side', 'req/s', 'p50 ms', 'p99 ms', 'requests'],
    ['bare Fastify', fmt(b.rps), fmt(b.p50), fmt(b.p99), fmt(b.total)],
    ['GET /public/v1/me', fmt(m.rps), fmt(m.p50), fmt(m.p99), fmt(m.total)]
  ]
  printTable(rows)
  console.log('')
  console.log(`  ratio (me / bare) ${ratio.toFixed(3)}  target >= ${TARGET_RATIO}  ` +
    `${verdict(ratio >= TARGET_RATIO)}`)
  console.log(`  p99 of /me        ${fmt(m.p99)} ms  target <= ${TARGET_P99_MS} ms  ${verdict(m.p99 <= TARGET_P99_MS)}`)
  console.log('')
  console.log('markdown row: | ' + [stamp(),
    fmt(b.rps), fmt(b.p50), fmt(b.p99), fmt(m.rps), fmt(m.p50), fmt(m.p99), ratio.toFixed(3),
    verdict(ratio >= TARGET_RATIO), verdict(m.p99 <= TARGET_P99_MS)].join(' | ') + ' |')
}

runBench(main)
