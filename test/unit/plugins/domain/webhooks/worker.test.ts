// The delivery worker's decisions, driven by hand: a store that answers claims from a script, a sender whose answers
// the test gives, a clock the test moves (the worker's waits too: its poll, its reaper, the drain on stop). No
// database, no HTTP, no real wait beyond a few event-loop turns.
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import type { FastifyBaseLogger } from 'fastify'
import t, { type Test } from 'tap'
import { loadConfig, type Config } from '../../../../../plugins/infrastructure/config/index.js'
import type { Attempt, Outcome } from '../../../../../plugins/domain/webhooks/sender.js'
import { encryptSecret } from '../../../../../plugins/domain/webhooks/signing.js'
import { DatabaseUnavailableError, type Db } from '../../../../../plugins/infrastructure/db/index.js'
import type {
  AttemptResult, Caps, ClaimedDelivery, CounterUpdate
} from '../../../../../plugins/domain/webhooks/delivery-queue-store.js'
import type { DisabledReason } from '../../../../../plugins/domain/webhooks/subscription-store.js'
import {
  DeliveryWorker, type AttemptOutcome, type WorkerStores
} from '../../../../../plugins/domain/webhooks/worker.js'
import { ManualClock } from '../../../../support/clock.js'

const baseConfig = loadConfig({ DATA_DIR: mkdtempSync(join(tmpdir(), 'mg-worker-')), LOG_LEVEL: 'silent' })
const configWith = (c: Partial<Config>): Config => ({ ...baseConfig, ...c })

type Row = { id: string, consecutive_failures: number, failing_since: Date | null, is_active: boolean }

/** The worker's poll (POLL_MS in worker.ts). */
const POLL_MS = 1_000

/**
 * The worker's stores in one: claims answer what the test queued, and record() keeps counters as its SQL does.
 * `log` is the order of what happened, transaction by transaction: `record <ids>`, `claim <limit>`, `commit`.
 */
class FakeStore {
  claims: Array<{ limit: number, caps: Caps }> = []
  queue: ClaimedDelivery[][] = []
  recorded: AttemptResult[] = []
  log: string[] = []
  /** Errors the next claims throw, one each. */
  failures: Error[] = []
  updates: CounterUpdate[][] = []
  disabled: Array<{ ids: string[], reason: DisabledReason }> = []
  cancelled: string[] = []
  rows = new Map<string, Row>()

  async claim (_q: unknown, _worker: string, limit: number, _lease: number, caps: Caps) {
    const failure = this.failures.shift()
    if (failure) throw failure
    this.claims.push({ limit, caps })
    this.log.push(`claim ${limit}`)
    if (limit === 0) return []
    return (this.queue.shift() ?? []).slice(0, limit)
  }

  /** Results recorded in the open transaction: kept at its commit, dropped when it fails. */
  staged: AttemptResult[] = []

  async record (_q: unknown, results: AttemptResult[], updates: CounterUpdate[]): Promise<Row[]> {
    this.log.push(`record ${results.map(r => r.deliveryId).join(',')}`)
    this.staged.push(...results)
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

  /** Subscriptions whose pending deliveries were cancelled (they were disabled). */
  pendingCancelled: string[] = []
  async cancelPending (_q: unknown, subscriptionIds: string[]) { this.pendingCancelled.push(...subscriptionIds) }

  async cancel (ids: string[]) { this.cancelled.push(...ids) }

  /** Runs of the reaper, and how many leases the next ones release (none unless the test says). */
  reaps = 0
  releases: number[] = []
  async reap () {
    this.reaps++
    return this.releases.shift() ?? 0
  }
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

/** A logger that keeps the messages of warnings and errors. */
function logger () {
  const lines: Array<{ level: string, msg: string, fields: Record<string, unknown> }> = []
  const at = (level: string) => (fields: Record<string, unknown>, msg: string) => { lines.push({ level, msg, fields }) }
  return { lines, log: { info () {}, warn: at('warn'), error: at('error') } as unknown as FastifyBaseLogger }
}

/** A few turns of the event loop, until `cond` holds (the worker's steps are promise chains, not timers). */
async function until (cond: () => boolean, what: string) {
  for (let n = 0; n < 2_000; n++) {
    if (cond()) return
    await new Promise(resolve => setImmediate(resolve))
  }
  throw new Error(`never happened: ${what}`)
}

const turns = async (n: number) => { for (let k = 0; k < n; k++) await new Promise(resolve => setImmediate(resolve)) }

/** Waits for `done` while the clock moves a poll at every turn of the event loop: what the worker waits for passes. */
async function whilePolling<T> (clock: ManualClock, done: Promise<T>, what: string): Promise<T> {
  let settled = false
  const result = done.finally(() => { settled = true })
  await until(() => {
    if (!settled) clock.advance(POLL_MS)
    return settled
  }, what)
  return result
}

function setup (t: Test, config: Partial<Config> = {}) {
  const store = new FakeStore()
  const sender = new FakeSender()
  const clock = new ManualClock()
  const observed: AttemptOutcome[] = []
  let notify: () => void = () => {}
  const db = {
    listen: async (_channel: string, fn: () => void) => { notify = fn },
    tx: async <T>(fn: (q: unknown) => Promise<T>) => {
      try {
        const result = await fn({})
        store.recorded.push(...store.staged)
        store.log.push('commit')
        return result
      } finally {
        store.staged = []
      }
    }
  } as unknown as Db
  const cfg = configWith({ webhookConcurrency: 4, ...config })
  const { lines, log } = logger()
  const stores = { queue: store, subscriptions: store } as unknown as WorkerStores
  const worker = new DeliveryWorker(stores, db, cfg, log, {
    observe: o => observed.push(o), clock, sender, random: () => 0.5
  })
  t.teardown(async () => {
    for (const s of sender.sent) s.answer({ status: 200 })
    await whilePolling(clock, worker.stop(), 'the worker to stop')
  })
  const delivery = (id: string, sub: string, more: Partial<ClaimedDelivery> = {}): ClaimedDelivery => ({
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
    ...more
  })
  return { store, sender, clock, observed, worker, delivery, cfg, lines, wake: () => notify() }
}

t.test('a slot stays taken until its attempt is recorded, and the record goes with the next claim', async t => {
  const { store, sender, clock, worker, delivery, wake } = setup(t)
  store.queue.push([delivery('d1', 'A'), delivery('d2', 'B')])
  await worker.start()
  await until(() => sender.sent.length === 2, 'both attempts')
  wake()
  await until(() => store.claims.length === 2, 'the claim a notification asks for')
  t.same(store.claims.map(c => c.limit), [4, 2], 'four slots, then the two not in flight')
  t.same(store.claims[0]!.caps, { perSubscription: 16, perTenant: 32 }, 'the caps of the configuration')

  store.log.length = 0
  sender.sent[0]!.answer({ status: 200 })
  await until(() => store.recorded.length === 1, 'the first result recorded')
  t.same(store.log.slice(0, 3), ['record d1', 'claim 3', 'commit'],
    'the result is recorded in the transaction of the claim that reuses its slot, before it')
  t.match(worker.snapshot(), { inFlight: 1, unrecorded: 0, recorded: 1 })

  // The database fails: the second result cannot be recorded, and its slot is not given to a new attempt.
  store.failures.push(new DatabaseUnavailableError('refused', { cause: new Error('ECONNREFUSED') }))
  store.log.length = 0
  sender.sent[1]!.answer({ status: 200 })
  await until(() => store.failures.length === 0, 'the failed cycle')
  t.match(worker.snapshot(), { inFlight: 0, unrecorded: 1, recorded: 1 }, 'the result waits, its slot still taken')
  // After a failure the worker waits for the poll (or a signal): the clock moves a poll at every turn.
  await until(() => {
    clock.advance(POLL_MS)
    return store.recorded.length === 2 && store.log.at(-1) === 'commit'
  }, 'the second result recorded once the database answers')
  t.same(store.log.slice(-3), ['record d2', 'claim 4', 'commit'])
  t.same(store.recorded.map(r => r.deliveryId), ['d1', 'd2'], 'each result recorded once')
})

t.test('never more attempts sent and unrecorded than slots, whatever the order of the answers', async t => {
  const { store, sender, worker, delivery, wake } = setup(t)
  for (let n = 0; n < 6; n++) store.queue.push([0, 1, 2, 3].map(i => delivery(`d${n}-${i}`, `S${i}`)))
  store.failures.push(...[1, 2, 3].map(() => new DatabaseUnavailableError('timeout', { cause: new Error('slow') })))
  await worker.start()
  let answered = 0
  for (let step = 0; step < 40 && answered < 24; step++) {
    const open = sender.sent.slice(answered)
    // Answer the newest first, one at a time, checking the bound after every turn of the worker.
    open.at(-1)?.answer({ status: step % 3 === 0 ? 500 : 200 })
    if (open.length > 0) answered++
    wake()
    for (let n = 0; n < 5; n++) await new Promise(resolve => setImmediate(resolve))
    const s = worker.snapshot()
    t.ok(s.inFlight + s.unrecorded <= 4, `step ${step}: ${s.inFlight} in flight + ${s.unrecorded} unrecorded <= 4`)
  }
  t.ok(store.claims.every(c => c.limit <= 4))
})

t.test('an idle worker claims again only when woken: an answer, a notification or the poll', async t => {
  const { store, sender, clock, worker, delivery, wake } = setup(t)
  store.queue.push([delivery('d1', 'A')])
  await worker.start()
  await until(() => sender.sent.length === 1, 'the attempt')
  for (let n = 0; n < 50; n++) await new Promise(resolve => setImmediate(resolve))
  t.same(store.claims.map(c => c.limit), [4], 'a claim that found less than it asked for is not repeated at once')
  wake()
  await until(() => store.claims.length === 2, 'the claim a notification asks for')
  sender.sent[0]!.answer({ status: 200 })
  await until(() => store.claims.length === 3, 'the claim after the answer')
  t.same(store.claims.map(c => c.limit), [4, 3, 4])

  // Idle again: the worker waits for its poll (beside its reaper), a second on its clock.
  await until(() => clock.waiting === 2, 'the worker to wait for its poll')
  clock.advance(POLL_MS - 1)
  await turns(50)
  t.equal(store.claims.length, 3, 'not a millisecond before the poll')
  clock.advance(1)
  await until(() => store.claims.length === 4, 'the claim the poll makes')
  t.same(store.claims.map(c => c.limit), [4, 3, 4, 4])
})

t.test('a database outage is logged once when it starts and once when it ends, without a stack', async t => {
  const { store, clock, worker, lines } = setup(t)
  const outage = () => new DatabaseUnavailableError('refused', { cause: new Error('connect ECONNREFUSED') })
  store.failures.push(outage(), outage(), outage(), outage(), outage())
  await worker.start()
  // After a failure the worker tries again at its poll: the clock moves a poll at every turn.
  await until(() => {
    clock.advance(POLL_MS)
    return lines.some(l => l.msg.includes('working again'))
  }, 'five failed cycles, then one that succeeds')
  t.equal(store.failures.length, 0, 'all five failures met')
  t.same(lines.map(l => [l.level, l.msg]), [
    ['warn', 'webhook worker: claiming deliveries failed; retrying every second until it succeeds'],
    ['warn', 'webhook worker: working again']
  ])
  t.same(lines[0]!.fields, { error: 'database unavailable (refused)' }, 'the message, not the error object')
})

t.test('the retry schedule, Retry-After and the end of the schedule, on the worker\'s clock', async t => {
  const { store, sender, clock, observed, worker, delivery, wake } = setup(t, { webhookRetrySchedule: [60, 600] })
  const t0 = clock.now()
  store.queue.push([delivery('d1', 'S')])
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
  store.queue.push([delivery('d1', 'S', { attempts: 1 })])
  wake()
  await until(() => sender.sent.length === 2, 'the second attempt')
  t.equal(sender.sent[1]!.attempt.attempt, 2)
  sender.sent[1]!.answer({ status: 503, retryAfterS: 90 })
  await until(() => store.recorded.length === 2, 'the second result')
  t.same(store.recorded[1]!.nextAttemptAt, new Date(t0 + 60_000 + 90_000), 'Retry-After, within twice 600 s')

  clock.advance(90_000)
  store.queue.push([delivery('d1', 'S', { attempts: 2 })])
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
    store.queue.push([delivery(`d${n}`, sub, { attempts })])
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
  t.same(store.pendingCancelled, ['S', 'G'], 'what a disabled subscription had pending is cancelled with it')
})

t.test('an undeliverable claim is cancelled, never sent; a sender that throws is an internal failure', async t => {
  const { store, sender, observed, worker, delivery, wake } = setup(t)
  store.queue.push([delivery('gone', 'X', { deliverable: false })])
  await worker.start()
  await until(() => store.cancelled.length === 1, 'the cancellation')
  t.same(store.cancelled, ['gone'])
  t.equal(sender.sent.length, 0)
  store.queue.push([delivery('d2', 'Y')])
  wake()
  await until(() => sender.sent.length === 1, 'the attempt')
  sender.sent[0]!.answer(new Error('boom'))
  await until(() => store.recorded.length === 1, 'its result')
  t.match(store.recorded[0], { status: 0, errorClass: 'internal', error: 'internal: boom', succeeded: false })
  t.same(observed, ['retrying'])
})

t.test('during a rotation\'s overlap both secrets sign', async t => {
  const { store, sender, worker, delivery, cfg } = setup(t)
  store.queue.push([delivery('d1', 'R', {
    previous: { secretCiphertext: encryptSecret(cfg.webhookSecretKey, 'R', 'whsec_old'), signingScheme: 'legacy' }
  })])
  await worker.start()
  await until(() => sender.sent.length === 1, 'the attempt')
  t.same(sender.sent[0]!.attempt.keys, [
    { secret: 'whsec_current', scheme: 'standard' }, { secret: 'whsec_old', scheme: 'legacy' }
  ])
})

t.test('stop lets the attempt in flight finish, records it, then closes the sender', async t => {
  const { store, sender, clock, worker, delivery } = setup(t)
  store.queue.push([delivery('d1', 'A')])
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
  await whilePolling(clock, stopping, 'the worker to stop')
  t.match(store.recorded, [{ deliveryId: 'd1', succeeded: true }], 'the attempt was recorded')
  t.equal(sender.closed, true, 'then the sender is closed')
  t.equal(store.claims.length, claims, 'and nothing more was claimed')
  t.match(worker.snapshot(), { running: false, inFlight: 0, attempted: 1, recorded: 1 })
})

t.test('stop gives up on an attempt that does not end once the drain time has passed on the clock', async t => {
  const { store, sender, clock, worker, delivery, cfg } = setup(t)
  store.queue.push([delivery('d1', 'A')])
  await worker.start()
  await until(() => sender.sent.length === 1, 'the attempt')
  let stopped = false
  const stopping = worker.stop().then(() => { stopped = true })
  // The attempt's own time-out, and a margin to record it (DRAIN_MARGIN_MS in worker.ts).
  const drainMs = cfg.webhookAttemptTimeoutSeconds * 1000 + 2_000
  await until(() => !worker.snapshot().running, 'the worker to stop claiming')
  await turns(20)
  clock.advance(drainMs - 1)
  await turns(50)
  t.equal(stopped, false, 'a millisecond before the drain time, stop still waits')
  clock.advance(1)
  await stopping
  t.equal(sender.closed, true, 'then it closes the sender')
  t.match(worker.snapshot(), { running: false, inFlight: 1, recorded: 0 }, 'with the attempt still in flight')
  t.same(store.recorded, [])
})

t.test('the reaper runs every half lease on the worker\'s clock; released leases wake the loop', async t => {
  const { store, clock, worker, lines } = setup(t, { webhookLeaseSeconds: 60 })
  await worker.start()
  await until(() => store.claims.length === 1, 'the first claim')
  await until(() => clock.waiting === 2, 'the worker to wait for its poll and its reaper')
  clock.advance(29_999)
  await turns(20)
  t.equal(store.reaps, 0, 'not before half the lease')
  store.releases.push(2)
  const claims = store.claims.length
  clock.advance(1)
  await until(() => store.reaps === 1 && store.claims.length > claims, 'the reap, and the claim it asks for')
  t.match(lines, [{ level: 'warn', msg: 'released deliveries whose worker lease expired', fields: { released: 2 } }])
  clock.advance(30_000)
  await until(() => store.reaps === 2, 'the next reap, half a lease later')
})
