/**
 * Benchmark: the fair-delivery guarantee (docs/webhook-delivery.md#fair-delivery) on Postgres, and a claim with a
 * backlog of 100,000 deliveries.
 *
 *   npx tsx bench/fairness.ts
 *
 * Processes: the delivery workers are `node dist/cli.js worker` processes (NODE_ENV production, LOG_LEVEL info,
 * their output discarded), one or two. This process runs the API without a worker (buildApp, WEBHOOK_WORKER=false:
 * the installs, the subscriptions and POST /events through `inject`) and the HTTPS receivers, one server with a
 * self-signed certificate: `/fast/…` answers 200 at once, `/slow/…` answers 200 after 5 s, `/hole/…` accepts the
 * request and never answers (each attempt holds its slot for the whole 15 s time-out).
 *
 * In every guarantee phase, tenant B publishes one event every 200 ms for BENCH_SECONDS to its one subscription
 * to `/fast`, while other tenants load the workers:
 *
 *   slow    tenant A: 20 subscriptions to `/slow`, and a burst of 2,000 events (40,000 deliveries)
 *   dead    three tenants, each with 10 subscriptions to `/hole` and 500 events (15,000 deliveries); B's
 *           subscription is created after that backlog
 *   flaky   B's receiver answers 500 to its 21st request, then 200 again (the retry follows the schedule)
 *   …-2w    the same with two worker processes
 *
 * The figures: for each B event, publish (just before POST /events) to its first attempt's arrival, and to its
 * first 2xx. Targets: first attempt p99 <= 1 s, every event delivered within 5 s; in `flaky` the one event that met
 * the failure is delivered by its retry, 5 s ± 20 % later by the schedule, and is reported apart.
 *
 * Then `burst`: tenant C with 10 subscriptions to `/fast` and 10,000 events, 100,000 deliveries written in one
 * transaction with the service's own storeEvent (no ANALYZE after: statistics as stale as after a real burst);
 * a claim of 128 is timed on that backlog (in a transaction rolled back, five times); then one worker starts and
 * drains it for BENCH_SECONDS while B publishes as above: deliveries a second end to end, and B's latencies.
 *
 * Needs Postgres at 127.0.0.1:5432 with trust auth for user `postgres` (a fresh database `mg_bench_fair_<random>`,
 * dropped at the end) and `openssl`. Environment: BENCH_PHASES (default slow,dead,flaky,slow-2w,dead-2w,flaky-2w,
 * burst), BENCH_SECONDS (default 20), BENCH_ADMIN_URL.
 */
import { rmSync } from 'node:fs'
import { createServer, type Server } from 'node:https'
import type { AddressInfo } from 'node:net'
import { loadavg } from 'node:os'
import { dirname } from 'node:path'
import pg from 'pg'
import { buildApp, type AppInstance } from '../app.js'
import { loadConfig } from '../plugins/infrastructure/config/index.js'
import { storeEvent } from '../plugins/domain/events/service.js'
import { createDeliveryQueueStore, fanOut } from '../plugins/domain/webhooks/delivery-queue-store.js'
import type { Installed } from '../test/support/helper.js'
import { paidInvoice, TOPIC } from './fixtures.js'
import {
  benchDatabase, devSecrets, discard, fmt, list, nodeAndCpus, now, positiveInt, printTable, quantile, queryable,
  runBench, sleep, stamp, summary, tempDir, testHelpers, verdict, waitFor, type Cleanup
} from './lib.js'
import { cleanEnv, ensureBuilt, startProcess, type BenchProcess } from './processes.js'

const PHASES = list('BENCH_PHASES', ['slow', 'dead', 'flaky', 'slow-2w', 'dead-2w', 'flaky-2w', 'burst'])
const SECONDS = positiveInt('BENCH_SECONDS', 20)
const B_EVERY_MS = 200
const SLOW_MS = 5_000
const TARGET_FIRST_P99_MS = 1_000
const TARGET_DELIVERED_MS = 5_000

/** One request as the receiver saw it: its path, event id, attempt, status answered, `now()` when it arrived. */
interface Arrival { path: string, eventId: string, attempt: number, status: number, t: number }

/** The receivers: one HTTPS server whose path says how it answers. `failAt` makes one `/fast` path fail once. */
async function receivers (key: string, cert: string) {
  const arrivals: Arrival[] = []
  const requests = new Map<string, number>()
  let failAt: { path: string, n: number } | undefined
  const server: Server = createServer({ key, cert, keepAliveTimeout: 65_000 }, (req, res) => {
    req.resume()
    req.on('end', () => {
      const path = req.url ?? '/'
      if (path.startsWith('/hole/')) return
      if (path.startsWith('/slow/')) {
        setTimeout(() => res.end('ok'), SLOW_MS).unref()
        return
      }
      const n = (requests.get(path) ?? 0) + 1
      requests.set(path, n)
      const status = failAt && failAt.path === path && failAt.n === n ? 500 : 200
      arrivals.push({
        path,
        eventId: String(req.headers['x-service-event-id'] ?? ''),
        attempt: Number(req.headers['x-service-delivery-attempt'] ?? 0),
        status,
        t: now()
      })
      res.statusCode = status
      res.end(status === 200 ? 'ok' : 'failing once')
    })
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  return {
    base: `https://127.0.0.1:${(server.address() as AddressInfo).port}`,
    arrivals,
    failOnce (path: string, n: number) { failAt = { path, n } },
    close: () => new Promise<void>(resolve => { server.closeAllConnections(); server.close(() => resolve()) })
  }
}
type Receivers = Awaited<ReturnType<typeof receivers>>

/** What B's events met: first attempt and first 2xx after publishing, in ms; the events that failed once apart. */
interface Latencies {
  events: number
  first: number[]
  delivered: number[]
  retried: Array<{ first: number, delivered: number | undefined }>
  missing: number
}

function latencies (published: Map<string, number>, arrivals: Arrival[], path: string): Latencies {
  const first = new Map<string, number>()
  const ok = new Map<string, number>()
  const failed = new Set<string>()
  for (const a of arrivals) {
    if (a.path !== path || !published.has(a.eventId)) continue
    if (!first.has(a.eventId)) first.set(a.eventId, a.t)
    if (a.status === 200 && !ok.has(a.eventId)) ok.set(a.eventId, a.t)
    if (a.status !== 200) failed.add(a.eventId)
  }
  const out: Latencies = { events: published.size, first: [], delivered: [], retried: [], missing: 0 }
  for (const [id, at] of published) {
    const f = first.get(id)
    const d = ok.get(id)
    if (f === undefined) {
      out.missing++
      continue
    }
    if (failed.has(id)) {
      out.retried.push({ first: f - at, delivered: d === undefined ? undefined : d - at })
      continue
    }
    out.first.push(f - at)
    if (d !== undefined) out.delivered.push(d - at)
    else out.missing++
  }
  out.first.sort((x, y) => x - y)
  out.delivered.sort((x, y) => x - y)
  return out
}

interface Bench {
  app: AppInstance
  install: (app: AppInstance, opts?: object) => Promise<Installed>
  recv: Receivers
  databaseUrl: string
  workerEnv: NodeJS.ProcessEnv
  cleanups: Cleanup[]
}

async function subscribe (b: Bench, i: Installed, path: string): Promise<void> {
  const res = await b.app.inject({
    method: 'POST',
    url: `/public/v1/orgs/${i.orgRefId}/entities/${i.entityRefId}/webhooks`,
    headers: { authorization: `Bearer ${i.accessToken}` },
    payload: { topics: [TOPIC], target_url: b.recv.base + path }
  })
  if (res.statusCode !== 201) throw new Error(`subscribe: ${res.statusCode} ${res.body}`)
}

let serial = 0

/** POST /events with `n` events of the tenant, in batches of 100; the ids of the last batch's events. */
async function publish (b: Bench, i: Installed, n: number): Promise<string[]> {
  let ids: string[] = []
  for (let from = 0; from < n; from += 100) {
    const batch = Array.from({ length: Math.min(100, n - from) }, () => ({
      topic: TOPIC, org_ref_id: i.orgRefId, entity_ref_id: i.entityRefId, data: paidInvoice(++serial)
    }))
    const res = await b.app.inject({
      method: 'POST',
      url: '/events',
      headers: { authorization: `Bearer ${b.app.config.eventsToken}` },
      payload: batch.length === 1 ? batch[0]! : batch
    })
    if (res.statusCode !== 202) throw new Error(`POST /events: ${res.statusCode} ${res.body.slice(0, 300)}`)
    const body = res.json() as { id: string } | Array<{ id: string }>
    ids = Array.isArray(body) ? body.map(e => e.id) : [body.id]
  }
  return ids
}

async function startWorkers (b: Bench, count: number): Promise<BenchProcess[]> {
  const workers: BenchProcess[] = []
  for (let w = 0; w < count; w++) {
    workers.push(await startProcess({
      name: `worker ${w + 1}`,
      cleanups: b.cleanups,
      command: process.execPath,
      args: ['dist/cli.js', 'worker'],
      env: b.workerEnv,
      readyText: 'webhook worker started'
    }))
  }
  return workers
}

/** The end of a phase: the workers killed (their hanging attempts with them), everything still pending cancelled. */
async function reset (b: Bench, workers: BenchProcess[]): Promise<void> {
  for (const w of workers) try { process.kill(-w.pid, 'SIGKILL') } catch {}
  await Promise.all(workers.map(w => w.stop()))
  await b.app.db.query(`update webhook_deliveries set status = 'cancelled', locked_by = null, locked_until = null
                         where status = 'pending'`)
}

/** B publishes one event every 200 ms for SECONDS; then waits for all of them (at most `settleMs`). */
async function tenantB (b: Bench, i: Installed, path: string, settleMs: number): Promise<Latencies> {
  const published = new Map<string, number>()
  const end = now() + SECONDS * 1000
  let next = now()
  while (next < end) {
    const at = now()
    const [id] = await publish(b, i, 1)
    published.set(id!, at)
    next += B_EVERY_MS
    await sleep(Math.max(0, next - now()))
  }
  await waitFor(() => {
    const l = latencies(published, b.recv.arrivals, path)
    return l.missing === 0 && l.retried.every(x => x.delivered !== undefined)
  }, settleMs, 20)
  return latencies(published, b.recv.arrivals, path)
}

interface PhaseResult { name: string, workers: number, load: string, b: Latencies, deliveredPerS?: number }

async function guaranteePhase (b: Bench, name: string): Promise<PhaseResult> {
  const kind = name.replace('-2w', '')
  const count = name.endsWith('-2w') ? 2 : 1
  const workers = await startWorkers(b, count)
  const bTenant = await b.install(b.app)
  const path = `/fast/${name}`
  let load = ''
  if (kind === 'slow') {
    const a = await b.install(b.app)
    for (let k = 0; k < 20; k++) await subscribe(b, a, `/slow/${name}/${k}`)
    await subscribe(b, bTenant, path)
    await publish(b, a, 2_000)
    load = 'tenant A: 20 subscriptions answering after 5 s, 2,000 events (40,000 deliveries)'
  } else if (kind === 'dead') {
    for (let t = 0; t < 3; t++) {
      const dead = await b.install(b.app)
      for (let k = 0; k < 10; k++) await subscribe(b, dead, `/hole/${name}/${t}/${k}`)
      await publish(b, dead, 500)
    }
    await sleep(1_000)
    await subscribe(b, bTenant, path)
    load = "three tenants: 10 black-hole subscriptions and 500 events each (15,000 deliveries); B's subscription after"
  } else {
    await subscribe(b, bTenant, path)
    b.recv.failOnce(path, 21)
    load = "B's receiver answers 500 once, after 20 successes"
  }
  const lat = await tenantB(b, bTenant, path, kind === 'flaky' ? 15_000 : 10_000)
  await reset(b, workers)
  return { name, workers: count, load, b: lat }
}

async function burstPhase (b: Bench): Promise<PhaseResult & { claimMs: number[] }> {
  const c = await b.install(b.app)
  for (let k = 0; k < 10; k++) await subscribe(b, c, `/fast/burst/c${k}`)
  const bTenant = await b.install(b.app)
  const path = '/fast/burst/b'
  await subscribe(b, bTenant, path)
  process.stdout.write('burst: writing 10,000 events × 10 subscriptions in one transaction… ')
  const client = new pg.Client({ connectionString: b.databaseUrl })
  await client.connect()
  try {
    const q = queryable(client)
    await client.query('begin')
    for (let k = 0; k < 10_000; k++) {
      const accepted = await storeEvent(q, {
        topic: TOPIC, org_ref_id: c.orgRefId, entity_ref_id: c.entityRefId, data: paidInvoice(++serial)
      }, fanOut)
      if (accepted === 'conflict' || accepted.deliveries !== 10) throw new Error('burst: unexpected fan-out')
    }
    await client.query('commit')
  } finally {
    await client.end()
  }
  process.stdout.write('done\n')
  // The claim on that backlog, as a worker takes it (the lock, then the statement), rolled back each time.
  const store = createDeliveryQueueStore(b.app.db)
  const claimMs: number[] = []
  for (let n = 0; n < 5; n++) {
    const t0 = now()
    await b.app.db.tx(async q => {
      const got = await store.claim(q, 'bench', 128, 60, { perSubscription: 16, perTenant: 32 })
      if (got.length !== 32) throw new Error(`burst: a claim took ${got.length}, expected the tenant cap of 32`)
      claimMs.push(now() - t0)
      throw new RollBack()
    }).catch(err => { if (!(err instanceof RollBack)) throw err })
  }
  const workers = await startWorkers(b, 1)
  const before = b.recv.arrivals.length
  const t0 = now()
  const lat = await tenantB(b, bTenant, path, 10_000)
  const seconds = (now() - t0) / 1000
  const delivered = b.recv.arrivals.slice(before).filter(a => a.path.startsWith('/fast/burst/') && a.status === 200)
  await reset(b, workers)
  return {
    name: 'burst',
    workers: 1,
    load: 'tenant C: 100,000 pending deliveries (10 subscriptions × 10,000 events) as B publishes',
    b: lat,
    deliveredPerS: delivered.length / seconds,
    claimMs
  }
}

class RollBack extends Error {}

async function main (cleanups: Cleanup[]): Promise<void> {
  await ensureBuilt()
  const { install, selfSigned } = await testHelpers()
  const database = await benchDatabase('mg_bench_fair')
  cleanups.push(database.drop)
  const tls = selfSigned()
  cleanups.push(() => rmSync(dirname(tls.caFile), { recursive: true, force: true }))
  const recv = await receivers(tls.key, tls.cert)
  cleanups.push(() => recv.close())
  const dataDir = tempDir('mg-bench-fair-', cleanups)
  const env = {
    DATA_DIR: dataDir,
    DATABASE_URL: database.url,
    WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
    WEBHOOK_CA_FILE: tls.caFile,
    PUBLIC_BASE_URL: 'http://127.0.0.1:3000',
    PUBLIC_RATE_LIMIT: '1000000'
  }
  const app = await buildApp({ ...loadConfig(env), webhookWorker: false, logLevel: 'warn' }, { logStream: discard() })
  cleanups.push(() => app.close())
  await app.ready()
  const workerEnv = cleanEnv({ ...devSecrets(dataDir), ...env, NODE_ENV: 'production', LOG_LEVEL: 'info' })
  const b: Bench = { app, install, recv, databaseUrl: database.url, workerEnv, cleanups }

  console.log('marketplace-gateway bench: fair delivery, one tenant publishing every 200 ms beside loaded ones')
  console.log(`  ${nodeAndCpus()}, Postgres ${new URL(database.url).host}, load average ${loadavg()[0]!.toFixed(2)}; ` +
    `workers: node dist/cli.js worker, defaults (128 slots, 16 per subscription, 32 per tenant); ${SECONDS} s of B ` +
    'per phase')
  const results: PhaseResult[] = []
  let claimMs: number[] = []
  for (const name of PHASES) {
    if (name === 'burst') {
      const r = await burstPhase(b)
      claimMs = r.claimMs
      results.push(r)
    } else {
      process.stdout.write(`${name}… `)
      results.push(await guaranteePhase(b, name))
      process.stdout.write('done\n')
    }
    const r = results.at(-1)!
    console.log(`  ${r.name} (${r.workers} worker${r.workers > 1 ? 's' : ''}): ${r.load}`)
  }

  console.log('')
  const ms = (v: number | undefined) => v === undefined ? '-' : fmt(v)
  printTable([
    ['phase', 'workers', 'B events', 'first attempt p50 / p99 / max ms', 'delivered p99 / max ms',
      'within 5 s', 'failed once: retried after ms', 'deliveries/s'],
    ...results.map(r => [
      r.name, String(r.workers), String(r.b.events),
      `${ms(quantile(r.b.first, 0.5))} / ${ms(quantile(r.b.first, 0.99))} / ${ms(r.b.first.at(-1))}`,
      `${ms(quantile(r.b.delivered, 0.99))} / ${ms(r.b.delivered.at(-1))}`,
      `${r.b.delivered.filter(d => d <= TARGET_DELIVERED_MS).length} of ${r.b.delivered.length + r.b.missing}`,
      r.b.retried.map(x => ms(x.delivered)).join(', ') || '-',
      r.deliveredPerS === undefined ? '' : fmt(r.deliveredPerS)
    ])
  ])
  if (claimMs.length > 0) {
    claimMs.sort((x, y) => x - y)
    console.log('\n  claim of 128 with 100,000 deliveries of one tenant pending: ' +
      `${claimMs.map(m => fmt(m, 1)).join(', ')} ms (lock and statement, in a transaction)`)
  }
  console.log('')
  for (const r of results) {
    const p99 = quantile(r.b.first, 0.99)
    const late = r.b.delivered.filter(d => d > TARGET_DELIVERED_MS).length + r.b.missing
    const met = p99 <= TARGET_FIRST_P99_MS && late === 0
    summary(`fairness ${r.name}: B first attempt p99, B events later than 5 s`, `${fmt(p99)} ms, ${late}`,
      { text: `<= ${fmt(TARGET_FIRST_P99_MS)} ms, 0`, met })
    console.log(`  ${r.name.padEnd(9)} B first attempt p99 ${fmt(p99).padStart(5)} ms, ${late} later than 5 s  ` +
      verdict(met))
    console.log(`markdown row: | ${stamp()} | ${r.name} | ${r.workers} | ${r.b.events} | ` +
      `${ms(quantile(r.b.first, 0.5))} / ${ms(p99)} / ${ms(r.b.first.at(-1))} | ` +
      `${ms(r.b.delivered.at(-1))} | ${late} | ${r.b.retried.map(x => ms(x.delivered)).join(', ') || '-'} | ` +
      `${r.deliveredPerS === undefined ? '' : fmt(r.deliveredPerS)} |`)
  }
}

runBench(main)
