/**
 * Benchmark: webhook delivery throughput and latency of the real app (buildApp, its delivery worker in
 * this process) on real Postgres, against a local HTTPS receiver that answers 200. The phases, the diagnostics and
 * the figures are described in BENCHMARKS.md ("Webhook delivery throughput and latency").
 *
 *   npx tsx bench/webhooks.ts
 *
 * Needs Postgres at 127.0.0.1:5432 with trust auth for user `postgres` (a fresh database `mg_bench_wh_<random>` is
 * created for the run and dropped at the end) and `openssl`. Environment:
 *
 *   BENCH_DATABASE_URL          use this database as it is instead (migrated, never dropped)
 *   BENCH_ADMIN_URL             where to create the fresh database (default postgres://postgres@127.0.0.1:5432/postgres)
 *   BENCH_EVENTS                events of workload A, one subscription (default 20000)
 *   BENCH_FANOUT_SUBSCRIPTIONS  subscriptions of workload B, one tenant, 50 per install (default 200)
 *   BENCH_FANOUT_EVENTS         events of workload B, each fans out to every subscription (default 100)
 *   BENCH_PUBLISH_CONCURRENCY   concurrent POST /events injections while publishing (default 32)
 *   BENCH_LATENCY_EVENTS        events of the idle-queue latency test, one at a time (default 200)
 *   BENCH_LATENCY_GAP_MS        pause after each latency event arrived, before the next one (default 20)
 *   BENCH_CEILING_REQUESTS      POSTs of the no-database ceiling (default 20000)
 *   BENCH_WEBHOOK_CONCURRENCY   the worker's WEBHOOK_CONCURRENCY (default: the service's default, 64)
 *   BENCH_DRAIN_TIMEOUT         seconds to wait for all of a workload's deliveries (default 120)
 *   BENCH_LOG_LEVEL             the app's LOG_LEVEL (default info: one request line per POST /events)
 *   BENCH_INLINE=1              run the receiver on the app's own thread instead of a worker thread
 *   BENCH_PHASES                comma-separated, default all: latency,a,a-drain,b,b-drain,ceiling
 *
 * Fair delivery beside slow, dead and failing receivers has its own benchmark: bench/fairness.ts.
 *
 * A (subscription, event) pair that never arrives is an error (exit 1); missed targets are not.
 */
import { readFileSync, rmSync } from 'node:fs'
import { createServer } from 'node:https'
import type { AddressInfo } from 'node:net'
import { cpus, loadavg } from 'node:os'
import { dirname } from 'node:path'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { Writable } from 'node:stream'
import { rootCertificates } from 'node:tls'
import { Worker } from 'node:worker_threads'
import type { Static } from '@sinclair/typebox'
import pg from 'pg'
import { Agent, request } from 'undici'
import { buildApp, type AppInstance } from '../app.js'
import { storeEvent } from '../plugins/domain/events/service.js'
import { fanOut } from '../plugins/domain/webhooks/delivery-queue-store.js'
import type { WorkerStatus } from '../plugins/domain/webhooks/worker.js'
import type { EventBody } from '../schemas/events.js'
import type { Installed } from '../test/support/helper.js'
import { selfSigned } from '../test/support/receiver.js'
import { paidInvoice } from './fixtures.js'
import {
  benchConfig, benchDatabase, fmt, list, machineBusy, machineCpu, nodeAndCpus, now, positiveInt, postgresCpuSeconds,
  printTable, quantile, queryable, runBench, sleep, stamp, summary, tempDir, verdict, waitFor, type Cleanup
} from './lib.js'

const EVENTS = positiveInt('BENCH_EVENTS', 20_000)
const FANOUT_SUBSCRIPTIONS = positiveInt('BENCH_FANOUT_SUBSCRIPTIONS', 200)
const FANOUT_EVENTS = positiveInt('BENCH_FANOUT_EVENTS', 100)
const PUBLISH_CONCURRENCY = positiveInt('BENCH_PUBLISH_CONCURRENCY', 32)
const LATENCY_EVENTS = positiveInt('BENCH_LATENCY_EVENTS', 200)
const LATENCY_GAP_MS = positiveInt('BENCH_LATENCY_GAP_MS', 20, true)
const CEILING_REQUESTS = positiveInt('BENCH_CEILING_REQUESTS', 20_000)
const DRAIN_TIMEOUT_S = positiveInt('BENCH_DRAIN_TIMEOUT', 120)
const WEBHOOK_CONCURRENCY = process.env.BENCH_WEBHOOK_CONCURRENCY
const LOG_LEVEL = process.env.BENCH_LOG_LEVEL || 'info'
const INLINE = process.env.BENCH_INLINE === '1'
const PHASES = list('BENCH_PHASES', ['latency', 'a', 'a-drain', 'b', 'b-drain', 'ceiling'])
const PER_INSTALL = 50
const LATENCY_WARMUP = 10
const TOPIC = 'invoice.paid'
const LOOP_RESOLUTION_MS = 5
const TARGET_RATE = 1_000
const TARGET_P50_MS = 50

/** Drops every log line after serialisation, but keeps warnings and errors (level >= 40) to show at the end. */
class LogSink extends Writable {
  readonly problems: string[] = []
  lines = 0
  override _write (chunk: Buffer | string, _encoding: BufferEncoding, cb: () => void): void {
    this.lines++
    // pino lines begin {"level":NN: only the head is looked at, so that keeping the few problems costs nothing.
    const head = typeof chunk === 'string' ? chunk.slice(0, 12) : chunk.toString('utf8', 0, 12)
    if (/^\{"level":[4-6]0/.test(head)) this.problems.push(chunk.toString().trim())
    cb()
  }
}

// ---------------------------------------------------------------------------------------------------------------
// The receiver
// ---------------------------------------------------------------------------------------------------------------

/** One request as the receiver saw it. `t` is `now()` when its body had arrived. */
interface Arrival { path: string, eventId: string, attempt: number, size: number, t: number }

/**
 * Runs in a worker thread (CommonJS, evaluated): answers 200 "ok" to everything, and posts what arrived in batches
 * (everything that arrived in one turn of its event loop) as flat arrays [path, eventId, attempt, size, t, …].
 */
const RECEIVER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads')
const { createServer } = require('node:https')
let batch = []
let scheduled = false
const flush = () => { scheduled = false; const b = batch; batch = []; parentPort.postMessage({ arrivals: b }) }
const server = createServer({ key: workerData.key, cert: workerData.cert, keepAliveTimeout: 65000 }, (req, res) => {
  let size = 0
  req.on('data', c => { size += c.length })
  req.on('end', () => {
    const t = Number(process.hrtime.bigint()) / 1e6
    const attempt = Number(req.headers['x-service-delivery-attempt'] || 0)
    batch.push(req.url || '/', req.headers['x-service-event-id'] || '', attempt, size, t)
    if (!scheduled) { scheduled = true; setImmediate(flush) }
    res.end('ok')
  })
})
server.listen(0, '127.0.0.1', () => parentPort.postMessage({ port: server.address().port }))
parentPort.on('message', m => {
  if (m === 'close') { server.closeAllConnections(); server.close(() => parentPort.postMessage({ closed: true })) }
})`

interface Receiver {
  port: number
  close(): Promise<void>
}

async function startReceiver (key: string, cert: string, onArrivals: (a: Arrival[]) => void): Promise<Receiver> {
  if (INLINE) {
    const server = createServer({ key, cert, keepAliveTimeout: 65_000 }, (req, res) => {
      let size = 0
      req.on('data', (c: Buffer) => { size += c.length })
      req.on('end', () => {
        const eventId = req.headers['x-service-event-id']
        const attempt = Number(req.headers['x-service-delivery-attempt'] ?? 0)
        const path = req.url ?? '/'
        onArrivals([{ path, eventId: typeof eventId === 'string' ? eventId : '', attempt, size, t: now() }])
        res.end('ok')
      })
    })
    await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
    return {
      port: (server.address() as AddressInfo).port,
      close: () => new Promise<void>(resolve => { server.closeAllConnections(); server.close(() => resolve()) })
    }
  }
  const worker = new Worker(RECEIVER_SOURCE, { eval: true, workerData: { key, cert } })
  let closed: (() => void) | undefined
  const port = await new Promise<number>((resolve, reject) => {
    worker.on('message', (m: { port?: number, arrivals?: Array<string | number>, closed?: boolean }) => {
      if (m.port !== undefined) resolve(m.port)
      if (m.closed) closed?.()
      if (m.arrivals) {
        const a = m.arrivals
        const out: Arrival[] = []
        for (let i = 0; i < a.length; i += 5) {
          out.push({
            path: a[i] as string,
            eventId: a[i + 1] as string,
            attempt: a[i + 2] as number,
            size: a[i + 3] as number,
            t: a[i + 4] as number
          })
        }
        onArrivals(out)
      }
    })
    worker.once('error', reject)
  })
  return {
    port,
    async close () {
      await new Promise<void>(resolve => {
        closed = resolve
        worker.postMessage('close')
        setTimeout(resolve, 2_000).unref()
      })
      await worker.terminate()
    }
  }
}

/** What one phase expects and what arrived for it, keyed by path (one per subscription) and event id. */
class Tally {
  readonly counts = new Map<string, number>()
  readonly firstAt = new Map<string, number>()
  /** First arrival times of the unique deliveries, in arrival order. */
  readonly times: number[] = []
  unique = 0
  duplicates = 0
  retries = 0
  lastAt = 0
  bodySize = 0

  add (a: Arrival): void {
    const key = `${a.path} ${a.eventId}`
    const n = (this.counts.get(key) ?? 0) + 1
    this.counts.set(key, n)
    if (a.attempt > 1) this.retries++
    if (n > 1) {
      this.duplicates++
      return
    }
    this.unique++
    this.firstAt.set(key, a.t)
    this.times.push(a.t)
    this.lastAt = Math.max(this.lastAt, a.t)
    this.bodySize = a.size
  }

  /** Pairs (path, event id) that never arrived. */
  missing (paths: string[], eventIds: string[]): number {
    let n = 0
    for (const p of paths) for (const id of eventIds) if (!this.counts.has(`${p} ${id}`)) n++
    return n
  }
}

// ---------------------------------------------------------------------------------------------------------------
// The app side
// ---------------------------------------------------------------------------------------------------------------

const hooksUrl = (i: Installed) => `/public/v1/orgs/${i.orgRefId}/entities/${i.entityRefId}/webhooks`

async function subscribe (app: AppInstance, i: Installed, targetUrl: string): Promise<void> {
  const res = await app.inject({
    method: 'POST',
    url: hooksUrl(i),
    headers: { authorization: `Bearer ${i.accessToken}`, 'content-type': 'application/json' },
    payload: JSON.stringify({ topics: [TOPIC], target_url: targetUrl })
  })
  if (res.statusCode !== 201) throw new Error(`subscribe: ${res.statusCode} ${res.body}`)
}

let serial = 0

/** The n-th event of the run, as the accounting system would send it to POST /events. */
function eventFor (tenant: Installed, n: number): Static<typeof EventBody> {
  return {
    topic: TOPIC,
    org_ref_id: tenant.orgRefId,
    entity_ref_id: tenant.entityRefId,
    data: paidInvoice(String(n).padStart(8, '0'))
  }
}

/** POST /events through the whole HTTP pipeline (inject); throws unless 202 with the expected fan-out. */
async function publish (app: AppInstance, tenant: Installed, fanout: number): Promise<string> {
  const res = await app.inject({
    method: 'POST',
    url: '/events',
    headers: { authorization: `Bearer ${app.config.eventsToken}`, 'content-type': 'application/json' },
    payload: JSON.stringify(eventFor(tenant, ++serial))
  })
  if (res.statusCode !== 202) throw new Error(`POST /events: ${res.statusCode} ${res.body}`)
  const body = res.json() as { id: string, deliveries: number }
  if (body.deliveries !== fanout) {
    throw new Error(`POST /events fanned out to ${body.deliveries} subscriptions, expected ${fanout}`)
  }
  return body.id
}

/**
 * Writes a whole backlog with the service's own `storeEvent` (what POST /events runs: the event, its fan-out and
 * the wake-up notification), all in one transaction of a separate client, so that it becomes due at once, at
 * COMMIT. Returns the event ids, the seconds the writing took and the time just before COMMIT was sent.
 */
async function insertBacklog (databaseUrl: string, tenant: Installed, fanout: number, events: number) {
  const client = new pg.Client({ connectionString: databaseUrl })
  await client.connect()
  try {
    const started = now()
    const q = queryable(client)
    const ids: string[] = []
    await client.query('begin')
    for (let k = 0; k < events; k++) {
      const accepted = await storeEvent(q, eventFor(tenant, ++serial), fanOut)
      if (accepted === 'conflict') throw new Error('backlog: an event id was reused')
      const { id, deliveries } = accepted
      if (deliveries !== fanout) {
        throw new Error(`backlog: ${id} fanned out to ${deliveries} subscriptions, expected ${fanout}`)
      }
      ids.push(id)
    }
    const committing = now()
    await client.query('commit')
    return { ids, committing, writeSeconds: (committing - started) / 1000 }
  } catch (err) {
    await client.query('rollback').catch(() => {})
    throw err
  } finally {
    await client.end()
  }
}

/** The worker's own status; the benchmark needs a worker in this process. */
function workerStatus (app: AppInstance): WorkerStatus {
  const status = app.webhooks.workerStatus()
  if (!status) throw new Error('the app has no delivery worker (WEBHOOK_WORKER)')
  return status
}

/** What the worker counts of its own work: attempts, and its cycles (record what finished, then claim; ms). */
const WORKER_COUNTS = ['attempted', 'cycles', 'cycleMs', 'claimed', 'recorded'] as const
type WorkerWork = Record<typeof WORKER_COUNTS[number], number>
const workerWork = (from: WorkerStatus, to: WorkerStatus): WorkerWork =>
  Object.fromEntries(WORKER_COUNTS.map(k => [k, to[k] - from[k]])) as WorkerWork

/** Samples the worker's attempts in flight, and the main thread's event-loop delay, while a workload runs. */
function monitor (app: AppInstance) {
  const samples: number[] = []
  const timer = setInterval(() => samples.push(workerStatus(app).inFlight), 20)
  const loop = monitorEventLoopDelay({ resolution: LOOP_RESOLUTION_MS })
  loop.enable()
  const cpu0 = process.cpuUsage()
  const machine0 = machineCpu()
  const pg0 = postgresCpuSeconds()
  const t0 = now()
  return () => {
    clearInterval(timer)
    loop.disable()
    const wall = now() - t0
    const cpu = process.cpuUsage(cpu0)
    const sorted = [...samples].sort((a, b) => a - b)
    return {
      inFlightAvg: samples.reduce((s, x) => s + x, 0) / Math.max(1, samples.length),
      inFlightP50: quantile(sorted, 0.5),
      // The histogram holds the time between timer ticks: the delay is what exceeds the resolution.
      loopP50: Math.max(0, loop.percentile(50) / 1e6 - LOOP_RESOLUTION_MS),
      loopP99: Math.max(0, loop.percentile(99) / 1e6 - LOOP_RESOLUTION_MS),
      loopMax: Math.max(0, loop.max / 1e6 - LOOP_RESOLUTION_MS),
      wallMs: wall,
      processCpu: (cpu.user + cpu.system) / 1000 / wall,
      postgresCpu: (postgresCpuSeconds() - pg0) * 1000 / wall,
      machineBusy: machineBusy(machine0, machineCpu())
    }
  }
}

interface WorkloadResult {
  name: string
  /** A backlog committed at once, drained by the worker (else: published while the worker delivers). */
  backlog: boolean
  subscriptions: number
  events: number
  deliveries: number
  /** Backlog: seconds the backlog took to write, before the COMMIT. */
  writeSeconds: number
  publishSeconds: number
  publishedPerS: number
  deliverySeconds: number
  deliveredPerS: number
  /** Deliveries per whole second from the first publish (the last, partial second left out). */
  perSecond: number[]
  recordedSeconds: number
  /** Deliveries still pending 30 s after the last arrival (results not recorded): should be 0. */
  pendingLeft: number
  duplicates: number
  retries: number
  missing: number
  stats: ReturnType<ReturnType<typeof monitor>>
  /** The worker's work from the start until every result was recorded. */
  worker: WorkerWork
}

interface WorkloadSpec {
  name: string
  tenant: Installed
  paths: string[]
  events: number
  /** Write the events as one backlog through this database URL (else publish them while the worker delivers). */
  backlogFrom?: string
}

async function workload (app: AppInstance, setPhase: (t: Tally) => void, pendingCount: () => Promise<number>,
  { name, tenant, paths, events, backlogFrom }: WorkloadSpec): Promise<WorkloadResult> {
  const tally = new Tally()
  setPhase(tally)
  const expected = paths.length * events
  let ids: string[] = []
  let t0: number
  let tPublished: number
  let writeSeconds = 0
  let stop: ReturnType<typeof monitor>
  let worker0: WorkerStatus
  if (backlogFrom) {
    const backlog = await insertBacklog(backlogFrom, tenant, paths.length, events)
    // Only the drain is timed: from COMMIT (the backlog becomes visible) to the last delivery.
    stop = monitor(app)
    worker0 = workerStatus(app)
    ids = backlog.ids
    t0 = backlog.committing
    tPublished = t0
    writeSeconds = backlog.writeSeconds
  } else {
    stop = monitor(app)
    worker0 = workerStatus(app)
    t0 = now()
    let next = 0
    await Promise.all(Array.from({ length: Math.min(PUBLISH_CONCURRENCY, events) }, async () => {
      while (next < events) {
        next++
        ids.push(await publish(app, tenant, paths.length))
      }
    }))
    tPublished = now()
  }
  await waitFor(() => tally.unique >= expected, DRAIN_TIMEOUT_S * 1000)
  const stats = stop()
  if (backlogFrom && tally.times.some(t => t < t0)) {
    throw new Error('backlog: deliveries arrived before the commit was sent')
  }
  // Durable completion: the worker has recorded every attempt (nothing pending any more).
  const recorded = await waitFor(async () => await pendingCount() === 0, 30_000, 50)
  const tRecorded = now()
  const worker = workerWork(worker0, workerStatus(app))
  const pendingLeft = recorded ? 0 : await pendingCount()
  const missing = tally.missing(paths, ids)
  const perSecond: number[] = []
  for (const t of tally.times) {
    const s = Math.floor((t - t0) / 1000)
    perSecond[s] = (perSecond[s] ?? 0) + 1
  }
  const full = Array.from({ length: Math.max(1, Math.floor((tally.lastAt - t0) / 1000)) }, (_, i) => perSecond[i] ?? 0)
  const deliverySeconds = (tally.lastAt - t0) / 1000
  return {
    name,
    subscriptions: paths.length,
    events,
    deliveries: tally.unique,
    writeSeconds,
    publishSeconds: (tPublished - t0) / 1000,
    publishedPerS: backlogFrom ? NaN : events / ((tPublished - t0) / 1000),
    backlog: Boolean(backlogFrom),
    deliverySeconds,
    deliveredPerS: tally.unique / deliverySeconds,
    perSecond: full,
    recordedSeconds: (tRecorded - t0) / 1000,
    pendingLeft,
    duplicates: tally.duplicates,
    retries: tally.retries,
    missing,
    stats,
    worker
  }
}

/** Event to first attempt on an idle queue: one event at a time, each after the previous one arrived. */
async function latency (app: AppInstance, setPhase: (t: Tally) => void, tenant: Installed, path: string) {
  const tally = new Tally()
  setPhase(tally)
  const samples: number[] = []
  const acks: number[] = []
  for (let n = 0; n < LATENCY_WARMUP + LATENCY_EVENTS; n++) {
    const t0 = now()
    const id = await publish(app, tenant, 1)
    const ack = now() - t0
    const key = `${path} ${id}`
    if (!await waitFor(() => tally.firstAt.has(key), 10_000, 1)) {
      throw new Error(`latency event ${id} did not arrive within 10 s`)
    }
    if (n >= LATENCY_WARMUP) {
      samples.push(tally.firstAt.get(key)! - t0)
      acks.push(ack)
    }
    // Idle queue: the attempt is over (nothing in flight); the pause lets its result flush and the claim after it end.
    await waitFor(() => workerStatus(app).inFlight === 0, 5_000, 1)
    if (LATENCY_GAP_MS > 0) await sleep(LATENCY_GAP_MS)
  }
  const sorted = [...samples].sort((a, b) => a - b)
  const sortedAcks = [...acks].sort((a, b) => a - b)
  return {
    n: samples.length,
    p50: quantile(sorted, 0.5),
    p90: quantile(sorted, 0.9),
    p99: quantile(sorted, 0.99),
    max: sorted[sorted.length - 1]!,
    min: sorted[0]!,
    over500: samples.filter(x => x > 500).length,
    ackP50: quantile(sortedAcks, 0.5),
    ackP99: quantile(sortedAcks, 0.99),
    duplicates: tally.duplicates
  }
}

/**
 * The same receiver without the database: undici POSTs, as many connections and as many in flight as the worker,
 * the same `ca` option as the worker's Agent (plugins/domain/webhooks/sender.ts), the same body size and header names.
 * Measured in slices spread over the run; each slice first sends untimed warm-up POSTs (at least 1,000 and 4 per
 * connection), so that every connection is open and the code is warm.
 */
function ceiling (port: number, caFile: string, concurrency: number, bodySize: number) {
  const ca = [...rootCertificates, readFileSync(caFile, 'utf8')]
  const agent = new Agent({ connect: { ca }, connections: concurrency })
  const body = JSON.stringify({ pad: 'x'.repeat(Math.max(0, bodySize - 10)) })
  const headers = {
    'content-type': 'application/json',
    'user-agent': 'marketplace-webhooks/bench',
    'x-service-signature': 'a'.repeat(64),
    'x-service-topic': TOPIC,
    'x-service-event-id': 'evt_ceiling',
    'x-service-delivery-attempt': '1',
    'webhook-id': 'evt_ceiling',
    'webhook-timestamp': String(Math.floor(Date.now() / 1000)),
    'webhook-signature': `v1,${'A'.repeat(44)}`
  }
  const url = `https://127.0.0.1:${port}/ceiling`
  let failures = 0
  const run = async (count: number) => {
    let next = 0
    await Promise.all(Array.from({ length: concurrency }, async () => {
      while (next < count) {
        next++
        try {
          const res = await request(url, { method: 'POST', dispatcher: agent, headers, body })
          await res.body.text()
          if (res.statusCode !== 200) failures++
        } catch {
          failures++
        }
      }
    }))
  }
  const slices: Array<{ requests: number, seconds: number }> = []
  return {
    bodySize: Buffer.byteLength(body),
    slices,
    async slice (requests: number) {
      await run(Math.max(concurrency * 4, 1_000))
      const t0 = now()
      await run(requests)
      const seconds = (now() - t0) / 1000
      if (failures > 0) throw new Error(`ceiling: ${failures} POSTs failed or answered other than 200`)
      slices.push({ requests, seconds })
      return { requests, seconds, rps: requests / seconds }
    },
    /** All slices together: requests / seconds. */
    total () {
      const requests = slices.reduce((n, s) => n + s.requests, 0)
      const seconds = slices.reduce((n, s) => n + s.seconds, 0)
      return { requests, seconds, rps: requests / seconds }
    },
    close: () => agent.close()
  }
}

function printWorkload (r: WorkloadResult, concurrency: number): void {
  const s = r.stats
  const recorded = `all recorded after ${fmt(r.recordedSeconds, 2)} s`
  if (r.backlog) {
    console.log(`  ${fmt(r.events)} events and ${fmt(r.events * r.subscriptions)} deliveries written with ` +
      `storeEvent in ${fmt(r.writeSeconds, 2)} s, one transaction; delivered in ${fmt(r.deliverySeconds, 2)} s ` +
      `from the commit: ${fmt(r.deliveredPerS)} deliveries/s (${recorded})`)
  } else {
    console.log(`  published ${fmt(r.events)} events in ${fmt(r.publishSeconds, 2)} s ` +
      `(${fmt(r.publishedPerS)} events/s); delivered ${fmt(r.deliveries)} in ${fmt(r.deliverySeconds, 2)} s ` +
      `from the first publish: ${fmt(r.deliveredPerS)} deliveries/s (${recorded})`)
  }
  console.log(`  deliveries per second: ${r.perSecond.map(x => fmt(x)).join(', ')}`)
  if (r.pendingLeft > 0) {
    console.log(`  WARNING: ${fmt(r.pendingLeft)} deliveries still pending 30 s after the last arrival ` +
      '(results not recorded)')
  }
  console.log(`  missing ${r.missing}, duplicates ${r.duplicates}, retries ${r.retries}; worker in flight avg ` +
    `${fmt(s.inFlightAvg, 1)} (p50 ${fmt(s.inFlightP50)}) of ${concurrency}; event-loop delay ` +
    `p50 ${fmt(s.loopP50, 1)} ms, p99 ${fmt(s.loopP99, 1)} ms, max ${fmt(s.loopMax)} ms`)
  const cores = cpus().length
  const others = Math.max(0, s.machineBusy * cores - s.processCpu - s.postgresCpu)
  const perDelivery = (share: number): string => fmt(share * s.wallMs / r.deliveries * 1000)
  console.log(`  CPU: this process ${fmt(s.processCpu * 100)}% of one core, Postgres ${fmt(s.postgresCpu * 100)}%, ` +
    `machine ${fmt(s.machineBusy * 100)}% busy (all ${cores} cores, so about ${fmt(others * 100)}% of one core for ` +
    `other processes); per delivery: this process ${perDelivery(s.processCpu)} µs, ` +
    `Postgres ${perDelivery(s.postgresCpu)} µs`)
  const w = r.worker
  const per = (n: number, of: number): string => fmt(n / Math.max(1, of), 1)
  console.log(`  worker (its own counts, until all was recorded): ${fmt(w.attempted)} attempts; ` +
    `${fmt(w.cycles)} cycles (one transaction: record what finished, then claim) of ${per(w.recorded, w.cycles)} ` +
    `results and ${per(w.claimed, w.cycles)} claims on average, ${per(w.cycleMs, w.cycles)} ms each, COMMIT included`)
}

// ---------------------------------------------------------------------------------------------------------------

async function main (cleanups: Cleanup[]): Promise<void> {
  // test/support/helper.ts makes (and drops at beforeExit, which process.exit skips) a database of its own when
  // DATABASE_URL is set; this benchmark takes its database from BENCH_DATABASE_URL only, so it is imported without.
  delete process.env.DATABASE_URL
  const { install } = await import('../test/support/helper.js')
  let failed = false
  const database = await benchDatabase('mg_bench_wh')
  cleanups.push(database.drop)
  const databaseUrl = database.url

  // The receiver: arrivals go to whichever phase is current.
  const { key, cert, caFile } = selfSigned()
  cleanups.push(() => rmSync(dirname(caFile), { recursive: true, force: true }))
  let phase = new Tally()
  const setPhase = (t: Tally) => { phase = t }
  const receiver = await startReceiver(key, cert, arrivals => {
    for (const a of arrivals) if (!a.path.startsWith('/ceiling')) phase.add(a)
  })
  cleanups.push(() => receiver.close())
  const base = `https://127.0.0.1:${receiver.port}`

  const config = benchConfig(tempDir('mg-bench-wh-', cleanups), databaseUrl, LOG_LEVEL, {
    WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
    WEBHOOK_CA_FILE: caFile,
    ...(WEBHOOK_CONCURRENCY ? { WEBHOOK_CONCURRENCY } : {})
  })
  const logs = new LogSink()
  const app = await buildApp(config, { logStream: logs })
  cleanups.push(() => app.close())
  await app.ready()
  workerStatus(app)

  // The benchmark's own connection, for measuring only: is anything still pending?
  const meter = new pg.Client({ connectionString: databaseUrl })
  await meter.connect()
  cleanups.push(() => meter.end())
  const pendingCount = async (): Promise<number> => {
    const { rows } = await meter.query<{ n: number }>(
      "select count(*)::int as n from webhook_deliveries where status = 'pending'")
    return rows[0]!.n
  }

  // Tenants: one install with one subscription (latency, workload A); one org/entity with installs of 50.
  const single = await install(app)
  const singlePath = '/hooks/single'
  await subscribe(app, single, base + singlePath)
  const fanoutPaths: string[] = []
  let tenant: Installed | undefined
  for (let k = 0; k < FANOUT_SUBSCRIPTIONS; k++) {
    if (k % PER_INSTALL === 0) {
      tenant = await install(app, tenant ? { orgRefId: tenant.orgRefId, entityRefId: tenant.entityRefId } : {})
    }
    const path = `/hooks/fanout/${k}`
    await subscribe(app, tenant!, base + path)
    fanoutPaths.push(path)
  }
  const fanoutTenant = tenant!
  const installs = Math.ceil(FANOUT_SUBSCRIPTIONS / PER_INSTALL)

  // One event end to end before anything is timed: the path works, and its size is the ceiling's body size.
  const probe = new Tally()
  setPhase(probe)
  const probeId = await publish(app, single, 1)
  if (!await waitFor(() => probe.firstAt.has(`${singlePath} ${probeId}`), 10_000)) {
    throw new Error('the probe event did not arrive within 10 s')
  }

  // Other processes on the machine move the figures a lot: how busy it was just before the run.
  const idle0 = machineCpu()
  await sleep(1_000)
  const busyBefore = machineBusy(idle0, machineCpu())
  const concurrency = app.config.webhookConcurrency
  console.log('marketplace-gateway bench: webhook delivery throughput and latency')
  console.log(`  ${nodeAndCpus()}, Postgres ${new URL(databaseUrl).host}, load average ${loadavg()[0]!.toFixed(2)}, ` +
    `machine ${fmt(busyBefore * 100)}% busy in the second before the run`)
  console.log(`  worker in process: WEBHOOK_CONCURRENCY ${concurrency}, LOG_LEVEL ${LOG_LEVEL} ` +
    `(lines discarded after serialisation), receiver ${INLINE ? 'on the app\'s thread' : 'in a worker thread'}, ` +
    `publishing with ${PUBLISH_CONCURRENCY} concurrent POST /events injections`)
  console.log('')

  // The ceiling in three slices: before the latency test, between the workloads, at the end.
  const ceil = PHASES.has('ceiling') ? ceiling(receiver.port, caFile, concurrency, probe.bodySize) : undefined
  if (ceil) cleanups.push(() => ceil.close())
  const ceilingSlice = async (when: string) => {
    if (!ceil) return
    const r = await ceil.slice(Math.ceil(CEILING_REQUESTS / 3))
    console.log(`ceiling, ${when} (undici request, no database, ${concurrency} connections and in flight, ` +
      `${ceil.bodySize}-byte body): ${fmt(r.requests)} POSTs in ${fmt(r.seconds, 2)} s, ${fmt(r.rps)} req/s`)
    console.log('')
  }
  await ceilingSlice('1/3')

  let lat: Awaited<ReturnType<typeof latency>> | undefined
  if (PHASES.has('latency')) {
    lat = await latency(app, setPhase, single, singlePath)
    console.log(`latency, idle queue (${lat.n} events one at a time, ${LATENCY_WARMUP} warm-up, ` +
      `${LATENCY_GAP_MS} ms pause after each):`)
    console.log(`  event to first attempt: p50 ${fmt(lat.p50, 1)} ms, p90 ${fmt(lat.p90, 1)} ms, ` +
      `p99 ${fmt(lat.p99, 1)} ms (min ${fmt(lat.min, 1)}, max ${fmt(lat.max, 1)}, ${lat.over500} over 500 ms; ` +
      `duplicates ${lat.duplicates})`)
    console.log(`  POST /events answered: p50 ${fmt(lat.ackP50, 1)} ms, p99 ${fmt(lat.ackP99, 1)} ms`)
    console.log('')
  }

  const results: WorkloadResult[] = []
  const specA: WorkloadSpec = { name: 'A', tenant: single, paths: [singlePath], events: EVENTS }
  const specB: WorkloadSpec = { name: 'B', tenant: fanoutTenant, paths: fanoutPaths, events: FANOUT_EVENTS }
  const runs: Array<[phase: string, spec: WorkloadSpec]> = [
    ['a', specA],
    ['a-drain', { ...specA, backlogFrom: databaseUrl }],
    ['b', specB],
    ['b-drain', { ...specB, backlogFrom: databaseUrl }]
  ]
  let middle = false
  for (const [phaseName, spec] of runs) {
    if (!PHASES.has(phaseName)) continue
    if (spec.name === 'B' && !middle) {
      if (results.length > 0) console.log('')
      await ceilingSlice('2/3')
      middle = true
    }
    const n = spec.paths.length
    process.stdout.write(`workload ${spec.name}, ${spec.backlogFrom ? 'backlog drain' : 'end to end'}: ` +
      `${n} subscription(s)${n > 1 ? ` (${installs} installs, one tenant)` : ''} × ${fmt(spec.events)} events … `)
    const r = await workload(app, setPhase, pendingCount, spec)
    results.push(r)
    process.stdout.write('done\n')
    printWorkload(r, concurrency)
    if (r.missing > 0) failed = true
  }
  if (results.length > 0) console.log('')

  if (!middle) await ceilingSlice('2/3')
  await ceilingSlice('3/3')
  const ceilTotal = ceil?.total()
  if (ceilTotal) {
    console.log(`ceiling, all slices: ${fmt(ceilTotal.requests)} POSTs in ${fmt(ceilTotal.seconds, 2)} s, ` +
      `${fmt(ceilTotal.rps)} req/s`)
    console.log('')
  }

  const ratio = (r: WorkloadResult): string => ceilTotal ? (r.deliveredPerS / ceilTotal.rps).toFixed(3) : '-'
  printTable([
    ['workload', 'published/s', 'delivered/s', 'seconds', 'deliveries', 'dups', 'missing', 'ratio to ceiling'],
    ...results.map(r => [
      `${r.name}: ${r.subscriptions} × ${fmt(r.events)}, ${r.backlog ? 'backlog drain' : 'end to end'}`,
      r.backlog ? '(backlog)' : fmt(r.publishedPerS), fmt(r.deliveredPerS), fmt(r.deliverySeconds, 2),
      fmt(r.deliveries), String(r.duplicates), String(r.missing), ratio(r)]),
    ...(ceilTotal
      ? [['ceiling (undici, no database)', '', fmt(ceilTotal.rps), fmt(ceilTotal.seconds, 2), fmt(ceilTotal.requests),
          '', '', '1.000']]
      : [])
  ])
  console.log('')
  for (const r of results) {
    summary(`webhooks: workload ${r.name}, ${r.backlog ? 'backlog drain' : 'end to end'}`,
      `${fmt(r.deliveredPerS)} deliveries/s`, { text: `>= ${fmt(TARGET_RATE)}`, met: r.deliveredPerS >= TARGET_RATE })
  }
  if (lat) {
    summary('webhooks: event to first attempt, idle queue, p50', `${fmt(lat.p50, 1)} ms`,
      { text: `<= ${TARGET_P50_MS} ms`, met: lat.p50 <= TARGET_P50_MS })
  }
  for (const r of results) {
    const what = `workload ${r.name} delivered/s, ${r.backlog ? 'backlog drain' : 'end to end  '}`
    console.log(`  ${what}  ${fmt(r.deliveredPerS).padStart(7)}     target >= ${fmt(TARGET_RATE)}  ` +
      verdict(r.deliveredPerS >= TARGET_RATE))
  }
  if (lat) {
    console.log(`  p50 event to first attempt (idle queue)   ${fmt(lat.p50, 1).padStart(7)} ms  ` +
      `target <= ${TARGET_P50_MS} ms  ` + verdict(lat.p50 <= TARGET_P50_MS))
  }
  if (lat && ceilTotal && results.length === 4) {
    console.log('')
    const [a, aDrain, b, bDrain] = results as [WorkloadResult, WorkloadResult, WorkloadResult, WorkloadResult]
    console.log('markdown row: | ' + [stamp(),
      `${fmt(a.publishedPerS)} / ${fmt(a.deliveredPerS)} / ${fmt(aDrain.deliveredPerS)}`,
      `${fmt(b.publishedPerS)} / ${fmt(b.deliveredPerS)} / ${fmt(bDrain.deliveredPerS)}`,
      fmt(ceilTotal.rps),
      results.map(ratio).join(' / '),
      `${fmt(lat.p50, 1)} / ${fmt(lat.p90, 1)} / ${fmt(lat.p99, 1)}`,
      results.map(r => r.duplicates).join(' / '),
      results.map(r => verdict(r.deliveredPerS >= TARGET_RATE)).join(' / '),
      verdict(lat.p50 <= TARGET_P50_MS)].join(' | ') + ' |')
  }

  if (logs.problems.length > 0) {
    console.log('')
    console.log(`app warnings and errors (${logs.problems.length}):`)
    for (const line of logs.problems.slice(0, 5)) console.log('  ' + line.slice(0, 400))
  }
  if (failed) {
    throw new Error(`lost deliveries: ${results.map(r => `workload ${r.name} ${r.missing} missing`).join(', ')}`)
  }
}

runBench(main)
