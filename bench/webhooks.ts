/**
 * Benchmark (issue 3): webhook delivery throughput and latency of the real app (buildApp, its delivery worker in
 * this process) on real Postgres, against a local HTTPS receiver that answers 200.
 *
 *   npx tsx bench/webhooks.ts
 *
 * Needs Postgres at 127.0.0.1:5432 with trust auth for user `postgres`: a fresh database `mg_bench_wh_<random>` is
 * created for the run and dropped at the end; needs `openssl` (the receiver's self-signed certificate, made by
 * `selfSigned()` of test/receiver.ts). Environment:
 *
 *   BENCH_DATABASE_URL            use this database as it is instead (migrated, never dropped)
 *   BENCH_ADMIN_URL               where to create the fresh database (default postgres://postgres@127.0.0.1:5432/postgres)
 *   BENCH_EVENTS                  events of workload A, one subscription (default 20000)
 *   BENCH_FANOUT_SUBSCRIPTIONS    subscriptions of workload B, one tenant, 50 per install (default 200)
 *   BENCH_FANOUT_EVENTS           events of workload B, each fans out to every subscription (default 100)
 *   BENCH_PUBLISH_CONCURRENCY     concurrent POST /events injections while publishing (default 32)
 *   BENCH_LATENCY_EVENTS          events of the idle-queue latency test, one at a time (default 200)
 *   BENCH_LATENCY_GAP_MS          pause after each latency event arrived, before the next one (default 20)
 *   BENCH_CEILING_REQUESTS        POSTs of the no-database ceiling (default 20000)
 *   BENCH_WEBHOOK_CONCURRENCY     the worker's WEBHOOK_CONCURRENCY (default: the service's default, 64)
 *   BENCH_DRAIN_TIMEOUT           seconds to wait for all of a workload's deliveries (default 120); then, once nothing is
 *                                 pending any more (at most 30 s later), any that never arrived are lost
 *   BENCH_LOG_LEVEL               the app's LOG_LEVEL (default info: one request line per POST /events, as in production)
 *   BENCH_INLINE=1                run the receiver on the app's own thread instead of a worker thread
 *   BENCH_PHASES                  the phases to run, comma-separated (default all: latency,a,a-drain,b,b-drain,ceiling;
 *                                 fewer for profiling one of them)
 *
 * The receiver is node:https in a worker thread of this process (its own event loop, like a remote receiver; it
 * still shares the machine's cores with the app and Postgres). It answers every request at once with 200 "ok" and
 * reports, per request, its path (one per subscription), the event id header, the attempt header and the arrival
 * time (process.hrtime, the same monotonic clock on every thread of the process).
 *
 * Phases, in this order (BENCH_PHASES names in brackets):
 *   1. [latency] with the queue idle, single events to one subscription, each published only after the previous
 *      one arrived, the worker has no attempt in flight and BENCH_LATENCY_GAP_MS passed; receiver arrival minus the
 *      start of the POST /events. 10 warm-up events first (the worker's first TLS connection), not counted.
 *   2. [a] workload A end to end: 1 subscription × BENCH_EVENTS events, published by BENCH_PUBLISH_CONCURRENCY
 *      concurrent POST /events injections (app.inject, EVENTS_TOKEN) while the worker delivers. Delivered/s =
 *      unique deliveries / (last first arrival − start of the first publish); published/s likewise to the last answer.
 *   3. [a-drain] workload A as a backlog: the same number of events, written by a separate client in one
 *      transaction with exactly the rows POST /events writes (event, pending deliveries, delivery_count, wake-up
 *      NOTIFY), so the whole backlog becomes due at COMMIT; timed from just before COMMIT to the last arrival.
 *   4. [b] workload B end to end: BENCH_FANOUT_SUBSCRIPTIONS subscriptions in one org/entity (installs of 50, the
 *      per-install limit) × BENCH_FANOUT_EVENTS events, each fanning out to every subscription.
 *   5. [b-drain] workload B as a backlog.
 *   6. [ceiling] undici `request` POSTs to the same receiver, no database: an Agent with as many connections as the
 *      worker (WEBHOOK_CONCURRENCY), as many in flight, the same CA option, body size and header names. Run in three
 *      slices of BENCH_CEILING_REQUESTS / 3 (before the latency test, between workloads A and B, at the end), each
 *      after 1,000 untimed warm-up POSTs; the ratio uses all slices together (requests / seconds).
 *
 * Diagnostics printed per workload: the worker's attempts in flight (sampled every 20 ms), the event-loop delay of
 * the app's thread, CPU of this process and of all `postgres` processes (Linux /proc; per delivery too), how busy
 * the machine was, and the database work the app asked for (statements, transactions, claims, result flushes),
 * counted by wrapping `app.db`, `app.webhookQueue.claim/record` and `app.webhookSubscriptions.applyCounters`.
 *
 * Every (subscription, event) pair must arrive at least once: a missing one is an error (exit 1). Duplicates
 * (at-least-once delivery) and retries are counted and reported, not errors. Targets (PASS/MISS, never an exit
 * code): >= 1,000 deliveries/s in both workloads, end to end (the backlog drains are shown against it too);
 * p50 of event-to-first-attempt <= 50 ms on an idle queue.
 */
import { randomBytes } from 'node:crypto'
import { mkdtempSync, readdirSync, readFileSync, rmSync } from 'node:fs'
import { createServer } from 'node:https'
import type { AddressInfo } from 'node:net'
import { cpus, loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { monitorEventLoopDelay } from 'node:perf_hooks'
import { Writable } from 'node:stream'
import { rootCertificates } from 'node:tls'
import { Worker } from 'node:worker_threads'
import pg from 'pg'
import { Agent, request } from 'undici'
import { buildApp, type AppInstance } from '../app.js'
import { loadConfig } from '../plugins/config.js'
import { WAKEUP_CHANNEL } from '../plugins/webhooks/queue.js'
import type { Installed } from '../test/helper.js'
import { selfSigned } from '../test/receiver.js'
import { positiveInt, fmt, verdict, benchDatabase, runBench } from './lib.js'

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
const PER_INSTALL = 50
const LATENCY_WARMUP = 10
const TOPIC = 'invoice.paid'
const ALL_PHASES = ['latency', 'a', 'a-drain', 'b', 'b-drain', 'ceiling']
const PHASES = new Set((process.env.BENCH_PHASES || ALL_PHASES.join(',')).split(',').map(p => p.trim()).filter(Boolean))
for (const p of PHASES) if (!ALL_PHASES.includes(p)) throw new Error(`BENCH_PHASES: unknown phase ${JSON.stringify(p)} (known: ${ALL_PHASES.join(', ')})`)
const LOOP_RESOLUTION_MS = 5
const TARGET_RATE = 1_000
const TARGET_P50_MS = 50


/** Milliseconds on the process-wide monotonic clock (comparable between threads). */
const now = (): number => Number(process.hrtime.bigint()) / 1e6
const sleep = (ms: number) => new Promise<void>(resolve => setTimeout(resolve, ms))

function quantile (sorted: number[], q: number): number {
  if (sorted.length === 0) return NaN
  return sorted[Math.min(sorted.length - 1, Math.max(0, Math.ceil(q * sorted.length) - 1))]!
}

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
    batch.push(req.url || '/', req.headers['x-service-event-id'] || '', Number(req.headers['x-service-delivery-attempt'] || 0), size, t)
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
        onArrivals([{ path: req.url ?? '/', eventId: typeof eventId === 'string' ? eventId : '', attempt: Number(req.headers['x-service-delivery-attempt'] ?? 0), size, t: now() }])
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
          out.push({ path: a[i] as string, eventId: a[i + 1] as string, attempt: a[i + 2] as number, size: a[i + 3] as number, t: a[i + 4] as number })
        }
        onArrivals(out)
      }
    })
    worker.once('error', reject)
  })
  return {
    port,
    async close () {
      await new Promise<void>(resolve => { closed = resolve; worker.postMessage('close'); setTimeout(resolve, 2_000).unref() })
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
/** POST /events through the whole HTTP pipeline (inject); throws unless 202 with the expected fan-out. */
async function publish (app: AppInstance, tenant: Installed, fanout: number): Promise<string> {
  const n = ++serial
  const res = await app.inject({
    method: 'POST',
    url: '/events',
    headers: { authorization: `Bearer ${app.config.eventsToken}`, 'content-type': 'application/json' },
    payload: JSON.stringify({
      topic: TOPIC,
      org_ref_id: tenant.orgRefId,
      entity_ref_id: tenant.entityRefId,
      data: eventData(n)
    })
  })
  if (res.statusCode !== 202) throw new Error(`POST /events: ${res.statusCode} ${res.body}`)
  const body = res.json() as { id: string, deliveries: number }
  if (body.deliveries !== fanout) throw new Error(`POST /events fanned out to ${body.deliveries} subscriptions, expected ${fanout}`)
  return body.id
}

/** Database work as the app asks for it: counted by wrapping (not changing) the decorated objects. */
const counters = { statements: 0, transactions: 0, claims: 0, claimed: 0, claimMs: 0, flushes: 0, recorded: 0, flushMs: 0 }

/**
 * Counts statements and transactions on `app.db` and the worker's claims and flushes (`webhookQueue.claim` and
 * `.record`). The plugins call these through the shared objects, so wrapping their methods sees every call; the
 * wrappers only count and pass through.
 */
function instrument (app: AppInstance): void {
  const db = app.db
  const query = db.query.bind(db)
  const tx = db.tx.bind(db)
  db.query = (async (sql: string, params?: unknown[]) => { counters.statements++; return query(sql, params) }) as typeof db.query
  db.tx = (async (fn: Parameters<typeof db.tx>[0]) => {
    counters.transactions++
    return tx(q => fn({ query: (async (sql: string, params?: unknown[]) => { counters.statements++; return q.query(sql, params) }) as typeof q.query }))
  }) as typeof db.tx
  const queue = app.webhookQueue
  const claim = queue.claim.bind(queue)
  const record = queue.record.bind(queue)
  queue.claim = async (...args) => {
    const t0 = now()
    const rows = await claim(...args)
    counters.claimMs += now() - t0
    counters.claims++
    counters.claimed += rows.length
    return rows
  }
  // A flush is one transaction: record (two statements), then the counters of the subscriptions.
  const subscriptions = app.webhookSubscriptions
  const applyCounters = subscriptions.applyCounters.bind(subscriptions)
  let flushStarted = 0
  queue.record = async (q, results) => {
    flushStarted = now()
    counters.flushes++
    counters.recorded += results.length
    return record(q, results)
  }
  subscriptions.applyCounters = async (q, updates) => {
    const crossed = await applyCounters(q, updates)
    counters.flushMs += now() - flushStarted
    return crossed
  }
}

/** Samples the worker's attempts in flight, and the main thread's event-loop delay, while a workload runs. */
function monitor (app: AppInstance) {
  const db0 = { ...counters }
  const samples: number[] = []
  const timer = setInterval(() => samples.push(app.webhookWorker?.inFlight ?? 0), 20)
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
    const machine1 = machineCpu()
    const sorted = [...samples].sort((a, b) => a - b)
    return {
      inFlightAvg: samples.reduce((s, x) => s + x, 0) / Math.max(1, samples.length),
      inFlightP50: quantile(sorted, 0.5),
      // The histogram holds the time between timer ticks: the delay is what exceeds the resolution.
      loopP50: Math.max(0, loop.percentile(50) / 1e6 - LOOP_RESOLUTION_MS),
      loopP99: Math.max(0, loop.percentile(99) / 1e6 - LOOP_RESOLUTION_MS),
      loopMax: Math.max(0, loop.max / 1e6 - LOOP_RESOLUTION_MS),
      wallMs: wall,
      db: Object.fromEntries(Object.entries(counters).map(([k, v]) => [k, v - db0[k as keyof typeof counters]])) as typeof counters,
      processCpu: (cpu.user + cpu.system) / 1000 / wall,
      postgresCpu: (postgresCpuSeconds() - pg0) * 1000 / wall,
      machineBusy: machine0 && machine1 ? 1 - (machine1.idle - machine0.idle) / Math.max(1, machine1.total - machine0.total) : NaN
    }
  }
}

/** CPU seconds used so far by all `postgres` processes (Linux /proc; other databases' work included). */
function postgresCpuSeconds (): number {
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

/** Jiffies from /proc/stat (Linux): how busy the whole machine was, all cores. */
function machineCpu (): { idle: number, total: number } | undefined {
  try {
    const fields = readFileSync('/proc/stat', 'utf8').split('\n')[0]!.trim().split(/\s+/).slice(1).map(Number)
    return { idle: fields[3]! + (fields[4] ?? 0), total: fields.reduce((s, x) => s + x, 0) }
  } catch {
    return undefined
  }
}

interface WorkloadResult {
  name: string
  /** A backlog committed at once, drained by the worker (else: published while the worker delivers). */
  backlog: boolean
  subscriptions: number
  events: number
  deliveries: number
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
  bodySize: number
}

async function waitFor (check: () => boolean | Promise<boolean>, timeoutMs: number, pollMs = 10): Promise<boolean> {
  const deadline = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > deadline) return false
    await sleep(pollMs)
  }
  return true
}

/** The body POST /events would store for this event (plugins/webhooks/events.ts), byte for byte in shape. */
function eventBody (id: string, tenant: Installed, n: number, createdAt: Date): string {
  return JSON.stringify({
    id, topic: TOPIC, created_at: createdAt.toISOString(), org_ref_id: tenant.orgRefId, entity_ref_id: tenant.entityRefId, data: eventData(n)
  })
}

function eventData (n: number): Record<string, unknown> {
  return { invoice_id: `inv_${String(n).padStart(8, '0')}`, customer_id: 'cus_0001', total: '1250.00', currency: 'INR', paid_at: new Date().toISOString() }
}

/**
 * Writes a whole backlog in one transaction with the same rows POST /events writes (event, one pending delivery
 * per subscription, delivery_count, a wake-up notification), so that it becomes due at once, on commit. Returns the
 * event ids and the time just before COMMIT was sent.
 */
async function insertBacklog (databaseUrl: string, tenant: Installed, fanout: number, events: number): Promise<{ ids: string[], committing: number }> {
  const client = new pg.Client({ connectionString: databaseUrl })
  await client.connect()
  try {
    const createdAt = new Date()
    const ids = Array.from({ length: events }, () => `evt_${randomBytes(16).toString('base64url')}`)
    const bodies = ids.map(id => eventBody(id, tenant, ++serial, createdAt))
    await client.query('begin')
    await client.query(
      `insert into webhook_events (id, producer_id, topic, org_ref_id, entity_ref_id, body, delivery_count, created_at)
       select e.id, null, $3, $4, $5, e.body, 0, $6 from unnest($1::text[], $2::text[]) with ordinality as e(id, body, n) order by e.n`,
      [ids, bodies, TOPIC, tenant.orgRefId, tenant.entityRefId, createdAt])
    const inserted = await client.query(
      `insert into webhook_deliveries (id, event_id, subscription_id)
       select 'dlv_' || replace(gen_random_uuid()::text, '-', ''), e.id, s.id
         from unnest($1::text[]) with ordinality as e(id, n)
         cross join webhook_subscriptions s join installs i on i.install_id = s.install_id
        where s.is_active and i.status = 'active' and s.org_ref_id = $2 and s.entity_ref_id = $3 and $4 = any(s.topics)
        order by e.n`,
      [ids, tenant.orgRefId, tenant.entityRefId, TOPIC])
    if (inserted.rowCount !== events * fanout) throw new Error(`backlog: ${inserted.rowCount} deliveries, expected ${events * fanout}`)
    await client.query('update webhook_events set delivery_count = $2 where id = any($1)', [ids, fanout])
    await client.query(`select pg_notify('${WAKEUP_CHANNEL}', '')`)
    const committing = now()
    await client.query('commit')
    return { ids, committing }
  } finally {
    await client.end()
  }
}

async function workload (app: AppInstance, setPhase: (t: Tally) => void, name: string, tenant: Installed, paths: string[], events: number,
  backlogFrom?: string): Promise<WorkloadResult> {
  const tally = new Tally()
  setPhase(tally)
  const expected = paths.length * events
  let ids: string[] = []
  let t0: number
  let tPublished: number
  let stop: ReturnType<typeof monitor>
  if (backlogFrom) {
    const backlog = await insertBacklog(backlogFrom, tenant, paths.length, events)
    // Only the drain is timed: from COMMIT (the backlog becomes visible) to the last delivery.
    stop = monitor(app)
    ids = backlog.ids
    t0 = backlog.committing
    tPublished = t0
  } else {
    stop = monitor(app)
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
  if (backlogFrom && tally.times.some(t => t < t0)) throw new Error('backlog: deliveries arrived before the commit was sent')
  // Durable completion: the worker has recorded every attempt (nothing pending any more).
  const recorded = await waitFor(async () => await app.webhookQueue.pendingCount() === 0, 30_000, 50)
  const tRecorded = now()
  const pendingLeft = recorded ? 0 : await app.webhookQueue.pendingCount()
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
    bodySize: tally.bodySize
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
    if (!await waitFor(() => tally.firstAt.has(key), 10_000, 1)) throw new Error(`latency event ${id} did not arrive within 10 s`)
    if (n >= LATENCY_WARMUP) {
      samples.push(tally.firstAt.get(key)! - t0)
      acks.push(ack)
    }
    // Idle queue: the attempt is over (nothing in flight); the pause lets its result flush and the claim after it end.
    await waitFor(() => (app.webhookWorker?.inFlight ?? 0) === 0, 5_000, 1)
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
 * the same `ca` option as the worker's Agent (plugins/webhooks/sender.ts), the same body size and header names.
 * Measured in slices spread over the run (the machine's other load changes within a minute); each slice first sends
 * 1,000 untimed warm-up POSTs (at least 4 per connection), so that every connection is open and the code is warm.
 */
function ceiling (port: number, caFile: string, concurrency: number, bodySize: number) {
  const agent = new Agent({ connect: { ca: [...rootCertificates, readFileSync(caFile, 'utf8')] }, connections: concurrency })
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

// ---------------------------------------------------------------------------------------------------------------

async function main (cleanups: Array<() => Promise<void> | void>): Promise<void> {
  // test/helper.ts makes (and drops at beforeExit, which process.exit skips) a database of its own when
  // DATABASE_URL is set; this benchmark takes its database from BENCH_DATABASE_URL only, so it is imported without.
  delete process.env.DATABASE_URL
  const { install } = await import('../test/helper.js')
  let failed = false
  const database = await benchDatabase('mg_bench_wh')
  cleanups.push(database.drop)
  const databaseUrl = database.url

  // The receiver: arrivals go to whichever phase is current.
  const { key, cert, caFile } = selfSigned()
  let phase = new Tally()
  const setPhase = (t: Tally) => { phase = t }
  const receiver = await startReceiver(key, cert, arrivals => {
    for (const a of arrivals) if (!a.path.startsWith('/ceiling')) phase.add(a)
  })
  cleanups.push(() => receiver.close())
  const base = `https://127.0.0.1:${receiver.port}`

  const dataDir = mkdtempSync(join(tmpdir(), 'mg-bench-wh-'))
  cleanups.push(() => rmSync(dataDir, { recursive: true, force: true }))
  const config = loadConfig({
    NODE_ENV: 'test',
    DATA_DIR: dataDir,
    DATABASE_URL: databaseUrl,
    LOG_LEVEL,
    PUBLIC_RATE_LIMIT: '1000000',
    WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
    WEBHOOK_CA_FILE: caFile,
    ...(WEBHOOK_CONCURRENCY ? { WEBHOOK_CONCURRENCY } : {})
  })
  const logs = new LogSink()
  const app = await buildApp(config, { logStream: logs })
  cleanups.push(() => app.close())
  await app.ready()
  if (!app.webhookWorker) throw new Error('the app has no delivery worker (WEBHOOK_WORKER)')
  instrument(app)

  // Tenants: one install with one subscription (latency, workload A); one org/entity with installs of 50.
  const single = await install(app)
  const singlePath = '/hooks/single'
  await subscribe(app, single, base + singlePath)
  const fanoutPaths: string[] = []
  let tenant: Installed | undefined
  for (let k = 0; k < FANOUT_SUBSCRIPTIONS; k++) {
    if (k % PER_INSTALL === 0) tenant = await install(app, tenant ? { orgRefId: tenant.orgRefId, entityRefId: tenant.entityRefId } : {})
    const path = `/hooks/fanout/${k}`
    await subscribe(app, tenant!, base + path)
    fanoutPaths.push(path)
  }
  const fanoutTenant = tenant!
  const installs = Math.ceil(FANOUT_SUBSCRIPTIONS / PER_INSTALL)

  // Other processes on the machine move the figures a lot: how busy it was just before the run.
  const idle0 = machineCpu()
  await sleep(1_000)
  const idle1 = machineCpu()
  const busyBefore = idle0 && idle1 ? 1 - (idle1.idle - idle0.idle) / Math.max(1, idle1.total - idle0.total) : NaN
  const cpu = cpus()
  const concurrency = app.config.webhookConcurrency
  console.log('marketplace-gateway bench: webhook delivery throughput and latency')
  console.log(`  Node ${process.version}, ${cpu.length} CPU(s) (${cpu[0]?.model ?? 'unknown'}), Postgres ${new URL(databaseUrl).host}, ` +
    `load average ${loadavg()[0]!.toFixed(2)}, machine ${fmt(busyBefore * 100)}% busy in the second before the run`)
  console.log(`  worker in process: WEBHOOK_CONCURRENCY ${concurrency}, LOG_LEVEL ${LOG_LEVEL} (lines discarded after serialisation), ` +
    `receiver ${INLINE ? 'on the app\'s thread' : 'in a worker thread'}, publishing with ${PUBLISH_CONCURRENCY} concurrent POST /events injections`)
  console.log('')

  // The ceiling in three slices: before the latency test, between the workloads, at the end.
  const ceil = PHASES.has('ceiling')
    ? ceiling(receiver.port, caFile, concurrency, Buffer.byteLength(eventBody(`evt_${randomBytes(16).toString('base64url')}`, single, 1, new Date())))
    : undefined
  if (ceil) cleanups.push(() => ceil.close())
  const ceilingSlice = async (when: string) => {
    if (!ceil) return
    const r = await ceil.slice(Math.ceil(CEILING_REQUESTS / 3))
    console.log(`ceiling, ${when} (undici request, no database, ${concurrency} connections and in flight, ${ceil.bodySize}-byte body): ` +
      `${fmt(r.requests)} POSTs in ${fmt(r.seconds, 2)} s, ${fmt(r.rps)} req/s`)
    console.log('')
  }
  await ceilingSlice('1/3')

  let lat: Awaited<ReturnType<typeof latency>> | undefined
  if (PHASES.has('latency')) {
    lat = await latency(app, setPhase, single, singlePath)
    console.log(`latency, idle queue (${lat.n} events one at a time, ${LATENCY_WARMUP} warm-up, ${LATENCY_GAP_MS} ms pause after each):`)
    console.log(`  event to first attempt: p50 ${fmt(lat.p50, 1)} ms, p90 ${fmt(lat.p90, 1)} ms, p99 ${fmt(lat.p99, 1)} ms ` +
      `(min ${fmt(lat.min, 1)}, max ${fmt(lat.max, 1)}, ${lat.over500} over 500 ms; duplicates ${lat.duplicates})`)
    console.log(`  POST /events answered: p50 ${fmt(lat.ackP50, 1)} ms, p99 ${fmt(lat.ackP99, 1)} ms`)
    console.log('')
  }

  const results: WorkloadResult[] = []
  const runs = [
    ['a', 'A', single, [singlePath], EVENTS, false],
    ['a-drain', 'A', single, [singlePath], EVENTS, true],
    ['b', 'B', fanoutTenant, fanoutPaths, FANOUT_EVENTS, false],
    ['b-drain', 'B', fanoutTenant, fanoutPaths, FANOUT_EVENTS, true]
  ] as const
  let middle = false
  for (const [phaseName, name, t, paths, events, backlog] of runs) {
    if (!PHASES.has(phaseName)) continue
    if (name === 'B' && !middle) {
      if (results.length > 0) console.log('')
      await ceilingSlice('2/3')
      middle = true
    }
    const label = `workload ${name}, ${backlog ? 'backlog drain' : 'end to end'}: ${paths.length} subscription(s)` +
      `${paths.length > 1 ? ` (${installs} installs, one tenant)` : ''} × ${fmt(events)} events`
    process.stdout.write(`${label} … `)
    const r = await workload(app, setPhase, name, t, [...paths], events, backlog ? databaseUrl : undefined)
    results.push(r)
    process.stdout.write('done\n')
    if (backlog) {
      console.log(`  ${fmt(r.events)} events and ${fmt(r.events * r.subscriptions)} deliveries committed in one transaction; ` +
        `delivered in ${fmt(r.deliverySeconds, 2)} s from the commit: ${fmt(r.deliveredPerS)} deliveries/s (all recorded after ${fmt(r.recordedSeconds, 2)} s)`)
    } else {
      console.log(`  published ${fmt(r.events)} events in ${fmt(r.publishSeconds, 2)} s (${fmt(r.publishedPerS)} events/s); ` +
        `delivered ${fmt(r.deliveries)} in ${fmt(r.deliverySeconds, 2)} s from the first publish: ${fmt(r.deliveredPerS)} deliveries/s ` +
        `(all recorded after ${fmt(r.recordedSeconds, 2)} s)`)
    }
    console.log(`  deliveries per second: ${r.perSecond.map(x => fmt(x)).join(', ')}`)
    if (r.pendingLeft > 0) console.log(`  WARNING: ${fmt(r.pendingLeft)} deliveries still pending 30 s after the last arrival (results not recorded)`)
    console.log(`  missing ${r.missing}, duplicates ${r.duplicates}, retries ${r.retries}; worker in flight avg ${fmt(r.stats.inFlightAvg, 1)} ` +
      `(p50 ${fmt(r.stats.inFlightP50)}) of ${concurrency}; event-loop delay p50 ${fmt(r.stats.loopP50, 1)} ms, p99 ${fmt(r.stats.loopP99, 1)} ms, max ${fmt(r.stats.loopMax)} ms`)
    console.log(`  CPU: this process ${fmt(r.stats.processCpu * 100)}% of one core, Postgres ${fmt(r.stats.postgresCpu * 100)}%, ` +
      `machine ${fmt(r.stats.machineBusy * 100)}% busy (all ${cpus().length} cores, so about ` +
      `${fmt(Math.max(0, r.stats.machineBusy * cpus().length - r.stats.processCpu - r.stats.postgresCpu) * 100)}% of one core for other processes); per delivery: this process ` +
      `${fmt(r.stats.processCpu * r.stats.wallMs / r.deliveries * 1000)} µs, Postgres ${fmt(r.stats.postgresCpu * r.stats.wallMs / r.deliveries * 1000)} µs`)
    const d = r.stats.db
    console.log(`  database: ${fmt(d.statements)} statements (BEGIN/COMMIT not counted) and ${fmt(d.transactions)} transactions from the app; ` +
      `${fmt(d.claims)} claims of ${fmt(d.claimed / Math.max(1, d.claims), 1)} deliveries on average (${fmt(d.claimMs / Math.max(1, d.claims), 1)} ms each), ` +
      `${fmt(d.flushes)} result flushes of ${fmt(d.recorded / Math.max(1, d.flushes), 1)} on average (${fmt(d.flushMs / Math.max(1, d.flushes), 1)} ms each, COMMIT not included)`)
    if (r.missing > 0) failed = true
  }
  if (results.length > 0) console.log('')

  if (!middle) await ceilingSlice('2/3')
  await ceilingSlice('3/3')
  const ceilTotal = ceil?.total()
  if (ceilTotal) {
    console.log(`ceiling, all slices: ${fmt(ceilTotal.requests)} POSTs in ${fmt(ceilTotal.seconds, 2)} s, ${fmt(ceilTotal.rps)} req/s`)
    console.log('')
  }

  const ratio = (r: WorkloadResult): string => ceilTotal ? (r.deliveredPerS / ceilTotal.rps).toFixed(3) : '-'
  const rows = [
    ['workload', 'published/s', 'delivered/s', 'seconds', 'deliveries', 'dups', 'missing', 'ratio to ceiling'],
    ...results.map(r => [`${r.name}: ${r.subscriptions} × ${fmt(r.events)}, ${r.backlog ? 'backlog drain' : 'end to end'}`,
      r.backlog ? '(backlog)' : fmt(r.publishedPerS), fmt(r.deliveredPerS), fmt(r.deliverySeconds, 2),
      fmt(r.deliveries), String(r.duplicates), String(r.missing), ratio(r)]),
    ...(ceilTotal ? [['ceiling (undici, no database)', '', fmt(ceilTotal.rps), fmt(ceilTotal.seconds, 2), fmt(ceilTotal.requests), '', '', '1.000']] : [])
  ]
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map(r => r[i]!.length)))
  for (const r of rows) console.log('  ' + r.map((c, i) => i === 0 ? c.padEnd(widths[i]!) : c.padStart(widths[i]!)).join('  '))
  console.log('')
  for (const r of results) {
    const what = `workload ${r.name} delivered/s, ${r.backlog ? 'backlog drain' : 'end to end  '}`
    console.log(`  ${what}  ${fmt(r.deliveredPerS).padStart(7)}     target >= ${fmt(TARGET_RATE)}  ${verdict(r.deliveredPerS >= TARGET_RATE)}`)
  }
  if (lat) console.log(`  p50 event to first attempt (idle queue)   ${fmt(lat.p50, 1).padStart(7)} ms  target <= ${TARGET_P50_MS} ms  ${verdict(lat.p50 <= TARGET_P50_MS)}`)
  if (lat && ceilTotal && results.length === 4) {
    console.log('')
    const [a, aDrain, b, bDrain] = results as [WorkloadResult, WorkloadResult, WorkloadResult, WorkloadResult]
    console.log('markdown row: | ' + [new Date().toISOString().slice(0, 16).replace('T', ' '),
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
  if (failed) throw new Error(`lost deliveries: ${results.map(r => `workload ${r.name} ${r.missing} missing`).join(', ')}`)
}

runBench(main)
