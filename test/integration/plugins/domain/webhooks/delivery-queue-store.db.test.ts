// The delivery queue's store (plugins/domain/webhooks/delivery-queue-store.ts) against the database under test,
// driven by hand as the worker and the service drive it: the fan-out of events into deliveries and its wake-up, a
// claim's lease ended by its recorded result, expired leases, cancellation, retry, replay
// and the gauges' readings. The fairness of claims has its own file (fair-claims.db.test.ts).
import t, { type Test } from 'tap'
import { newEvent, newEvents } from '../../../../../plugins/domain/events/store.js'
import {
  createDeliveryQueueStore, WAKEUP_CHANNEL, type AttemptResult, type ClaimedDelivery
} from '../../../../../plugins/domain/webhooks/delivery-queue-store.js'
import { createSubscriptionStore } from '../../../../../plugins/domain/webhooks/subscription-store.js'
import { counterUpdates } from '../../../../../plugins/domain/webhooks/worker.js'
import { build, eventually, install, unique, type Installed } from '../../../../support/helper.js'
import { attemptResult as result } from '../../../../support/attempt-log.js'
import { cancelPending, leaseExpired } from '../../../../support/queue-time.js'

const app = await build(t, { WEBHOOK_WORKER: 'false' })
const queue = createDeliveryQueueStore(app.db)
const subscriptions = createSubscriptionStore(app.db)
const CAPS = { perSubscription: 100, perTenant: 100 }
const LEASE_S = 60

/** Wake-ups as a worker hears them: the payload of each notification, in order. */
const wakeups: string[] = []
await app.db.listen(WAKEUP_CHANNEL, payload => wakeups.push(payload))

/** A subscription of the install to `topics`. */
async function subscribe (i: Installed, topics = ['invoice.paid']): Promise<string> {
  const s = await subscriptions.insert({
    id: unique('whs'),
    installId: i.installId,
    orgRefId: i.orgRefId,
    entityRefId: i.entityRefId,
    topics,
    targetUrl: 'https://hooks.example.com/x',
    secretCiphertext: 'ciphertext'
  }, 50)
  return s!.id
}

/** `n` events of `topic` in the install's tenant, as POST /events makes them. */
const eventsFor = (i: Pick<Installed, 'orgRefId' | 'entityRefId'>, n: number, topic = 'invoice.paid', at?: Date) =>
  newEvents(Array.from({ length: n }, (_, k) => ({
    topic, org_ref_id: i.orgRefId, entity_ref_id: i.entityRefId, data: { n: k }
  })), at)

/** The subscriptions each event was fanned out to, sorted. */
async function targets (eventId: string): Promise<string[]> {
  const rows = await app.db.query<{ subscription_id: string }>(
    'select subscription_id from webhook_deliveries where event_id = $1 order by subscription_id', [eventId])
  return rows.map(r => r.subscription_id)
}

/** Each test that claims starts from an empty queue: whatever an earlier one left pending is cancelled. */
async function emptyQueue (t: Test): Promise<void> {
  await cancelPending(app.db)
  t.teardown(() => cancelPending(app.db))
}

const claim = (limit = 100): Promise<ClaimedDelivery[]> =>
  app.db.tx(q => queue.claim(q, 'test-worker', limit, LEASE_S, CAPS))

const record = (results: AttemptResult[]) => app.db.tx(q => queue.record(q, results, counterUpdates(results)))

const delivery = async (id: string) => (await app.db.query<{ status: string, attempts: number, leased: boolean }>(
  'select status, attempts, locked_until is not null as leased from webhook_deliveries where id = $1', [id]))[0]

t.test('fanOut: each event to the active subscriptions of its tenant that list its topic, with one wake-up',
  async t => {
    const i = await install(app)
    const paidOnly = await subscribe(i)
    const both = await subscribe(i, ['invoice.paid', 'bill.created'])
    const billsOnly = await subscribe(i, ['bill.created'])
    const disabled = await subscribe(i)
    await app.db.tx(q => subscriptions.disable(q, [disabled], 'gone'))
    await subscribe(await install(app))

    const [paid] = eventsFor(i, 1)
    const [bill] = eventsFor(i, 1, 'bill.created')
    const [unheard] = eventsFor(i, 1, 'customer.updated')
    const stored = await app.db.tx(q => queue.fanOut(q, [paid!, bill!, unheard!]))
    t.same(stored, [
      { id: paid!.id, deliveries: 2 }, { id: bill!.id, deliveries: 2 }, { id: unheard!.id, deliveries: 0 }
    ], 'every event stored, with its count of deliveries')
    t.same(await targets(paid!.id), [paidOnly, both].sort())
    t.same(await targets(bill!.id), [both, billsOnly].sort())
    t.same(await targets(unheard!.id), [])
    await eventually(() => wakeups.includes(paid!.id), { what: 'the wake-up' })
    t.equal(wakeups.filter(w => [paid!.id, bill!.id, unheard!.id].includes(w)).length, 1, 'one per statement')
  })

t.test('fanOut: nothing of a rolled back transaction is stored or wakes a worker; no deliveries, no wake-up',
  async t => {
    const i = await install(app)
    await subscribe(i)
    const [lost] = eventsFor(i, 1)
    await t.rejects(app.db.tx(async q => {
      await queue.fanOut(q, [lost!])
      throw new Error('the caller fails after the fan-out')
    }))
    const [quiet] = eventsFor({ orgRefId: unique('org'), entityRefId: unique('ent') }, 1)
    const [marker] = eventsFor(i, 1)
    await app.db.tx(q => queue.fanOut(q, [quiet!]))
    await app.db.tx(q => queue.fanOut(q, [marker!]))
    await eventually(() => wakeups.includes(marker!.id), { what: 'the wake-up of the committed event' })
    t.notOk(wakeups.includes(lost!.id), 'the rolled back event woke nobody')
    t.notOk(wakeups.includes(quiet!.id), 'an event without deliveries wakes nobody')
    const [row] = await app.db.query<{ n: number }>('select count(*)::int as n from webhook_events where id = $1',
      [lost!.id])
    t.equal(row!.n, 0, 'and it was not stored')
  })

t.test('a claim holds a lease until its result is recorded; a failure is pending again until its retry', async t => {
  await emptyQueue(t)
  const i = await install(app)
  const sub = await subscribe(i)
  const events = eventsFor(i, 2)
  await app.db.tx(q => queue.fanOut(q, events))

  const claimed = await claim()
  t.same(claimed.map(c => c.eventId).sort(), events.map(e => e.id).sort(), 'both deliveries claimed')
  t.match(claimed[0], {
    attempts: 0,
    topic: 'invoice.paid',
    subscriptionId: sub,
    targetUrl: 'https://hooks.example.com/x',
    secretCiphertext: 'ciphertext',
    previous: null,
    deliverable: true
  })
  t.equal(claimed.find(c => c.eventId === events[0]!.id)!.body, events[0]!.body, 'the bytes stored, to send')
  t.same(await claim(), [], 'leased deliveries are not claimed again')

  const [ok, failed] = claimed as [ClaimedDelivery, ClaimedDelivery]
  const retryAt = new Date(Date.now() + 3_600_000)
  const streaks = await record([
    result(ok),
    result(failed, {
      status: 500, succeeded: false, error: 'HTTP 500', errorClass: 'http_status', nextAttemptAt: retryAt
    })
  ])
  t.match(streaks, [{ id: sub, consecutive_failures: 1, is_active: true }], "the subscription's streak after it")
  t.same(await delivery(ok.id), { status: 'succeeded', attempts: 1, leased: false })
  t.same(await delivery(failed.id), { status: 'pending', attempts: 1, leased: false })
  t.same(await claim(), [], 'the failure waits for its retry')

  t.ok(await queue.retryNow(sub, failed.id), 'retry now')
  t.same((await claim()).map(c => [c.id, c.attempts]), [[failed.id, 1]], 'due again at once')
  t.notOk(await queue.retryNow(await subscribe(i), failed.id), "not through another subscription's")
})

t.test('reap releases the leases that expired and no other; cancel and cancelPending end what is pending', async t => {
  await emptyQueue(t)
  const i = await install(app)
  const sub = await subscribe(i)
  await app.db.tx(q => queue.fanOut(q, eventsFor(i, 3)))
  const [expired, live, done] = await claim() as [ClaimedDelivery, ClaimedDelivery, ClaimedDelivery]
  await leaseExpired(app.db, expired.id)
  await record([result(done)])

  t.equal(await queue.reap(), 1, 'one lease had expired')
  t.same(await delivery(expired.id), { status: 'pending', attempts: 0, leased: false })
  t.same(await delivery(live.id), { status: 'pending', attempts: 0, leased: true }, 'the live lease stays')

  await queue.cancel([expired.id, done.id])
  t.equal((await delivery(expired.id))!.status, 'cancelled')
  t.equal((await delivery(done.id))!.status, 'succeeded', 'what has ended stays as it ended')
  await app.db.tx(q => queue.cancelPending(q, [sub]))
  t.same(await delivery(live.id), { status: 'cancelled', attempts: 0, leased: false }, 'the rest of the subscription')
  await record([result(live)])
  t.equal((await delivery(live.id))!.status, 'cancelled', 'an attempt that ends after a cancel leaves it cancelled')
})

t.test('replay: the ended deliveries of a time range again, at most the limit, once per idempotency key', async t => {
  await emptyQueue(t)
  const i = await install(app)
  const sub = await subscribe(i)
  const since = new Date(Date.now() - 3_600_000)
  await app.db.tx(q => queue.fanOut(q, eventsFor(i, 3, 'invoice.paid', new Date(since.getTime() + 1000))))
  const [a, b, c] = await claim() as [ClaimedDelivery, ClaimedDelivery, ClaimedDelivery]
  await record([result(a, { status: 500, succeeded: false }), result(b, { status: 500, succeeded: false }), result(c)])
  const range = { since, until: new Date(), fingerprint: 'f1' }

  const first = await queue.replay(sub, { ...range, statuses: ['failed'], limit: 10, key: 'k1' })
  t.same(first, { replayed: 2, truncated: false, until: range.until }, 'the two that failed')
  t.same((await claim()).map(d => d.eventId).sort(), [a.eventId, b.eventId].sort(), 'enqueued again')
  t.same(await queue.replay(sub, { ...range, statuses: ['failed'], limit: 10, key: 'k1' }), first,
    'the same key again: the first answer')
  t.equal(await queue.replay(sub, { ...range, fingerprint: 'f2', statuses: ['failed'], limit: 10, key: 'k1' }),
    'conflict', 'the same key for another request')
  t.same(await claim(), [], 'neither enqueued anything')

  t.same(await queue.replay(sub, { ...range, statuses: ['failed'], limit: 10, key: undefined }),
    { replayed: 0, truncated: false, until: range.until }, "a replayed event's latest delivery is the new one")
  const ended = ['succeeded', 'failed', 'cancelled']
  t.same(await queue.replay(sub, { ...range, statuses: ended, limit: 0, key: undefined }),
    { replayed: 0, truncated: true, until: range.until }, 'more than the limit: truncated')
})

t.test('enqueueTest: one event for one subscription, delivered like any', async t => {
  await emptyQueue(t)
  const i = await install(app)
  const sub = await subscribe(i)
  await subscribe(i, ['webhook.test'])
  const e = newEvent({ topic: 'webhook.test', orgRefId: i.orgRefId, entityRefId: i.entityRefId, data: { hi: 1 } })
  const sent = await queue.enqueueTest(e, sub)
  t.equal(sent.eventId, e.id)
  t.same(await targets(e.id), [sub], 'the subscription asked for only')
  await eventually(() => wakeups.includes(e.id), { what: 'the wake-up' })
  t.match(await claim(), [{ id: sent.deliveryId, topic: 'webhook.test', body: e.body }])
})

t.test('backlog and queueBySubscription: what is pending and in flight, per subscription and tenant', async t => {
  await emptyQueue(t)
  const i = await install(app)
  const [s1, s2] = [await subscribe(i), await subscribe(i)]
  await app.db.tx(q => queue.fanOut(q, eventsFor(i, 3)))
  const claimed = await claim(2)

  t.match(await queue.backlog(), { pending: 6 }, 'three events to two subscriptions')
  t.ok((await queue.backlog()).oldestAgeS >= 0)
  const tenant = `${i.orgRefId}/${i.entityRefId}`
  const bySubscription = await queue.queueBySubscription()
  t.equal(bySubscription.length, 2, 'a row per subscription with work')
  t.ok(bySubscription.every(s => s.tenant === tenant && s.pending === 3))
  t.equal(bySubscription.reduce((n, s) => n + s.inFlight, 0), 2, 'the two claimed are in flight')
  t.same(claimed.map(c => c.subscriptionId).sort(), [s1, s2].sort(), 'one each, round robin')
})
