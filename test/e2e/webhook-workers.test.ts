import { spawn } from 'node:child_process'
import t, { type Test } from 'tap'
import { buildWorker } from '../../app.js'
import { build, eventually, install, needsPostgres, postgresDatabase, testConfig } from '../support/helper.js'
import { cli } from '../support/processes.js'
import { startReceiver } from '../support/receiver.js'
import { invoice, nth } from '../support/records.js'
import { publish as publishEvent, subscribe } from '../support/webhooks.js'

// Workers share a queue through Postgres: the embedded database belongs to one process.
const postgres = needsPostgres

async function setup (t: Test, respond?: Parameters<typeof startReceiver>[1]) {
  const receiver = await startReceiver(t, respond)
  const env = {
    DATABASE_URL: await postgresDatabase(t),
    WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
    WEBHOOK_CA_FILE: receiver.caFile,
    WEBHOOK_WORKER: 'false'
  }
  const api = await build(t, env)
  const i = await install(api)
  const sub = await subscribe(api, i, { target_url: receiver.url })
  t.match(sub, { topics: ['invoice.paid'], target_url: receiver.url }, 'subscribed')
  /** Publishes `n` invoice.paid events, 50 at a time; their ids. */
  const publish = async (n: number): Promise<string[]> => {
    const ids: string[] = []
    for (let k = 0; k < n; k += 50) {
      const batch = await Promise.all(
        Array.from({ length: Math.min(50, n - k) }, (_, j) => publishEvent(api, i, invoice(nth('inv', k + j))))
      )
      ids.push(...batch.map(r => r.id))
    }
    return ids
  }
  const eventIds = () => new Set(receiver.received.map(r => r.headers['x-service-event-id'] as string))
  const queueState = async () =>
    (
      await api.db.query<{ pending: number, claimed: number }>(
        `select count(*) filter (where status = 'pending')::int as pending,
                count(*) filter (where locked_by is not null)::int as claimed
           from webhook_deliveries where subscription_id = $1`,
        [sub.id]
      )
    )[0]!
  return { receiver, api, env, publish, eventIds, queueState }
}

t.test('kill -9 of a worker midway loses nothing, and sends again at most what it had in flight', {
  skip: postgres
}, async t => {
  const SLOTS = 16
  // After the first 100 the receiver holds its answers: the worker dies with attempts in flight, far from done.
  const held: Array<{ end (body: string): unknown }> = []
  let holding = true
  const s = await setup(t, (_r, res) => {
    if (holding && s.receiver.received.length > 100) held.push(res)
    else res.end('ok')
  })
  t.teardown(() => { for (const res of held) res.end('ok') })
  const published = await s.publish(500)
  t.equal(published.length, 500)

  const workerEnv = {
    ...process.env,
    ...s.env,
    WEBHOOK_WORKER: 'true',
    WEBHOOK_LEASE_SECONDS: '3',
    // Below the lease: an attempt outlives its claim only if the lease is the shorter (the start refuses that).
    WEBHOOK_ATTEMPT_TIMEOUT_SECONDS: '2',
    // Sixteen slots, and caps that let one subscription use them all: what the worker may have unrecorded at its death.
    WEBHOOK_CONCURRENCY: String(SLOTS),
    WEBHOOK_SUBSCRIPTION_MAX_IN_FLIGHT: String(SLOTS),
    WEBHOOK_TENANT_MAX_IN_FLIGHT: String(SLOTS),
    // The API's secrets, as a worker beside it has them (the service made the others in its DATA_DIR).
    WEBHOOK_SECRET_KEY: s.api.config.webhookSecretKey.toString('hex'),
    TOKEN_SIGNING_KEY: s.api.config.tokenSigningKey,
    DATA_DIR: s.api.config.dataDir,
    LOG_LEVEL: 'warn'
  }
  const spawnWorker = () =>
    spawn(...cli('worker'), {
      env: workerEnv,
      stdio: ['ignore', 'ignore', 'inherit']
    })

  const first = spawnWorker()
  t.teardown(() => {
    first.kill('SIGKILL')
  })
  await eventually(() => held.length, { timeout: 60_000, what: 'the first worker\'s 100, then an attempt held' })
  first.kill('SIGKILL')
  await new Promise(resolve => first.once('exit', resolve))
  holding = false
  const openAtKill = held.length
  for (const res of held.splice(0)) res.end('ok')
  const atKill = s.receiver.received.length
  t.ok(atKill < 500, `killed midway, after ${atKill} deliveries`)

  const second = spawnWorker()
  const exited = new Promise<number | null>(resolve => second.once('exit', code => resolve(code)))
  t.teardown(() => {
    second.kill('SIGKILL')
  })
  await eventually(() => s.eventIds().size === 500, { timeout: 60_000, what: 'every event to arrive' })
  await eventually(s.queueState, {
    until: q => q.pending === 0 && q.claimed === 0,
    timeout: 30_000,
    what: 'the queue to drain'
  })

  t.same([...s.eventIds()].sort(), [...published].sort(), 'every event was received at least once')
  t.same(await s.queueState(), { pending: 0, claimed: 0 }, 'the queue is empty, nothing stuck in a claim')
  // Every attempt is recorded before its slot is used again: what the dead worker had sent and not recorded is at
  // most its slots, and only those are sent again.
  const duplicates = s.receiver.received.length - 500
  t.ok(duplicates <= SLOTS, `${duplicates} deliveries sent again, at most the ${SLOTS} slots of the dead worker`)
  t.ok(duplicates >= openAtKill, `at least the ${openAtKill} attempts it had open`)
  second.kill('SIGTERM')
  t.equal(await exited, 0, 'the second worker drains and exits 0 on SIGTERM')
})

t.test('two workers on one Postgres share a backlog', { skip: postgres }, async t => {
  const s = await setup(t)
  const published = await s.publish(400)
  const workers = await Promise.all(
    [0, 1].map(async () => {
      const w = await buildWorker(
        testConfig(t, {
          ...s.env,
          WEBHOOK_SECRET_KEY: s.api.config.webhookSecretKey.toString('hex'),
          WEBHOOK_WORKER: 'true',
          // Four slots each, below the subscription's cap of 8: the one subscription needs both workers' slots.
          WEBHOOK_CONCURRENCY: '4'
        })
      )
      t.teardown(() => w.close())
      return w
    })
  )
  await Promise.all(workers.map(w => w.ready()))
  await eventually(() => s.eventIds().size === 400, { timeout: 60_000, what: 'every event to arrive' })
  await eventually(s.queueState, { until: q => q.pending === 0, timeout: 10_000, what: 'the queue to drain' })

  t.same([...s.eventIds()].sort(), [...published].sort(), 'no event lost')
  t.equal(s.receiver.received.length, 400, 'none delivered twice (every attempt succeeded)')
  const shares = workers.map(w => w.webhooks.workerStatus()!.attempted)
  t.ok(
    shares.every(n => n > 0),
    `both workers delivered (${shares.join(' + ')})`
  )
})
