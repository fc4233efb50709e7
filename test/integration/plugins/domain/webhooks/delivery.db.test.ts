import { createHmac } from 'node:crypto'
import t from 'tap'
import type { AppInstance } from '../../../../../app.js'
import { serviceSignature } from '../../../../../plugins/domain/webhooks/signing.js'
import { WAKEUP_CHANNEL } from '../../../../../plugins/domain/webhooks/delivery-queue-store.js'
import {
  bearer, build, eventually, freshDatabase, install, TEST_DATABASE_URL, type Installed
} from '../../../../support/helper.js'
import { selfSigned, startReceiver } from '../../../../support/receiver.js'
import { bill, invoice, nth } from '../../../../support/records.js'
import {
  hooksUrl as hooks, publishRaw as publish, receiverEnv, settled, subscribeRaw as subscribe
} from '../../../../support/webhooks.js'
import { retriesDueNow } from '../../../../support/queue-time.js'

// One app for the file. Retries wait an hour (the jitter keeps them 48 to 72 minutes away), so a failed delivery
// stays pending until a test makes its retry due (dueNow); three failures disable at once. An attempt has the
// default time-out: on a loaded machine a slow delivery that succeeds must not turn into a time-out.
const caFile = selfSigned().caFile
const settings = {
  WEBHOOK_RETRY_SCHEDULE: '3600,3600,3600,3600',
  WEBHOOK_DISABLE_AFTER_FAILURES: '3',
  WEBHOOK_DISABLE_AFTER_HOURS: '0'
}
const app = await build(t, receiverEnv(caFile, settings))

async function listing (app: AppInstance, i: Installed, query = '') {
  return (await app.inject({ method: 'GET', url: hooks(i) + query, headers: bearer(i.accessToken) })).json()
    .subscriptions
}

/**
 * Once the subscription's delivery has had `attempts` attempts recorded and waits for its retry, makes that retry
 * due now and wakes the worker, as if the hour had passed.
 */
async function dueNow (app: AppInstance, subscriptionId: string, attempts: number): Promise<void> {
  await eventually(async () => (await app.db.query<{ attempts: number, status: string, locked: boolean }>(
    'select attempts, status, locked_until is not null as locked from webhook_deliveries where subscription_id = $1',
    [subscriptionId])), {
    until: rows => rows.length === 1 && rows[0]!.attempts === attempts && rows[0]!.status === 'pending' &&
      !rows[0]!.locked,
    what: `attempt ${attempts} recorded, its retry pending`
  })
  await retriesDueNow(app.db, subscriptionId)
  await app.db.query('select pg_notify($1, \'\')', [WAKEUP_CHANNEL])
}

t.test('the contract test vector', async t => {
  t.equal(
    serviceSignature("It's a Secret to Everybody", 'Hello, World!'),
    '757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17'
  )
})

t.test('subscriptions: exact shapes, ownership, soft delete', async t => {
  const receiver = await startReceiver(t)
  const i = await install(app)

  const created = await subscribe(app, i, { topics: ['invoice.paid', 'bill.created'], target_url: receiver.url })
  t.equal(created.statusCode, 201)
  const c = created.json()
  t.same(Object.keys(c), ['id', 'topics', 'target_url', 'signing_secret', 'created_at'])
  t.same(c.topics, ['invoice.paid', 'bill.created'])
  t.equal(c.target_url, receiver.url)
  t.match(c.signing_secret, /^whsec_[A-Za-z0-9+/]{43}=$/, 'whsec_ and 32 bytes in standard base64')
  t.match(c.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)

  const list = await listing(app, i)
  t.same(list, [
    {
      _id: c.id,
      Topics: ['invoice.paid', 'bill.created'],
      TargetUrl: receiver.url,
      IsActive: true,
      LastDeliveryAt: null,
      LastDeliveryStatus: null,
      ConsecutiveFailures: 0,
      createdAt: c.created_at
    }
  ])
  const raw = await app.inject({ method: 'GET', url: hooks(i), headers: bearer(i.accessToken) })
  t.notMatch(raw.body, c.signing_secret, 'the secret is never listed')
  t.notMatch(raw.body, 'signing_secret')

  // Another app installed in the same tenant sees none of it and can delete none of it.
  const other = await install(app, { orgRefId: i.orgRefId, entityRefId: i.entityRefId })
  t.same(await listing(app, other), [])
  const theirs = await app.inject({
    method: 'DELETE',
    url: `${hooks(other)}/${c.id}`,
    headers: bearer(other.accessToken)
  })
  t.same(theirs.json(), { ok: true, modified: 0 })
  const log = await app.inject({
    method: 'GET',
    url: `${hooks(other)}/${c.id}/deliveries`,
    headers: bearer(other.accessToken)
  })
  t.equal(log.statusCode, 404)
  t.equal((await listing(app, i)).length, 1, 'still there')

  const del = await app.inject({ method: 'DELETE', url: `${hooks(i)}/${c.id}`, headers: bearer(i.accessToken) })
  t.equal(del.statusCode, 200)
  t.same(del.json(), { ok: true, modified: 1 })
  t.same((await app.inject({ method: 'DELETE', url: `${hooks(i)}/${c.id}`, headers: bearer(i.accessToken) })).json(), {
    ok: true,
    modified: 0
  })
  t.same(
    (await app.inject({ method: 'DELETE', url: `${hooks(i)}/whs_unknown`, headers: bearer(i.accessToken) })).json(),
    { ok: true, modified: 0 }
  )
  t.same(await listing(app, i), [], 'gone from the listing')
  const inactive = await listing(app, i, '?include_inactive=true')
  t.match(inactive, [{ _id: c.id, IsActive: false, DisabledReason: 'deleted' }], 'kept for audit')

  const crossTenant = await app.inject({
    method: 'GET',
    url: `/public/v1/orgs/x/entities/${i.entityRefId}/webhooks`,
    headers: bearer(i.accessToken)
  })
  t.equal(crossTenant.statusCode, 403)
  t.equal(crossTenant.json().error, 'tenant_mismatch')
})

t.test('subscription validation', async t => {
  const i = await install(app)
  // Sent as written: subscribe() would add the topics that one of these leaves out.
  const check = async (body: object, status: number, error: string, extra?: Record<string, unknown>) => {
    const res = await app.inject({ method: 'POST', url: hooks(i), headers: bearer(i.accessToken), payload: body })
    t.equal(res.statusCode, status, JSON.stringify(body))
    t.match(res.json(), { error, ...extra }, JSON.stringify(body))
  }
  await check({ topics: ['invoice.paid'], target_url: 'http://hooks.example.com/x' }, 400, 'invalid_target_url')
  await check({ topics: ['invoice.paid'], target_url: 'not a url' }, 400, 'invalid_target_url')
  await check(
    { topics: ['invoice.paid'], target_url: 'https://user:pw@hooks.example.com/x' },
    400,
    'invalid_target_url'
  )
  await check(
    { topics: ['invoice.paid'], target_url: `https://hooks.example.com/${'a'.repeat(2050)}` },
    400,
    'validation_error'
  )
  await check(
    { topics: ['invoice.paid', 'invoice.deleted', 'nope'], target_url: 'https://hooks.example.com/x' },
    400,
    'unknown_topic',
    { unknown: ['invoice.deleted', 'nope'] }
  )
  await check({ topics: [], target_url: 'https://hooks.example.com/x' }, 400, 'validation_error')
  await check(
    { topics: ['invoice.paid', 'invoice.paid'], target_url: 'https://hooks.example.com/x' },
    400,
    'validation_error'
  )
  await check(
    { topics: ['invoice.paid'], target_url: 'https://hooks.example.com/x', secret: 'mine' },
    400,
    'validation_error'
  )
  await check({ topics: 'invoice.paid', target_url: 'https://hooks.example.com/x' }, 400, 'validation_error')
  await check({ target_url: 'https://hooks.example.com/x' }, 400, 'validation_error')

  const planned = await subscribe(app, i, {
    topics: ['work_order.released', 'lot.created'],
    target_url: 'https://hooks.example.com/x'
  })
  t.equal(planned.statusCode, 201, 'planned topics are accepted')
  for (let n = 1; n < 50; n++) {
    const res = await subscribe(app, i, { topics: ['invoice.paid'], target_url: `https://hooks.example.com/${n}` })
    t.equal(res.statusCode, 201)
  }
  await check({ topics: ['invoice.paid'], target_url: 'https://hooks.example.com/51' }, 422, 'limit_exceeded')
})

t.test('events in: authentication, topics, idempotency', async t => {
  const receiver = await startReceiver(t)
  const i = await install(app)
  await subscribe(app, i, { topics: ['invoice.paid', 'work_order.released'], target_url: receiver.url })
  const event = {
    topic: 'invoice.paid',
    org_ref_id: i.orgRefId,
    entity_ref_id: i.entityRefId,
    data: invoice({ id: 'inv_1' })
  }

  const noToken = await app.inject({
    method: 'POST',
    url: '/events',
    headers: { 'content-type': 'application/json' },
    payload: JSON.stringify(event)
  })
  t.equal(noToken.statusCode, 401)
  t.equal(noToken.json().error, 'invalid_token')
  const marketplace = await app.inject({
    method: 'POST',
    url: '/events',
    headers: { ...bearer(i.accessToken), 'content-type': 'application/json' },
    payload: JSON.stringify(event)
  })
  t.equal(marketplace.statusCode, 401, 'an access token is not the events token')

  const planned = await publish(app, { ...event, topic: 'work_order.released' })
  t.equal(planned.statusCode, 422)
  t.equal(planned.json().error, 'topic_not_emitted')
  const unknown = await publish(app, { ...event, topic: 'invoice.exploded' })
  t.equal(unknown.statusCode, 400)
  t.same(unknown.json().unknown, ['invoice.exploded'])

  const first = await publish(app, { ...event, id: 'producer-key-1' })
  t.equal(first.statusCode, 202)
  t.match(first.json(), { id: /^evt_/, deliveries: 1 })
  const again = await publish(app, { ...event, id: 'producer-key-1' })
  t.same(again.json(), first.json(), 'the same id answers the first result')
  const changed = [{ data: invoice({ id: 'inv_1', number: 'INV-CHANGED' }) }, { topic: 'invoice.updated' },
    { entity_ref_id: 'ent_other' }]
  for (const other of changed) {
    const conflict = await publish(app, { ...event, id: 'producer-key-1', ...other })
    t.equal(conflict.statusCode, 409, JSON.stringify(other))
    t.same(conflict.json(), {
      error: 'event_conflict',
      message: 'An event with this id was already accepted with a different topic, tenant or data.'
    })
  }
  await receiver.waitFor(1)
  await settled(app, i)
  t.equal(receiver.received.length, 1, 'one delivery for a duplicate event id')
  t.same(JSON.parse(receiver.received[0]!.body.toString()).data, event.data, 'the first event\'s record')
})

t.test('events in batches: one transaction, results in order, all or nothing', async t => {
  const receiver = await startReceiver(t)
  const i = await install(app)
  await subscribe(app, i, { topics: ['invoice.paid', 'bill.created'], target_url: receiver.url })
  // The n-th event carries the n-th invoice, or the n-th bill on bill.created.
  const event = (n: number, extra: Record<string, unknown> = {}) => ({
    topic: 'invoice.paid',
    org_ref_id: i.orgRefId,
    entity_ref_id: i.entityRefId,
    data: extra.topic === 'bill.created' ? bill(nth('bill', n)) : invoice(nth('inv', n)),
    ...extra
  })
  const stored = async () =>
    (await app.db.query<{ n: number }>('select count(*)::int as n from webhook_events'))[0]!.n

  // Producer ids out of their sorted order (the store writes them sorted), so that the order of the results shows.
  const batch = await publish(app, [
    event(1, { id: 'key-3' }), event(2, { id: 'key-2', topic: 'bill.created' }), event(3), event(4, { id: 'key-1' })
  ])
  t.equal(batch.statusCode, 202)
  const results = batch.json() as Array<{ id: string, deliveries: number }>
  t.equal(results.length, 4, 'one result per event')
  t.equal(new Set(results.map(r => r.id)).size, 4)
  const sent = await app.db.query<{ id: string, producer_id: string | null, record: string }>(
    "select id, producer_id, body::jsonb -> 'data' ->> 'id' as record from webhook_events")
  t.same(results.map(r => sent.find(e => e.id === r.id)?.record), ['inv_00001', 'bill_00002', 'inv_00003', 'inv_00004'],
    'each result in the place of its event')
  t.same(results.map(r => r.deliveries), [1, 1, 1, 1])
  await receiver.waitFor(4)
  t.same(new Set(receiver.received.map(r => JSON.parse(r.body.toString()).id)), new Set(results.map(r => r.id)),
    'each event of the batch is delivered')

  const again = await publish(app, [event(4), event(2, { id: 'key-2', topic: 'bill.created' })])
  t.equal(again.statusCode, 202)
  t.same(again.json()[1], results[1], 'an id seen before answers its first result, inside a batch too')
  const before = await stored()
  const conflict = await publish(app, [event(5), event(6), event(9, { id: 'key-2', topic: 'bill.created' })])
  t.equal(conflict.statusCode, 409)
  t.equal(conflict.json().error, 'event_conflict')
  t.equal(await stored(), before, 'a conflict stores none of the batch')

  const mixed = await publish(app, [event(7), event(8, { topic: 'invoice.exploded' }), event(9, { topic: 'nope' })])
  t.equal(mixed.statusCode, 400)
  t.same(mixed.json().unknown, ['invoice.exploded', 'nope'], 'every unknown topic is named')
  t.equal((await publish(app, [event(7), event(8, { topic: 'work_order.released' })])).statusCode, 422)
  t.equal(await stored(), before, 'a bad topic stores none of the batch')

  const twice = await publish(app, [event(10, { id: 'key-10' }), event(10, { id: 'key-10' })])
  t.equal(twice.statusCode, 202)
  t.same(twice.json()[1], twice.json()[0], 'the same event twice in one batch is stored once')
  const before2 = await stored()
  const clash = await publish(app, [event(20), event(11, { id: 'key-11' }), event(12, { id: 'key-11' })])
  t.equal(clash.statusCode, 409, 'the same id with other content in one batch is a conflict')
  t.equal(await stored(), before2, 'and stores none of the batch')

  // Two producers sending overlapping ids in opposite orders, at once: no deadlock, every answer the first result.
  const overlapping = await Promise.all(Array.from({ length: 10 }, (_, k) => publish(app, k % 2 === 0
    ? [event(30, { id: 'key-30' }), event(31, { id: 'key-31' })]
    : [event(31, { id: 'key-31' }), event(30, { id: 'key-30' })])))
  t.same(overlapping.map(r => r.statusCode), Array(10).fill(202))
  const firstOf30 = overlapping[0]!.json()[0].id
  t.ok(overlapping.every((r, k) => r.json()[k % 2 === 0 ? 0 : 1].id === firstOf30), 'one event key-30, one id')

  const tooMany = await publish(app, Array.from({ length: 101 }, (_, n) => event(n)))
  t.equal(tooMany.statusCode, 400)
  t.same(tooMany.json().details, [{ location: 'body', path: '/', message: 'must NOT have more than 100 items' }])
  const empty = await publish(app, [])
  t.same(empty.json().details, [{ location: 'body', path: '/', message: 'must NOT have fewer than 1 items' }])
  const badItem = await publish(app, [event(1), { topic: 'invoice.paid' }])
  t.equal(badItem.statusCode, 400)
  t.same(badItem.json().details.map((d: { path: string }) => d.path), ['/1', '/1', '/1'],
    'the error names the bad item, and only what is wrong with it')
  const badOne = await publish(app, { topic: 'invoice.paid' })
  t.same(badOne.json().details.map((d: { message: string }) => d.message), [
    "must have required property 'org_ref_id'", "must have required property 'entity_ref_id'",
    "must have required property 'data'"
  ], 'one event is still validated as one event')
})

t.test('a delivery: exact bytes, signatures, headers, counters', async t => {
  const receiver = await startReceiver(t)
  const i = await install(app)
  const sub = (await subscribe(app, i, { topics: ['invoice.paid'], target_url: receiver.url })).json()
  const data = invoice({
    id: 'inv_9',
    customer: { id: 'cus_9', name: 'Ünïcødé ✓ "quoted"' },
    line_items: [
      { description: 'unicode ✓ "quoted" \\ back', quantity: '1', unit_amount: '100.00', tax_amount: '0.00' }
    ]
  })
  const accepted = (
    await publish(app, { topic: 'invoice.paid', org_ref_id: i.orgRefId, entity_ref_id: i.entityRefId, data })
  ).json()
  const [got] = await receiver.waitFor(1)
  const r = got!

  t.equal(r.headers['content-type'], 'application/json')
  t.equal(r.headers['user-agent'], 'marketplace-webhooks/0.7.0')
  t.equal(r.headers['x-service-topic'], 'invoice.paid')
  t.equal(r.headers['x-service-event-id'], accepted.id)
  t.equal(r.headers['x-service-delivery-attempt'], '1')
  const expected = createHmac('sha256', Buffer.from(sub.signing_secret, 'utf8')).update(r.body).digest('hex')
  t.equal(r.headers['x-service-signature'], expected, 'HMAC of the raw bytes received, keyed with the secret string')
  const ts = Number(r.headers['webhook-timestamp'])
  t.equal(r.headers['webhook-id'], accepted.id)
  t.ok(Math.abs(ts - Date.now() / 1000) < 60)
  const key = Buffer.from(sub.signing_secret.slice('whsec_'.length), 'base64')
  t.equal(key.length, 32, 'the secret is whsec_ and 32 bytes in standard base64')
  const standard = createHmac('sha256', key).update(`${accepted.id}.${ts}.`).update(r.body).digest('base64')
  t.equal(r.headers['webhook-signature'], `v1,${standard}`, 'Standard Webhooks: keyed with the decoded bytes')

  const body = JSON.parse(r.body.toString('utf8'))
  t.same(Object.keys(body), ['id', 'topic', 'created_at', 'org_ref_id', 'entity_ref_id', 'data'])
  t.match(body, { id: accepted.id, topic: 'invoice.paid', org_ref_id: i.orgRefId, entity_ref_id: i.entityRefId })
  t.same(body.data, data, 'data is the record as sent')
  t.match(body.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)

  const [item] = await eventually(
    () => listing(app, i),
    { until: l => l[0]?.LastDeliveryStatus === 200 }
  )
  t.equal(item.LastDeliveryStatus, 200)
  t.equal(item.ConsecutiveFailures, 0)
  t.match(item.LastDeliveryAt, /Z$/)

  const log = await app.inject({
    method: 'GET',
    url: `${hooks(i)}/${sub.id}/deliveries`,
    headers: bearer(i.accessToken)
  })
  t.match(log.json().attempts, [
    {
      event_id: accepted.id,
      topic: 'invoice.paid',
      attempt: 1,
      response_status: 200,
      response_body: 'ok',
      delivery_status: 'succeeded'
    }
  ])
})

t.test('a 500 then a success: retried with the same bytes, and the success resets the counter', async t => {
  let calls = 0
  const receiver = await startReceiver(t, (_r, res) => {
    calls++
    res.statusCode = calls === 1 ? 500 : 204
    res.end(calls === 1 ? 'boom' : '')
  })
  const i = await install(app)
  const sub = (await subscribe(app, i, { topics: ['bill.created'], target_url: receiver.url })).json()
  await publish(app, {
    topic: 'bill.created',
    org_ref_id: i.orgRefId,
    entity_ref_id: i.entityRefId,
    data: bill({ id: 'b1' })
  })
  await dueNow(app, sub.id, 1)
  const [a, b] = await receiver.waitFor(2)
  t.same(a!.body, b!.body, 'the same bytes on the retry')
  t.equal(a!.headers['x-service-event-id'], b!.headers['x-service-event-id'])
  t.equal(a!.headers['x-service-signature'], b!.headers['x-service-signature'])
  t.equal(b!.headers['x-service-delivery-attempt'], '2')
  const [item] = await eventually(
    () => listing(app, i),
    { until: l => l[0]?.LastDeliveryStatus === 204 }
  )
  t.equal(item.ConsecutiveFailures, 0, 'the success reset the count')
  const log = (
    await app.inject({ method: 'GET', url: `${hooks(i)}/${sub.id}/deliveries`, headers: bearer(i.accessToken) })
  ).json().attempts
  t.match(
    log,
    [
      { attempt: 2, response_status: 204 },
      { attempt: 1, response_status: 500, response_body: 'boom' }
    ],
    'newest first'
  )
})

t.test('a 3xx is a failure and is not followed', async t => {
  const receiver = await startReceiver(t, (r, res) => {
    if (r.path === '/hooks') {
      res.statusCode = 302
      res.setHeader('location', '/elsewhere')
      res.end()
    } else res.end('followed')
  })
  const i = await install(app)
  await subscribe(app, i, { topics: ['invoice.paid'], target_url: receiver.url })
  await publish(app, { topic: 'invoice.paid', org_ref_id: i.orgRefId, entity_ref_id: i.entityRefId, data: invoice() })
  const [item] = await eventually(
    () => listing(app, i),
    { until: l => l[0]?.LastDeliveryStatus === 302 }
  )
  t.equal(item.LastDeliveryStatus, 302)
  t.equal(item.ConsecutiveFailures, 1)
  t.same(
    receiver.received.map(r => r.path),
    ['/hooks'],
    'the redirect was not followed'
  )
})

t.test('automatic disabling after consecutive failures (thresholds lowered by config)', async t => {
  const receiver = await startReceiver(t, (_r, res) => {
    res.statusCode = 503
    res.end()
  })
  const i = await install(app)
  const sub = (await subscribe(app, i, { topics: ['invoice.paid'], target_url: receiver.url })).json()
  await publish(app, { topic: 'invoice.paid', org_ref_id: i.orgRefId, entity_ref_id: i.entityRefId, data: invoice() })
  await dueNow(app, sub.id, 1)
  await dueNow(app, sub.id, 2)
  const all = await eventually(
    () => listing(app, i, '?include_inactive=true'),
    { until: l => l[0]?.IsActive === false }
  )
  t.match(all, [
    { IsActive: false, DisabledReason: 'consecutive_failures', ConsecutiveFailures: 3, LastDeliveryStatus: 503 }
  ])
  t.same(await listing(app, i), [], 'no longer listed as active')
  await settled(app, i)
  const [delivery] = await app.db.query<{ status: string, attempts: number }>(
    'select status, attempts from webhook_deliveries where subscription_id = $1', [sub.id])
  t.same(delivery, { status: 'cancelled', attempts: 3 }, 'the retry that the schedule still had is cancelled')
  t.equal(receiver.received.length, 3, 'no attempt after disabling')
})

t.test('a 410 disables at once and cancels what is pending', async t => {
  const receiver = await startReceiver(t, (_r, res) => {
    res.statusCode = 410
    res.end()
  })
  const i = await install(app)
  const sub = (await subscribe(app, i, { topics: ['invoice.paid'], target_url: receiver.url })).json()
  await publish(app, { topic: 'invoice.paid', org_ref_id: i.orgRefId, entity_ref_id: i.entityRefId, data: invoice() })
  const all = await eventually(
    () => listing(app, i, '?include_inactive=true'),
    { until: l => l[0]?.IsActive === false }
  )
  t.match(all, [{ IsActive: false, DisabledReason: 'gone', ConsecutiveFailures: 1, LastDeliveryStatus: 410 }])
  const log = (
    await app.inject({ method: 'GET', url: `${hooks(i)}/${sub.id}/deliveries`, headers: bearer(i.accessToken) })
  ).json().attempts
  t.match(log, [{ response_status: 410, delivery_status: 'failed' }])
  const after = await publish(app, {
    topic: 'invoice.paid',
    org_ref_id: i.orgRefId,
    entity_ref_id: i.entityRefId,
    data: invoice()
  })
  t.equal(after.json().deliveries, 0)
})

t.test('an app whose API key is off gets no deliveries: none fanned out, pending ones cancelled', async t => {
  const receiver = await startReceiver(t, (_r, res) => {
    res.statusCode = 500
    res.end()
  })
  const i = await install(app)
  const sub = (await subscribe(app, i, { topics: ['invoice.paid'], target_url: receiver.url })).json()
  const event = { topic: 'invoice.paid', org_ref_id: i.orgRefId, entity_ref_id: i.entityRefId, data: invoice() }
  t.equal((await publish(app, event)).json().deliveries, 1)
  await receiver.waitFor(1)
  const disabled = await app.inject({
    method: 'POST', url: `/apps/${i.clientId}/api-key/disable`, headers: bearer(i.ownerToken)
  })
  t.equal(disabled.statusCode, 200)
  t.equal((await publish(app, event)).json().deliveries, 0, 'not fanned out while the key is off')
  await dueNow(app, sub.id, 1)
  const statuses = async () => (await app.db.query<{ status: string }>(
    'select status from webhook_deliveries where subscription_id = $1', [sub.id])).map(r => r.status)
  t.same(await eventually(statuses, { until: s => s[0] === 'cancelled', what: 'the pending retry to be cancelled' }),
    ['cancelled'])
  await settled(app, i)
  t.equal(receiver.received.length, 1, 'the retry never went out')
})

t.test('planned topics are never delivered; an uninstalled install gets nothing', async t => {
  const receiver = await startReceiver(t)
  const i = await install(app)
  await subscribe(app, i, { topics: ['work_order.completed', 'invoice.paid'], target_url: receiver.url })
  t.equal(
    (
      await publish(app, {
        topic: 'work_order.completed',
        org_ref_id: i.orgRefId,
        entity_ref_id: i.entityRefId,
        data: {}
      })
    ).statusCode,
    422
  )

  await app.inject({ method: 'DELETE', url: `/installs/${i.installId}`, headers: bearer(i.userToken) })
  const res = await publish(app, {
    topic: 'invoice.paid',
    org_ref_id: i.orgRefId,
    entity_ref_id: i.entityRefId,
    data: invoice()
  })
  t.equal(res.statusCode, 202)
  t.equal(res.json().deliveries, 0)
  await settled(app, i)
  t.equal(receiver.received.length, 0)
})

t.test('deleting a subscription cancels its pending deliveries; a manual retry sends again', async t => {
  const receiver = await startReceiver(t, (_r, res) => {
    res.statusCode = 500
    res.end()
  })
  const i = await install(app)
  const keep = (await subscribe(app, i, { topics: ['invoice.paid'], target_url: receiver.url })).json()
  const drop = (await subscribe(app, i, { topics: ['invoice.paid'], target_url: receiver.url + '?drop' })).json()
  await publish(app, { topic: 'invoice.paid', org_ref_id: i.orgRefId, entity_ref_id: i.entityRefId, data: invoice() })
  await receiver.waitFor(2)
  const attempts = async (id: string) =>
    (await app.inject({ method: 'GET', url: `${hooks(i)}/${id}/deliveries`, headers: bearer(i.accessToken) })).json()
      .attempts
  const [first] = await eventually(
    () => attempts(drop.id),
    { until: l => l.length === 1 }
  )
  // Both first attempts recorded, whichever turn of the worker recorded each.
  await eventually(() => attempts(keep.id), { until: l => l.length === 1, what: "keep's first attempt recorded" })
  t.equal(first.delivery_status, 'pending', 'waiting an hour for its retry')

  await app.inject({ method: 'DELETE', url: `${hooks(i)}/${drop.id}`, headers: bearer(i.accessToken) })
  t.equal((await attempts(drop.id))[0].delivery_status, 'cancelled')
  const refused = await app.inject({
    method: 'POST',
    url: `${hooks(i)}/${drop.id}/deliveries/${first.delivery_id}/retry`,
    headers: bearer(i.accessToken)
  })
  t.equal(refused.statusCode, 409)

  receiver.respond = (_r, res) => res.end('fine now')
  const [pending] = await attempts(keep.id)
  const retry = await app.inject({
    method: 'POST',
    url: `${hooks(i)}/${keep.id}/deliveries/${pending.delivery_id}/retry`,
    headers: bearer(i.accessToken)
  })
  t.equal(retry.statusCode, 202)
  t.same(retry.json(), { delivery_id: pending.delivery_id, status: 'pending' })
  const log = await eventually(
    () => attempts(keep.id),
    { until: l => l.length === 2 }
  )
  t.match(log, [
    { attempt: 2, response_status: 200, delivery_status: 'succeeded' },
    { attempt: 1, response_status: 500 }
  ])
  const unknown = await app.inject({
    method: 'POST',
    url: `${hooks(i)}/${keep.id}/deliveries/dlv_nope/retry`,
    headers: bearer(i.accessToken)
  })
  t.equal(unknown.statusCode, 404)
})

t.test('a time-out counts as a failure with LastDeliveryStatus 0', async t => {
  // A second app: an attempt time-out of 1 s, which the file's app must not have. On Postgres a database of its own,
  // so that the file's app, whose worker would wait 15 s on this receiver, never claims this delivery.
  const app = await build(t, {
    ...receiverEnv(caFile, { ...settings, WEBHOOK_ATTEMPT_TIMEOUT_SECONDS: '1' }),
    DATABASE_URL: TEST_DATABASE_URL && await freshDatabase(t, TEST_DATABASE_URL)
  })
  // The receiver takes the request and never answers: the attempt's time-out (1 s for this app) applies.
  const receiver = await startReceiver(t, () => {})
  const i = await install(app)
  const sub = (await subscribe(app, i, { topics: ['invoice.paid'], target_url: receiver.url })).json()
  await publish(app, { topic: 'invoice.paid', org_ref_id: i.orgRefId, entity_ref_id: i.entityRefId, data: invoice() })
  // Polled gently: the listing counts against the install's 600 requests a minute.
  const [item] = await eventually(
    () => listing(app, i),
    { until: l => l[0]?.LastDeliveryStatus !== null, interval: 100 }
  )
  t.equal(item.LastDeliveryStatus, 0)
  t.equal(item.ConsecutiveFailures, 1)
  const [attempt] = (
    await app.inject({ method: 'GET', url: `${hooks(i)}/${sub.id}/deliveries`, headers: bearer(i.accessToken) })
  ).json().attempts
  t.match(attempt, {
    attempt: 1, response_status: 0, error: 'timed out after 1 s', error_class: 'timeout', delivery_status: 'pending'
  }, 'a time-out, from WEBHOOK_ATTEMPT_TIMEOUT_SECONDS')
  t.ok(attempt.duration_ms >= 990, `gave up once the time-out had run (${attempt.duration_ms} ms), not before`)
  const [row] = await app.db.query<{ wait: number }>(
    `select extract(epoch from next_attempt_at - now())::float8 as wait
       from webhook_deliveries where subscription_id = $1`,
    [sub.id])
  t.ok(row!.wait > 0.8 * 3600 - 60 && row!.wait <= 1.2 * 3600, 'the retry is scheduled on the schedule\'s first entry')
  t.equal(receiver.received.length, 1, 'one attempt so far')
})

// Last: it closes the file's app.
t.test('closing the app lets an attempt in flight finish and records it', async t => {
  const order: string[] = []
  let answer: () => void = () => {}
  const receiver = await startReceiver(t, (_r, res) => {
    answer = () => {
      order.push('answered')
      res.end('late')
    }
  })
  const i = await install(app)
  await subscribe(app, i, { topics: ['invoice.paid'], target_url: receiver.url })
  await publish(app, { topic: 'invoice.paid', org_ref_id: i.orgRefId, entity_ref_id: i.entityRefId, data: invoice() })
  await receiver.waitFor(1)
  const before = app.webhooks.workerStatus()!
  t.equal(before.inFlight, 1, 'an attempt is in flight')
  const closing = app.close().then(() => { order.push('closed') })
  await eventually(() => !app.webhooks.workerStatus()!.running, { what: 'the worker to stop claiming' })
  t.same(order, [], 'the worker has stopped and the app is not closed while the attempt is in flight')
  answer()
  await closing
  t.same(order, ['answered', 'closed'], 'close waited for the answer')
  const after = app.webhooks.workerStatus()!
  t.equal(after.attempted, before.attempted + 1, 'and the attempt completed')
  t.equal(after.recorded, before.recorded + 1, 'and was recorded')
  t.equal(after.inFlight, 0)
})
