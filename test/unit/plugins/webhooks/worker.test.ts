// The delivery worker's decisions, driven by hand: a store that answers claims from a script, a sender whose answers
// the test gives, a clock the test moves. No database, no HTTP, no real wait beyond a few event-loop turns.
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { FastifyBaseLogger } from 'fastify'
import t, { type Test } from 'tap'
import { loadConfig, type Config } from '../../../../plugins/config.js'
import type { Db } from '../../../../plugins/db/index.js'
import type { Attempt, Outcome } from '../../../../plugins/webhooks/sender.js'
import { encryptSecret } from '../../../../plugins/webhooks/signing.js'
import type {
  AttemptResult, ClaimedDelivery, CounterUpdate, DisabledReason, Lanes, WebhookStore
} from '../../../../plugins/webhooks/store.js'
import { DeliveryWorker, type AttemptOutcome } from '../../../../plugins/webhooks/worker.js'
import { ManualClock } from '../../../support/clock.js'

const baseConfig = loadConfig({ DATA_DIR: mkdtempSync(join(tmpdir(), 'mg-worker-')), LOG_LEVEL: 'silent' })
const configWith = (c: Partial<Config>): Config => ({ ...baseConfig, ...c })

type Seen = { subscriptionId: string, tenant: string, slow: boolean }
type Row = { id: string, consecutive_failures: number, failing_since: Date | null, is_active: boolean }

/** A store whose claims answer what the test queued, and which keeps counters as the SQL of applyCounters does. */
class FakeStore {
  claims: Array<{ limit: number, lanes: Lanes }> = []
  queue: Array<{ claimed: ClaimedDelivery[], seen?: Seen[], picked?: number }> = []
  recorded: AttemptResult[] = []
  updates: CounterUpdate[][] = []
  disabled: Array<{ ids: string[], reason: DisabledReason }> = []
  cancelled: string[] = []
  rows = new Map<string, Row>()

  async claim (_worker: string, limit: number, _lease: number, lanes: Lanes) {
    this.claims.push({ limit, lanes })
    const next = this.queue.shift() ?? { claimed: [] }
    return { claimed: next.claimed, seen: next.seen ?? [], picked: next.picked ?? next.claimed.length }
  }

  async record (_q: unknown, results: AttemptResult[]) { this.recorded.push(...results) }

  async applyCounters (_q: unknown, updates: CounterUpdate[]): Promise<Row[]> {
    this.updates.push(updates)
    return updates.map(u => {
      const r = this.rows.get(u.subscriptionId) ??
        { id: u.subscriptionId, consecutive_failures: 0, failing_since: null, is_active: true }
      r.consecutive_failures = u.reset ? u.failures : r.consecutive_failures + u.failures
      r.failing_since = u.reset ? u.streakStart : r.failing_since ?? u.streakStart
      this.rows.set(r.id, r)
      return { ...r }
    })
  }

  async disable (_q: unknown, ids: string[], reason: DisabledReason) {
    if (ids.length === 0) return
    this.disabled.push({ ids, reason })
    for (const id of ids) this.rows.get(id)!.is_active = false
  }

  async cancel (ids: string[]) { this.cancelled.push(...ids) }
  async reap () { return 0 }
}

/** A sender whose every attempt waits until the test answers it. */
class FakeSender {
  sent: Array<{ attempt: Attempt, answer: (o: Partial<Outcome> | Error) => void }> = []
  closed = false

  send (attempt: Attempt): Promise<Outcome> {
    return new Promise((resolve, reject) => {
      this.sent.push({
        attempt,
        answer: o => o instanceof Error
          ? reject(o)
          : resolve({
            status: 200,
            responseBody: '',
            error: null,
            errorClass: null,
            requestHeaders: {},
            responseHeaders: {},
            retryAfterS: null,
            durationMs: 5,
            ...o
          })
      })
    })
  }

  async close () { this.closed = true }
}

const silent = { info () {}, warn () {}, error () {} } as unknown as FastifyBaseLogger

/** A few turns of the event loop, until `cond` holds (the worker's steps are promise chains, not timers). */
async function until (cond: () => boolean, what: string) {
  for (let n = 0; n < 2_000; n++) {
    if (cond()) return
    await new Promise(resolve => setImmediate(resolve))
  }
  throw new Error(`never happened: ${what}`)
}

function setup (t: Test, config: Partial<Config> = {}) {
  const store = new FakeStore()
  const sender = new FakeSender()
  const clock = new ManualClock()
  const observed: AttemptOutcome[] = []
  let notify: () => void = () => {}
  const db = {
    listen: async (_channel: string, fn: () => void) => { notify = fn },
    tx: async <T>(fn: (q: unknown) => Promise<T>) => fn({})
  } as unknown as Db
  const cfg = configWith({ webhookConcurrency: 4, ...config })
  const worker = new DeliveryWorker(store as unknown as WebhookStore, db, cfg, silent, {
    observe: o => observed.push(o), clock, sender, random: () => 0.5
  })
  t.teardown(async () => {
    for (const s of sender.sent) s.answer({ status: 200 })
    await worker.stop()
  })
  const delivery = (id: string, sub: string, tenant: string, slow: boolean, more: Partial<ClaimedDelivery> = {}) => ({
    id,
    attempts: 0,
    eventId: `evt_${id}`,
    topic: 'invoice.paid',
    body: '{}',
    subscriptionId: sub,
    targetUrl: 'https://hooks.example.com/x',
    secretCiphertext: encryptSecret(cfg.webhookSecretKey, sub, 'whsec_current'),
    signingScheme: 'standard' as const,
    previous: null,
    deliverable: true,
    tenant,
    slow,
    ...more
  })
  return { store, sender, clock, observed, worker, delivery, cfg, wake: () => notify() }
}

t.test('the lanes: slow attempts capped per subscription, per tenant and in all; healthy ones not', async t => {
  const { store, sender, worker, delivery, wake } = setup(t)
  // Four slots: 2 slow per subscription, 1 slow per tenant (a quarter), 2 slow in all (a half).
  store.queue.push({
    claimed: [delivery('d1', 'A', 'T', true)],
    seen: [{ subscriptionId: 'B', tenant: 'T', slow: true }, { subscriptionId: 'H', tenant: 'U', slow: false }]
  })
  await worker.start()
  await until(() => sender.sent.length === 1, 'the first attempt')
  t.same(store.claims[0], {
    limit: 4,
    lanes: {
      excluded: [],
      fullTenants: [],
      slowRoom: 2,
      slowBySubscription: {},
      slowByTenant: {},
      perSubscription: 2,
      perTenant: 1
    }
  }, 'an idle worker: every slot free, nothing excluded')

  store.queue.push({ claimed: [delivery('d2', 'C', 'U', true)] })
  wake()
  await until(() => sender.sent.length === 2, 'the second attempt')
  t.same(store.claims[1], {
    limit: 3,
    lanes: {
      excluded: ['A', 'B'],
      fullTenants: ['T'],
      slowRoom: 1,
      slowBySubscription: { A: 1 },
      slowByTenant: { T: 1 },
      perSubscription: 2,
      perTenant: 1
    }
  }, "tenant T's slow lane is full: its slow subscriptions, the one in flight and the one seen, are left out")

  store.queue.push({ claimed: [delivery('d3', 'H', 'U', false)] })
  wake()
  await until(() => sender.sent.length === 3, 'the third attempt')
  t.same(store.claims[2]!.lanes, {
    excluded: ['A', 'B', 'C'],
    fullTenants: ['T', 'U'],
    slowRoom: 0,
    slowBySubscription: { A: 1, C: 1 },
    slowByTenant: { T: 1, U: 1 },
    perSubscription: 2,
    perTenant: 1
  }, 'half the slots slow: every known slow subscription waits')

  wake()
  await until(() => store.claims.length === 4, 'a fourth claim')
  t.equal(store.claims[3]!.limit, 1, 'one slot left')
  t.same(store.claims[3]!.lanes.slowBySubscription, { A: 1, C: 1 }, 'a healthy attempt takes no slow room')

  sender.sent[0]!.answer({ status: 200 })
  await until(() => store.claims.length >= 5 && store.recorded.length === 1, 'the claim after the first answer')
  t.same(store.claims.at(-1)!.lanes, {
    excluded: ['C'],
    fullTenants: ['U'],
    slowRoom: 1,
    slowBySubscription: { C: 1 },
    slowByTenant: { U: 1 },
    perSubscription: 2,
    perTenant: 1
  }, "A's slot is free again: tenant T's subscriptions may be claimed, U's slow lane is still full")
  t.equal(worker.snapshot().inFlight, 2)
})

t.test('a claim that lost picks to another worker claims again at once', async t => {
  const { store, sender, worker, delivery } = setup(t)
  store.queue.push({ claimed: [delivery('d1', 'A', 'T', false)], picked: 3 })
  store.queue.push({ claimed: [delivery('d2', 'B', 'T', false)] })
  await worker.start()
  await until(() => sender.sent.length === 2, 'both attempts, without a notification or the poll')
  t.same(store.claims.map(c => c.limit), [4, 3])
})

t.test('the retry schedule, Retry-After and the end of the schedule, on the worker\'s clock', async t => {
  const { store, sender, clock, observed, worker, delivery, wake } = setup(t, { webhookRetrySchedule: [60, 600] })
  const t0 = clock.now()
  store.queue.push({ claimed: [delivery('d1', 'S', 'T', true)] })
  await worker.start()
  await until(() => sender.sent.length === 1, 'the first attempt')
  t.match(sender.sent[0]!.attempt, { eventId: 'evt_d1', attempt: 1, keys: [{ secret: 'whsec_current' }] })
  sender.sent[0]!.answer({ status: 500, errorClass: 'http_status' })
  await until(() => store.recorded.length === 1, 'the first result')
  t.match(store.recorded[0], {
    deliveryId: 'd1',
    attempt: 1,
    attemptedAt: new Date(t0),
    status: 500,
    succeeded: false,
    nextAttemptAt: new Date(t0 + 60_000)
  }, 'the first retry: the first entry of the schedule after the attempt, by the worker\'s clock')

  clock.advance(60_000)
  store.queue.push({ claimed: [delivery('d1', 'S', 'T', true, { attempts: 1 })] })
  wake()
  await until(() => sender.sent.length === 2, 'the second attempt')
  t.equal(sender.sent[1]!.attempt.attempt, 2)
  sender.sent[1]!.answer({ status: 503, retryAfterS: 90 })
  await until(() => store.recorded.length === 2, 'the second result')
  t.same(store.recorded[1]!.nextAttemptAt, new Date(t0 + 60_000 + 90_000), 'Retry-After, within twice 600 s')

  clock.advance(90_000)
  store.queue.push({ claimed: [delivery('d1', 'S', 'T', true, { attempts: 2 })] })
  wake()
  await until(() => sender.sent.length === 3, 'the third attempt')
  sender.sent[2]!.answer({ status: 0, errorClass: 'timeout', error: 'timed out after 15 s' })
  await until(() => store.recorded.length === 3, 'the third result')
  t.match(store.recorded[2], { attempt: 3, nextAttemptAt: null, errorClass: 'timeout' }, 'the schedule is spent')
  t.same(observed, ['retrying', 'retrying', 'failed'])
  t.same(store.updates.flat().map(u => [u.failures, u.streakStart]), [[1, new Date(t0)], [1, new Date(t0 + 60_000)],
    [1, new Date(t0 + 150_000)]], 'each flush adds its failures')
  t.same(store.rows.get('S'), {
    id: 'S', consecutive_failures: 3, failing_since: new Date(t0), is_active: true
  }, 'the streak keeps its first start')
})

t.test('disabling: a long streak only once it is old enough on the worker\'s clock; a 410 at once', async t => {
  const { store, sender, clock, worker, delivery, wake } = setup(t, {
    webhookRetrySchedule: [0, 0, 0, 0], webhookDisableAfterFailures: 3, webhookDisableAfterHours: 1
  })
  await worker.start()
  let n = 0
  const fail = async (sub: string, attempts: number, status = 500) => {
    n++
    store.queue.push({ claimed: [delivery(`d${n}`, sub, 'T', true, { attempts })] })
    wake()
    await until(() => sender.sent.length === n, `attempt ${n}`)
    sender.sent[n - 1]!.answer({ status })
    await until(() => worker.snapshot().recorded === n, `result ${n} recorded`)
  }
  await fail('S', 0)
  clock.advance(20 * 60_000)
  await fail('S', 1)
  clock.advance(20 * 60_000)
  await fail('S', 2)
  t.same(store.rows.get('S')!.consecutive_failures, 3)
  t.same(store.disabled, [], 'three failures in 40 minutes: not yet (both thresholds must be reached)')
  clock.advance(20 * 60_000 - 1)
  await fail('S', 3)
  t.same(store.disabled, [], 'a millisecond short of an hour after the streak began: not yet')
  clock.advance(1)
  await fail('S', 4)
  t.same(store.disabled, [{ ids: ['S'], reason: 'consecutive_failures' }], 'an hour after: disabled')
  await fail('G', 0, 410)
  t.same(store.disabled.at(-1), { ids: ['G'], reason: 'gone' }, 'a 410 disables at once')
  t.equal(store.disabled.length, 2)
})

t.test('an undeliverable claim is cancelled, never sent; a sender that throws is an internal failure', async t => {
  const { store, sender, observed, worker, delivery, wake } = setup(t)
  store.queue.push({ claimed: [delivery('gone', 'X', 'T', false, { deliverable: false })] })
  await worker.start()
  await until(() => store.cancelled.length === 1, 'the cancellation')
  t.same(store.cancelled, ['gone'])
  t.equal(sender.sent.length, 0)
  store.queue.push({ claimed: [delivery('d2', 'Y', 'T', false)] })
  wake()
  await until(() => sender.sent.length === 1, 'the attempt')
  sender.sent[0]!.answer(new Error('boom'))
  await until(() => store.recorded.length === 1, 'its result')
  t.match(store.recorded[0], { status: 0, errorClass: 'internal', error: 'internal: boom', succeeded: false })
  t.same(observed, ['retrying'])
})

t.test('during a rotation\'s overlap both secrets sign', async t => {
  const { store, sender, worker, delivery, cfg } = setup(t)
  store.queue.push({
    claimed: [delivery('d1', 'R', 'T', false, {
      previous: { secretCiphertext: encryptSecret(cfg.webhookSecretKey, 'R', 'whsec_old'), signingScheme: 'legacy' }
    })]
  })
  await worker.start()
  await until(() => sender.sent.length === 1, 'the attempt')
  t.same(sender.sent[0]!.attempt.keys, [
    { secret: 'whsec_current', scheme: 'standard' }, { secret: 'whsec_old', scheme: 'legacy' }
  ])
})

t.test('stop lets the attempt in flight finish, records it, then closes the sender', async t => {
  const { store, sender, worker, delivery } = setup(t)
  store.queue.push({ claimed: [delivery('d1', 'A', 'T', false)] })
  await worker.start()
  await until(() => sender.sent.length === 1, 'the attempt')
  let stopped = false
  const stopping = worker.stop().then(() => { stopped = true })
  await until(() => !worker.snapshot().running, 'the worker to stop claiming')
  for (let n = 0; n < 20; n++) await new Promise(resolve => setImmediate(resolve))
  t.equal(stopped, false, 'stop waits while the attempt is in flight')
  t.equal(sender.closed, false, 'and keeps the sender open')
  const claims = store.claims.length
  sender.sent[0]!.answer({ status: 200 })
  await stopping
  t.match(store.recorded, [{ deliveryId: 'd1', succeeded: true }], 'the attempt was recorded')
  t.equal(sender.closed, true, 'then the sender is closed')
  t.equal(store.claims.length, claims, 'and nothing more was claimed')
  t.match(worker.snapshot(), { running: false, inFlight: 0, attempted: 1, recorded: 1 })
})
