/**
 * Benchmark: `POST /events` throughput, one event per request and in batches, and the deliveries per
 * second end to end for one subscription.
 *
 *   npx tsx bench/events.ts
 *
 * The service runs as users run it (`npm start`, NODE_ENV production, real Postgres, LOG_LEVEL info, its delivery
 * worker on); an HTTPS receiver in a process of its own answers 200 and counts deliveries; autocannon, in a process
 * of its own, posts events as the accounting system would (EVENTS_TOKEN, no id: every request is a new event) for
 * BENCH_SECONDS per batch size. Each event goes to the one subscription of its tenant. Figures: requests and events
 * accepted per second, latency of the answer, and deliveries per second end to end (from the first request to the
 * arrival of the last delivery of every accepted event).
 *
 * Needs Postgres at 127.0.0.1:5432 with trust auth for user `postgres` (a fresh database `mg_bench_ev_<random>` is
 * created and dropped) and `openssl`. Environment:
 *
 *   BENCH_BATCHES        events per request, one measurement each (default 1,100; 1 sends an object, more an array)
 *   BENCH_SECONDS        seconds of load per measurement (default 10)
 *   BENCH_CONNECTIONS    concurrent connections (default 16)
 *   BENCH_DRAIN_TIMEOUT  seconds to wait for the deliveries after the load (default 120)
 *   BENCH_DATABASE_URL, BENCH_ADMIN_URL as in bench/me.ts
 *
 * Any answer but 202, or a delivery that never arrives, fails the run (exit 1).
 */
import {
  fmt, loadSlice, sleep, mergeSlices, nodeAndCpus, now, positiveInt, positiveInts, printTable, runBench, stamp,
  summary, waitFor, type Cleanup
} from './lib.js'
import { paidInvoice, TOPIC, webhookFixture } from './fixtures.js'
import { ensureBuilt, freePort, startService } from './processes.js'

const BATCHES = positiveInts('BENCH_BATCHES', [1, 100], 100)
const SECONDS = positiveInt('BENCH_SECONDS', 10)
const CONNECTIONS = positiveInt('BENCH_CONNECTIONS', 16)
const DRAIN_TIMEOUT_S = positiveInt('BENCH_DRAIN_TIMEOUT', 120)

interface Row {
  batch: number
  requestsPerS: number
  eventsPerS: number
  p50: number
  p99: number
  events: number
  deliveredPerS: number
  drainSeconds: number
  duplicates: number
  serviceCpuPerEvent: number
}

async function main (cleanups: Cleanup[]): Promise<void> {
  await ensureBuilt()
  const port = await freePort()
  const { databaseUrl, receiver, tenant, eventsToken, env } = await webhookFixture(cleanups, {
    prefix: 'mg_bench_ev', subscriptions: 1, publicBaseUrl: `http://127.0.0.1:${port}`
  })
  const service = await startService({ cleanups, env, port, logLevel: 'info' })

  console.log('marketplace-gateway bench: POST /events, one event per request and in batches; deliveries end to end')
  console.log(`  ${CONNECTIONS} connections, ${SECONDS} s per batch size (${BATCHES.join(', ')} events per request); ` +
    'the service with `npm start` and its own worker, one subscription, receiver and autocannon in their own processes')
  console.log(`  ${nodeAndCpus()}, Postgres ${new URL(databaseUrl).host}`)

  const event = (n: number) => ({
    topic: TOPIC,
    org_ref_id: tenant.orgRefId,
    entity_ref_id: tenant.entityRefId,
    data: paidInvoice(n, '2026-11-25T10:00:00.000Z')
  })
  const rows: Row[] = []
  for (const batch of BATCHES) {
    const body = JSON.stringify(batch === 1 ? event(1) : Array.from({ length: batch }, (_, k) => event(k)))
    await receiver.reset()
    const cpu0 = service.cpuSeconds()
    const started = now()
    const raw = await loadSlice({
      url: `${service.url}/events`,
      method: 'POST',
      connections: CONNECTIONS,
      duration: SECONDS,
      headers: { authorization: `Bearer ${eventsToken}`, 'content-type': 'application/json' },
      body
    })
    const figures = mergeSlices(`POST /events x ${batch}`, `${service.url}/events`, CONNECTIONS, [raw])
    const events = figures.total * batch
    let counts = await receiver.counts()
    const drained = await waitFor(async () => (counts = await receiver.counts()).unique >= events,
      DRAIN_TIMEOUT_S * 1000, 100)
    if (!drained) throw new Error(`batch ${batch}: ${counts.unique} of ${events} deliveries in ${DRAIN_TIMEOUT_S} s`)
    // Requests in flight when the load stopped may have been accepted without being counted: their deliveries
    // arrive too, and must not fall into the next measurement.
    for (let last = -1; last !== counts.unique; await sleep(500)) {
      last = counts.unique
      counts = await receiver.counts()
    }
    const drainSeconds = (counts.lastAt - started) / 1000
    rows.push({
      batch,
      requestsPerS: figures.rps,
      eventsPerS: figures.rps * batch,
      p50: figures.p50,
      p99: figures.p99,
      events,
      deliveredPerS: counts.unique / drainSeconds,
      drainSeconds,
      duplicates: counts.duplicates,
      serviceCpuPerEvent: (service.cpuSeconds() - cpu0) * 1e6 / events
    })
    console.log(`  ${batch} per request: ${fmt(figures.rps * batch)} events/s accepted, ` +
      `${fmt(counts.unique / drainSeconds)} deliveries/s end to end`)
  }

  console.log('')
  printTable([
    ['events per request', 'requests/s', 'events/s', 'p50 ms', 'p99 ms', 'events', 'deliveries/s end to end',
      'last delivery after s', 'duplicates', 'service µs CPU/event'],
    ...rows.map(r => [String(r.batch), fmt(r.requestsPerS), fmt(r.eventsPerS), fmt(r.p50), fmt(r.p99), fmt(r.events),
      fmt(r.deliveredPerS), fmt(r.drainSeconds, 1), fmt(r.duplicates), fmt(r.serviceCpuPerEvent)])
  ])
  console.log('')
  for (const r of rows) {
    console.log(`markdown row: | ${stamp()} | ${r.batch} | ${fmt(r.requestsPerS)} | ${fmt(r.eventsPerS)} | ` +
      `${fmt(r.p99)} | ${fmt(r.deliveredPerS)} | ${fmt(r.serviceCpuPerEvent)} |`)
  }
  console.log('')
  for (const r of rows) {
    summary(`POST /events, ${r.batch} per request`, `${fmt(r.eventsPerS)} events/s, ${fmt(r.deliveredPerS)} ` +
      'deliveries/s end to end')
  }
}

runBench(main)
