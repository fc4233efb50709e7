// The attempts log's store (plugins/domain/webhooks/attempt-log-store.ts) against the database under test: a
// subscription's log newest first a page at a time, each filter, the bounded scan of a filtered page (how far it
// searched and where the next page goes on), one delivery and its attempts, and the apps' hourly activity that the
// delivery queue's `record` keeps. Attempts come from the queue driven by hand (claim, record), or are written with
// SQL where a long log is needed (test/support/attempt-log.ts).
import t, { type Test } from 'tap'
import { newEvents } from '../../../../../plugins/domain/events/store.js'
import {
  createAttemptLogStore, type AttemptFilter, type AttemptLogEntry, type LogPage, type LogPosition
} from '../../../../../plugins/domain/webhooks/attempt-log-store.js'
import {
  createDeliveryQueueStore, type AttemptResult, type ClaimedDelivery
} from '../../../../../plugins/domain/webhooks/delivery-queue-store.js'
import { createSubscriptionStore } from '../../../../../plugins/domain/webhooks/subscription-store.js'
import { counterUpdates } from '../../../../../plugins/domain/webhooks/worker.js'
import { build, install, unique, type Installed } from '../../../../support/helper.js'
import {
  attemptResult as result, newestFirst, recordAttempts, seedAttempts, type LogSubscription, type Seeded
} from '../../../../support/attempt-log.js'
import { cancelPending } from '../../../../support/queue-time.js'

const app = await build(t, { WEBHOOK_WORKER: 'false' })
const log = createAttemptLogStore(app.db)
const queue = createDeliveryQueueStore(app.db)
const subscriptions = createSubscriptionStore(app.db)
const CAPS = { perSubscription: 100, perTenant: 100 }
const HOUR = 3_600_000
/** A fixed past instant on a whole hour: the seeded logs' times are counted from it. */
const BASE = Date.parse('2026-06-01T12:00:00.000Z')
const at = (seconds: number): Date => new Date(BASE + seconds * 1000)

/** A subscription of the install to `topics`. */
async function subscribe (i: Installed, topics = ['invoice.paid']): Promise<LogSubscription> {
  const s = await subscriptions.insert({
    id: unique('whs'),
    installId: i.installId,
    orgRefId: i.orgRefId,
    entityRefId: i.entityRefId,
    topics,
    targetUrl: 'https://hooks.example.com/x',
    secretCiphertext: 'ciphertext'
  }, 50)
  return { id: s!.id, orgRefId: i.orgRefId, entityRefId: i.entityRefId }
}

const eventsFor = (i: Pick<Installed, 'orgRefId' | 'entityRefId'>, n: number, topic = 'invoice.paid') =>
  newEvents(Array.from({ length: n }, (_, k) => ({
    topic, org_ref_id: i.orgRefId, entity_ref_id: i.entityRefId, data: { n: k }
  })))

/** Each test that claims starts from an empty queue: whatever an earlier one left pending is cancelled. */
async function emptyQueue (t: Test): Promise<void> {
  await cancelPending(app.db)
  t.teardown(() => cancelPending(app.db))
}

const claim = (): Promise<ClaimedDelivery[]> => app.db.tx(q => queue.claim(q, 'test-worker', 100, 60, CAPS))

const record = (results: AttemptResult[]) => app.db.tx(q => queue.record(q, results, counterUpdates(results)))

const page = (
  s: LogSubscription, filter: AttemptFilter = {}, o: { limit?: number, scanLimit?: number, after?: LogPosition } = {}
) =>
  log.page(s.id, { limit: o.limit ?? 100, scanLimit: o.scanLimit ?? 1000, after: o.after, filter })

/** Every page of a filter, followed to its end: the pages as they came. */
async function allPages (
  s: LogSubscription, filter: AttemptFilter, o: { limit: number, scanLimit: number }
): Promise<LogPage[]> {
  const pages: LogPage[] = []
  let after: LogPosition | undefined
  for (;;) {
    const p = await log.page(s.id, { ...o, after, filter })
    pages.push(p)
    if (!p.next) return pages
    after = p.next
    if (pages.length > 50) throw new Error('the pages do not end')
  }
}

const ids = (entries: readonly AttemptLogEntry[]): string[] => entries.map(e => e.id)
const seededIds = (rows: readonly Seeded[]): string[] => rows.map(r => r.attemptId)

t.test('the attempt log: newest first, a page at a time, with the delivery it belongs to', async t => {
  await emptyQueue(t)
  const i = await install(app)
  const sub = await subscribe(i)
  await app.db.tx(q => queue.fanOut(q, eventsFor(i, 3)))
  const claimed = await claim()
  const t0 = Date.now() - 60_000
  await record(claimed.map((c, k) => result(c, { attemptedAt: new Date(t0 + k * 1000), status: 200 + k })))

  const all = await page(sub, {}, { limit: 10 })
  t.same(all.entries.map(a => a.responseStatus), [202, 201, 200], 'newest first')
  t.same([all.next, all.searchedTo], [null, null], 'one page holds it all')
  t.match(all.entries[0], {
    deliveryId: claimed[2]!.id,
    eventId: claimed[2]!.eventId,
    topic: 'invoice.paid',
    attempt: 1,
    attemptedAt: new Date(t0 + 2000),
    durationMs: 3,
    responseBody: 'ok',
    deliveryStatus: 'succeeded',
    outcome: 'succeeded',
    nextAttemptAt: null,
    requestHeaders: { 'webhook-id': claimed[2]!.eventId }
  })
  const first = await page(sub, {}, { limit: 2 })
  t.equal(first.entries.length, 2)
  t.same(first.next, { at: first.entries[1]!.attemptedAt, id: first.entries[1]!.id }, 'next: after the last shown')
  t.equal(first.searchedTo, null)
  const rest = await page(sub, {}, { limit: 2, after: first.next! })
  t.same([...ids(first.entries), ...ids(rest.entries)], ids(all.entries), 'the pages join without a gap or a repeat')
  t.equal(rest.next, null, 'the last page says so')
  t.same((await page(await subscribe(i))).entries, [], "another subscription's log is its own")
})

t.test('what became of each attempt: succeeded, retrying with its next retry on the latest attempt, failed',
  async t => {
    await emptyQueue(t)
    const i = await install(app)
    const sub = await subscribe(i)
    await app.db.tx(q => queue.fanOut(q, eventsFor(i, 3)))
    const claimed = await claim()
    const [retried, exhausted, ok] = claimed as [ClaimedDelivery, ClaimedDelivery, ClaimedDelivery]
    const t0 = Date.now() - 600_000
    const firstRetry = new Date(t0 + HOUR)
    await record([
      result(retried, {
        attemptedAt: new Date(t0),
        status: 0,
        responseBody: null,
        succeeded: false,
        error: 'refused',
        errorClass: 'connection_refused',
        nextAttemptAt: firstRetry
      }),
      result(exhausted, { attemptedAt: new Date(t0 + 1000), status: 500, succeeded: false, error: 'HTTP 500' }),
      result(ok, { attemptedAt: new Date(t0 + 2000) })
    ])
    let entries = (await page(sub)).entries
    t.match(entries, [
      { deliveryId: ok.id, outcome: 'succeeded', deliveryStatus: 'succeeded', nextAttemptAt: null },
      {
        deliveryId: exhausted.id, outcome: 'failed', deliveryStatus: 'failed', responseStatus: 500, nextAttemptAt: null
      },
      {
        deliveryId: retried.id,
        outcome: 'pending',
        deliveryStatus: 'pending',
        responseStatus: 0,
        responseBody: null,
        errorClass: 'connection_refused',
        nextAttemptAt: firstRetry
      }
    ])

    // The second attempt fails too: the retry moves to it; the first attempt of a pending delivery is still pending.
    t.ok(await queue.retryNow(sub.id, retried.id))
    const [again] = await claim()
    const secondRetry = new Date(t0 + 2 * HOUR)
    await record([result(again!, {
      attemptedAt: new Date(t0 + 3000), status: 503, succeeded: false, nextAttemptAt: secondRetry
    })])
    entries = (await page(sub)).entries
    t.match(entries[0], { deliveryId: retried.id, attempt: 2, outcome: 'pending', nextAttemptAt: secondRetry })
    t.match(entries.find(e => e.deliveryId === retried.id && e.attempt === 1),
      { outcome: 'pending', nextAttemptAt: null }, 'the next retry only on the latest attempt')

    // Then it succeeds: its failed attempts read as failed, the success as succeeded, and no retry is shown.
    t.ok(await queue.retryNow(sub.id, retried.id))
    const [last] = await claim()
    await record([result(last!, { attemptedAt: new Date(t0 + 4000) })])
    entries = (await page(sub)).entries
    t.same(entries.filter(e => e.deliveryId === retried.id).map(e => [e.attempt, e.outcome, e.nextAttemptAt]),
      [[3, 'succeeded', null], [2, 'failed', null], [1, 'failed', null]])
  })

t.test('filters: outcome, topic, event, since and until, alone and together', async t => {
  const i = await install(app)
  const sub = await subscribe(i, ['invoice.paid', 'bill.created'])
  const other = await subscribe(i, ['invoice.paid', 'bill.created'])
  const specs = Array.from({ length: 40 }, (_, k) => ({
    at: at(k * 60),
    topic: k % 3 === 0 ? 'bill.created' : 'invoice.paid',
    status: k % 4 === 0 ? 500 : k % 4 === 1 ? 0 : 200,
    pending: k % 8 === 0
  }))
  const seeded = await seedAttempts(app.db, sub, specs)
  // A second attempt of one delivery, a replay's delivery of one event, and the same event in another log.
  const twice = seeded[5]!
  const [second] = await seedAttempts(app.db, sub, [{
    at: at(40 * 60), deliveryId: twice.deliveryId, eventId: twice.eventId, attempt: 2, topic: twice.topic
  }])
  const replayed = seeded[9]!
  const [replay] = await seedAttempts(app.db, sub, [{
    at: at(41 * 60), eventId: replayed.eventId, topic: replayed.topic
  }])
  await seedAttempts(app.db, other, [{ at: at(42 * 60), eventId: replayed.eventId, topic: replayed.topic }])
  // The outcome of the delivery attempted twice is what its latest attempt made of it.
  const rows = newestFirst([...seeded, second!, replay!]).map((r): Seeded => r.deliveryId === twice.deliveryId
    ? { ...r, outcome: r.status >= 200 && r.status < 300 ? 'succeeded' : 'failed' }
    : r)

  const check = async (filter: AttemptFilter, keep: (r: (typeof rows)[number]) => boolean, what: string) => {
    const expected = rows.filter(keep)
    const got = await page(sub, filter)
    t.same(ids(got.entries), seededIds(expected), `${what}: ${expected.length} attempts, newest first`)
    t.same([got.next, got.searchedTo], [null, null], `${what}: one page, searched to the end`)
  }
  await check({}, () => true, 'no filter')
  for (const outcome of ['succeeded', 'failed', 'pending'] as const) {
    await check({ outcome }, r => r.outcome === outcome, outcome)
  }
  t.ok(rows.some(r => r.outcome === 'pending') && rows.some(r => r.outcome === 'failed'), 'both kinds of failure')
  await check({ topic: 'bill.created' }, r => r.topic === 'bill.created', 'topic')
  await check({ topic: 'customer.updated' }, () => false, 'a topic without attempts')
  await check({ eventId: twice.eventId }, r => r.eventId === twice.eventId, 'an event attempted twice')
  await check({ eventId: replayed.eventId }, r => r.eventId === replayed.eventId,
    "a replayed event: both deliveries, not another subscription's")
  t.equal((await page(sub, { eventId: replayed.eventId })).entries.length, 2)
  await check({ eventId: 'evt_unknown' }, () => false, 'an unknown event')
  await check({ since: at(10 * 60) }, r => r.at >= at(10 * 60), 'since: at or after')
  await check({ until: at(10 * 60) }, r => r.at < at(10 * 60), 'until: before')
  await check({ since: at(10 * 60), until: at(20 * 60) }, r => r.at >= at(10 * 60) && r.at < at(20 * 60),
    'since and until')
  await check({ since: at(10 * 60 + 1), until: at(11 * 60) }, () => false, 'a range between two attempts')
  await check({ outcome: 'failed', topic: 'invoice.paid', since: at(5 * 60), until: at(35 * 60) },
    r => r.outcome === 'failed' && r.topic === 'invoice.paid' && r.at >= at(5 * 60) && r.at < at(35 * 60),
    'outcome, topic and time together')
  await check({ outcome: 'succeeded', eventId: twice.eventId },
    r => r.eventId === twice.eventId && r.outcome === 'succeeded',
    'outcome and event together')
})

t.test('a filtered page checks at most scanLimit attempts, says how far it searched and goes on from there',
  async t => {
    const i = await install(app)
    const sub = await subscribe(i)
    // 25 attempts a minute apart, newest first at index 0; indexes 8, 9 and 10 share one instant (the order is then
    // by id), so that a scan window ends inside the tie. Failed: 2, 14, 15, 16, 17 and 24.
    const failedAt = new Set([2, 14, 15, 16, 17, 24])
    const specs = Array.from({ length: 25 }, (_, k) => ({
      at: at(-(k >= 8 && k <= 10 ? 8 : k) * 60),
      status: failedAt.has(k) ? 500 : 200
    }))
    const rows = newestFirst(await seedAttempts(app.db, sub, specs))
    const failed = rows.filter(r => r.status === 500)
    const o = { limit: 3, scanLimit: 10 }

    const pages = await allPages(sub, { outcome: 'failed' }, o)
    t.same(pages.map(p => p.entries.length), [1, 3, 2], 'a short page, a full one, the rest')
    t.same(pages.flatMap(p => ids(p.entries)), seededIds(failed), 'every failed attempt once, newest first')
    t.same(pages[0]!.searchedTo, rows[9]!.at, 'the first page searched ten attempts')
    t.same(pages[0]!.next, { at: rows[9]!.at, id: rows[9]!.attemptId }, 'and goes on after the tenth')
    t.equal(pages[1]!.searchedTo, null, 'a full page did not end early')
    t.same(pages[1]!.next, { at: pages[1]!.entries[2]!.attemptedAt, id: pages[1]!.entries[2]!.id })
    t.same([pages[2]!.next, pages[2]!.searchedTo], [null, null], 'the log ends within the last scan')

    const nothing = await allPages(sub, { topic: 'bill.created' }, o)
    t.same(nothing.map(p => p.entries.length), [0, 0, 0], 'nothing matches: empty pages')
    t.same(nothing.map(p => p.searchedTo), [rows[9]!.at, rows[19]!.at, null], 'each says how far it searched')
    t.same(nothing.map(p => p.next), [{ at: rows[9]!.at, id: rows[9]!.attemptId },
      { at: rows[19]!.at, id: rows[19]!.attemptId }, null])

    // Exactly scanLimit attempts left and none matching: the page cannot know the log ends there.
    const tail = await page(sub, { outcome: 'pending' }, { ...o, after: { at: rows[14]!.at, id: rows[14]!.attemptId } })
    t.same([tail.entries, tail.searchedTo], [[], rows[24]!.at])
    const after = await page(sub, { outcome: 'pending' }, { ...o, after: tail.next! })
    t.same([after.entries, after.next, after.searchedTo], [[], null, null], 'and the next one finds the end')

    // Bounds of time and event are ranges, not a scan: no bound on what they look at.
    const ranged = await page(sub, { since: at(-23 * 60) }, { limit: 20, scanLimit: 10 })
    t.same(ids(ranged.entries), seededIds(rows.slice(0, 20)), 'since alone: a full page past the scan limit')
    t.equal(ranged.searchedTo, null)
    t.same(ranged.next, { at: rows[19]!.at, id: rows[19]!.attemptId })
    const ranged2 = await page(sub, { since: at(-23 * 60) }, { limit: 20, scanLimit: 10, after: ranged.next! })
    t.same(ids(ranged2.entries), seededIds(rows.slice(20, 24)), 'the rest of the range; the attempt before it is out')
    const byEvent = await page(sub, { eventId: rows[24]!.eventId }, { limit: 3, scanLimit: 10 })
    t.same(ids(byEvent.entries), [rows[24]!.attemptId], 'an event filter finds an attempt past the scan limit')
    // Within a range the scan counts only the attempts in it.
    const failedInRange = await allPages(sub, { outcome: 'failed', since: at(-17 * 60), until: at(-13 * 60) }, o)
    t.same(failedInRange.flatMap(p => ids(p.entries)), seededIds(failed.filter(r => r.at >= at(-17 * 60) &&
      r.at < at(-13 * 60))))
    t.equal(failedInRange.length, 2, 'three, then one: a page more only because the first was full')
  })

t.test('one delivery with its event, and its attempts newest first; only through its own subscription', async t => {
  await emptyQueue(t)
  const i = await install(app)
  const sub = await subscribe(i)
  const other = await subscribe(i, ['bill.created'])
  const [event] = eventsFor(i, 1)
  await app.db.tx(q => queue.fanOut(q, [event!]))
  const [c] = await claim()
  const t0 = Date.now() - 60_000
  const retryAt = new Date(t0 + HOUR)
  await record([result(c!, { attemptedAt: new Date(t0), status: 500, succeeded: false, nextAttemptAt: retryAt })])

  const pending = await log.delivery(sub.id, c!.id)
  t.match(pending, {
    id: c!.id, eventId: event!.id, topic: 'invoice.paid', status: 'pending', attempts: 1, nextAttemptAt: retryAt
  })
  t.equal(pending!.body, event!.body, 'the exact bytes every attempt sent')
  t.type(pending!.createdAt, Date)
  t.equal(await log.delivery(other.id, c!.id), undefined, 'not through another subscription')
  t.equal(await log.delivery(sub.id, 'dlv_unknown'), undefined)

  t.ok(await queue.retryNow(sub.id, c!.id))
  const [again] = await claim()
  await record([result(again!, { attemptedAt: new Date(t0 + 1000), responseBody: '<b>bold</b>' })])
  const done = await log.delivery(sub.id, c!.id)
  t.match(done, { status: 'succeeded', attempts: 2, nextAttemptAt: null }, 'no next attempt once it has ended')
  const attempts = await log.attemptsOf(c!.id)
  t.same(attempts.map(a => [a.attempt, a.responseStatus, a.outcome]), [[2, 200, 'succeeded'], [1, 500, 'failed']])
  t.equal(attempts[0]!.responseBody, '<b>bold</b>', 'the answer kept as it came')
  t.same(await log.attemptsOf('dlv_unknown'), [])
})

t.test("activity: record keeps each app's succeeded and failed attempts and exhausted deliveries per hour", async t => {
  const a = await install(app)
  const b = await install(app)
  const subA = await subscribe(a)
  const subA2 = await subscribe(await install(app, {
    app: { clientId: a.clientId, clientSecret: a.clientSecret, appSlug: a.appSlug, ownerToken: a.ownerToken }
  }))
  const subB = await subscribe(b)
  const hour = Date.parse('2026-06-01T10:00:00.000Z')
  const inHour = (minutes: number, h = hour) => new Date(h + minutes * 60_000)

  await recordAttempts(app.db, subA, [
    { at: inHour(1) }, { at: inHour(2) },
    { at: inHour(3), succeeded: false, retry: true },
    { at: inHour(59.99), succeeded: false },
    { at: inHour(30, hour - HOUR) },
    { at: inHour(0, hour + HOUR), succeeded: false, status: 410 }
  ])
  // Another flush in the same hour, and another install of the same app: added to the same row.
  await recordAttempts(app.db, subA, [{ at: inHour(10) }])
  await recordAttempts(app.db, subA2, [{ at: inHour(20), succeeded: false, status: 0 }])
  await recordAttempts(app.db, subB, [{ at: inHour(5), succeeded: false }])

  const figures = (rows: Awaited<ReturnType<typeof log.activity>>) =>
    rows.map(r => [r.clientId === a.clientId ? 'A' : r.clientId === b.clientId ? 'B' : r.clientId,
      r.hour.toISOString(), r.succeeded, r.failed, r.exhausted])
  t.same(figures(await log.activity([a.clientId], new Date(hour - HOUR))), [
    ['A', '2026-06-01T09:00:00.000Z', 1, 0, 0],
    ['A', '2026-06-01T10:00:00.000Z', 3, 3, 2],
    ['A', '2026-06-01T11:00:00.000Z', 0, 1, 1]
  ], 'per hour, oldest first: a retried failure is failed, not exhausted; 410 is the end of a delivery')
  t.same(figures(await log.activity([a.clientId], new Date(hour))).map(r => r[1]),
    ['2026-06-01T10:00:00.000Z', '2026-06-01T11:00:00.000Z'], 'from `since` on')
  const both = figures(await log.activity([b.clientId, a.clientId], new Date(hour)))
  t.same(both.filter(r => r[0] === 'B'), [['B', '2026-06-01T10:00:00.000Z', 0, 1, 1]], "each app's own")
  t.equal(both.length, 3)
  t.same(await log.activity([], new Date(0)), [], 'no apps, no figures')
  t.same(await log.activity([unique('app')], new Date(0)), [], 'an app without activity has no rows')
})

t.test("activity hours are UTC hours, whatever the database session's time zone", async t => {
  const i = await install(app)
  const sub = await subscribe(i)
  const hour = Date.parse('2026-06-02T10:00:00.000Z')
  const rows = await recordAttempts(app.db, sub, [{ at: new Date(hour + 50 * 60_000) }])
  // The same recording in a session whose zone is half an hour off UTC (India): the hour is still 10:00 UTC.
  const [delivery] = await app.db.query<{ id: string }>(
    `insert into webhook_deliveries (id, event_id, subscription_id, locked_by, locked_until)
     select $1, d.event_id, d.subscription_id, 'test', now() + interval '1 hour' from webhook_deliveries d
      where d.id = $2 returning id`,
    [unique('dlv'), rows[0]!.deliveryId])
  const again: AttemptResult = { ...rows[0]!, deliveryId: delivery!.id, attemptedAt: new Date(hour + 10 * 60_000) }
  await app.db.tx(async q => {
    await q.query("set local time zone 'Asia/Kolkata'")
    await queue.record(q, [again], counterUpdates([again]))
  })
  const activity = await log.activity([i.clientId], new Date(hour - 3 * HOUR))
  t.same(activity.map(r => [r.hour.toISOString(), r.succeeded]), [['2026-06-02T10:00:00.000Z', 2]])
})
