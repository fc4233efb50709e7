/**
 * Benchmark: webhook delivery with 1, 2 and 4 worker processes on one Postgres. Does it scale, and where
 * does it stop?
 *
 *   npx tsx bench/workers.ts
 *
 * Each worker is what operators run beside the API: `node dist/cli.js worker` (the `worker` command of the CLI),
 * NODE_ENV production, LOG_LEVEL info, its own process. The receiver is an HTTPS server in a process of its own that
 * answers 200 and counts deliveries by (subscription path, event id). For each worker count, the workers are started
 * and idle; then a backlog of BENCH_EVENTS events, each fanned out to BENCH_SUBSCRIPTIONS subscriptions of one
 * tenant, is written in one transaction with the service's own `storeEvent` (what POST /events runs), and the time
 * from its COMMIT to the last delivery's arrival is the figure. Each worker claims from the same queue (`for update
 * skip locked`). CPU time of the workers, the receiver and Postgres is read from /proc.
 *
 * Needs Postgres at 127.0.0.1:5432 with trust auth for user `postgres` (a fresh database `mg_bench_wk_<random>`
 * is created and dropped) and `openssl`. Environment:
 *
 *   BENCH_WORKERS         worker counts, one measurement each (default 1,2,4)
 *   BENCH_EVENTS          events per measurement (default 2000)
 *   BENCH_SUBSCRIPTIONS   subscriptions each event goes to (default 10)
 *   BENCH_DRAIN_TIMEOUT   seconds to wait for every delivery (default 120)
 *   BENCH_DATABASE_URL, BENCH_ADMIN_URL as in bench/me.ts
 *
 * A delivery that never arrives fails the run (exit 1); a duplicate is counted and shown (at least once allows it,
 * but none is expected here).
 */
import pg from 'pg'
import { storeEvent } from '../plugins/domain/events/service.js'
import { fanOut } from '../plugins/domain/webhooks/delivery-queue-store.js'
import {
  fmt, machineBusy, machineCpu, nodeAndCpus, now, positiveInt, positiveInts, postgresCpuSeconds, queryable, printTable,
  runBench, stamp, summary, waitFor, type Cleanup
} from './lib.js'
import { TOPIC, webhookFixture } from './fixtures.js'
import { cleanEnv, ensureBuilt, startProcess, type BenchProcess } from './processes.js'

const WORKERS = positiveInts('BENCH_WORKERS', [1, 2, 4])
const EVENTS = positiveInt('BENCH_EVENTS', 2000)
const SUBSCRIPTIONS = positiveInt('BENCH_SUBSCRIPTIONS', 10)
const DRAIN_TIMEOUT_S = positiveInt('BENCH_DRAIN_TIMEOUT', 120)

interface Row {
  workers: number
  deliveries: number
  seconds: number
  perSecond: number
  duplicates: number
  workerCpu: number
  receiverCpu: number
  postgresCpu: number
  machineBusy: number
}

/**
 * Writes the backlog in one transaction and leaves it open: the caller takes its readings, then `commit()`, which
 * answers `now()` just before COMMIT was sent. Until then no worker sees any of it.
 */
async function backlog (databaseUrl: string, tenant: { orgRefId: string, entityRefId: string }, serial: number) {
  const client = new pg.Client({ connectionString: databaseUrl })
  await client.connect()
  const q = queryable(client)
  try {
    await client.query('begin')
    for (let k = 0; k < EVENTS; k++) {
      const accepted = await storeEvent(q, {
        topic: TOPIC,
        org_ref_id: tenant.orgRefId,
        entity_ref_id: tenant.entityRefId,
        data: { invoice_id: `inv_${serial}_${k}`, total: '1250.00', currency: 'INR' }
      }, fanOut)
      if (accepted === 'conflict' || accepted.deliveries !== SUBSCRIPTIONS) {
        throw new Error(`backlog: the event went to ${accepted === 'conflict' ? 'a conflict' : accepted.deliveries}`)
      }
    }
  } catch (err) {
    await client.end()
    throw err
  }
  return {
    async commit (): Promise<number> {
      const committing = now()
      try {
        await client.query('commit')
      } finally {
        await client.end()
      }
      return committing
    }
  }
}

async function main (cleanups: Cleanup[]): Promise<void> {
  await ensureBuilt()
  const { databaseUrl, receiver, tenant, env } = await webhookFixture(cleanups, {
    prefix: 'mg_bench_wk', subscriptions: SUBSCRIPTIONS, publicBaseUrl: 'http://127.0.0.1:3000'
  })
  const workerEnv = cleanEnv({ ...env, NODE_ENV: 'production', LOG_LEVEL: 'info' })

  console.log(`marketplace-gateway bench: webhook delivery by ${WORKERS.join(', ')} worker processes, one Postgres`)
  console.log(`  ${fmt(EVENTS)} events x ${SUBSCRIPTIONS} subscriptions = ${fmt(EVENTS * SUBSCRIPTIONS)} ` +
    'deliveries per measurement, written as one backlog; `node dist/cli.js worker` processes; the receiver in ' +
    'its own process')
  console.log(`  ${nodeAndCpus()}, Postgres ${new URL(databaseUrl).host}`)

  const rows: Row[] = []
  for (const [index, count] of WORKERS.entries()) {
    const workers: BenchProcess[] = []
    for (let w = 0; w < count; w++) {
      const worker = await startProcess({
        name: `worker ${w + 1}`,
        cleanups,
        command: process.execPath,
        args: ['dist/cli.js', 'worker'],
        env: workerEnv,
        readyText: 'webhook worker started'
      })
      workers.push(worker)
    }
    await receiver.reset()
    const expected = EVENTS * SUBSCRIPTIONS
    // Readings from the COMMIT on: the backlog's writing is not the workers' cost.
    const written = await backlog(databaseUrl, tenant, index)
    const cpu0 = workers.reduce((s, w) => s + w.cpuSeconds(), 0)
    const receiver0 = receiver.cpuSeconds()
    const pg0 = postgresCpuSeconds()
    const machine0 = machineCpu()
    const committing = await written.commit()
    let counts = await receiver.counts()
    const arrived = async () => (counts = await receiver.counts()).unique >= expected
    const done = await waitFor(arrived, DRAIN_TIMEOUT_S * 1000, 50)
    if (!done) throw new Error(`${count} worker(s): ${counts.unique} of ${expected} deliveries in ${DRAIN_TIMEOUT_S} s`)
    const seconds = (counts.lastAt - committing) / 1000
    rows.push({
      workers: count,
      deliveries: counts.unique,
      seconds,
      perSecond: counts.unique / seconds,
      duplicates: counts.duplicates,
      workerCpu: workers.reduce((s, w) => s + w.cpuSeconds(), 0) - cpu0,
      receiverCpu: receiver.cpuSeconds() - receiver0,
      postgresCpu: postgresCpuSeconds() - pg0,
      machineBusy: machineBusy(machine0, machineCpu())
    })
    console.log(`  ${count} worker(s): ${fmt(counts.unique / seconds)} deliveries/s`)
    await Promise.all(workers.map(w => w.stop()))
  }

  console.log('')
  const perDelivery = (s: number, r: Row): string => fmt(s * 1e6 / r.deliveries)
  printTable([
    ['workers', 'deliveries', 'seconds', 'deliveries/s', 'duplicates', 'workers µs CPU/delivery',
      'Postgres µs/delivery', 'receiver µs/delivery', 'machine busy'],
    ...rows.map(r => [
      String(r.workers), fmt(r.deliveries), fmt(r.seconds, 2), fmt(r.perSecond), fmt(r.duplicates),
      perDelivery(r.workerCpu, r), perDelivery(r.postgresCpu, r), perDelivery(r.receiverCpu, r),
      `${fmt(r.machineBusy * 100)} %`
    ])
  ])
  console.log('')
  for (const r of rows) {
    console.log(`markdown row: | ${stamp()} | ${r.workers} | ${fmt(r.perSecond)} | ${perDelivery(r.workerCpu, r)} | ` +
      `${perDelivery(r.postgresCpu, r)} | ${fmt(r.machineBusy * 100)} % |`)
  }
  console.log('')
  const base = rows[0]!
  for (const r of rows) {
    summary(`webhook delivery, ${r.workers} worker process(es)`,
      `${fmt(r.perSecond)} deliveries/s (${(r.perSecond / base.perSecond).toFixed(2)}x of ${base.workers})`)
  }
}

runBench(main)
