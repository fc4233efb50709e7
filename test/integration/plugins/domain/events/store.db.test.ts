// The events' store (plugins/domain/events/store.ts) against the database under test: the stored form of an event
// (its id, its delivery bytes, the order a batch is inserted in) and the look-up by producer id that makes
// publishing idempotent: the same event again is found as the same, anything else under its id is not.
import t from 'tap'
import { findByProducerIds, newEvent, newEvents } from '../../../../../plugins/domain/events/store.js'
import { fanOut } from '../../../../../plugins/domain/webhooks/delivery-queue-store.js'
import { build, unique } from '../../../../support/helper.js'

const app = await build(t, { WEBHOOK_WORKER: 'false' })

/** An event of a tenant no other test writes to; `id` is the producer's. */
const event = (id: string | undefined, data: Record<string, unknown> = { n: 1 }, topic = 'invoice.paid') => ({
  ...(id !== undefined && { id }),
  topic,
  org_ref_id: 'org_events_store',
  entity_ref_id: 'ent_events_store',
  data
})

t.test('newEvent: an id of its own and the bytes every attempt sends', async t => {
  const createdAt = new Date('2026-11-01T10:00:00.000Z')
  const a = newEvent({ topic: 'invoice.paid', orgRefId: 'o', entityRefId: 'e', data: { x: [1, 'two'] } }, createdAt)
  const b = newEvent({ topic: 'invoice.paid', orgRefId: 'o', entityRefId: 'e', data: { x: [1, 'two'] } }, createdAt)
  t.match(a.id, /^evt_[A-Za-z0-9_-]{16,}$/)
  t.not(a.id, b.id, 'two events never share an id')
  t.equal(a.producerId, null, "without a producer id (the service's own events)")
  t.equal(a.body, JSON.stringify({
    id: a.id,
    topic: 'invoice.paid',
    created_at: '2026-11-01T10:00:00.000Z',
    org_ref_id: 'o',
    entity_ref_id: 'e',
    data: { x: [1, 'two'] }
  }), 'the body names the event, its time and tenant, then the data as sent')
})

t.test('newEvents: a batch in the order of its producer ids (code units), those without one last', async t => {
  const batch = [event('b'), event(undefined), event('B'), event('a'), event(undefined), event('ä')]
  const rows = newEvents(batch)
  t.same(rows.map(r => r.producerId), ['B', 'a', 'b', 'ä', null, null], "by code unit, not the locale's order")
  t.same(rows.map(r => r.at), [2, 3, 0, 5, 1, 4], 'each knows its place in the batch; ties keep it')
  t.equal(new Set(rows.map(r => r.createdAt.getTime())).size, 1, 'one time for the whole batch')
})

t.test('findByProducerIds: the event stored under each id, and whether the one given again is the same', async t => {
  const id = unique('acct')
  const stored = newEvents([event(id, { total: '10.00', lines: [1, 2] })])
  const [inserted] = await app.db.tx(q => fanOut(q, stored))
  t.equal(inserted!.id, stored[0]!.id)

  const found = await app.db.tx(q => findByProducerIds(q, [
    { at: 0, event: event(id, { lines: [1, 2], total: '10.00' }) },
    { at: 1, event: event(id, { total: '10.01', lines: [1, 2] }) },
    { at: 2, event: event(id, { total: '10.00', lines: [1, 2] }, 'invoice.updated') },
    { at: 3, event: { ...event(id, { total: '10.00', lines: [1, 2] }), entity_ref_id: 'another' } },
    { at: 4, event: event(unique('never-stored')) }
  ]))
  t.same(found.sort((a, b) => a.at - b.at), [
    { at: 0, id: inserted!.id, deliveries: 0, same: true },
    { at: 1, id: inserted!.id, deliveries: 0, same: false },
    { at: 2, id: inserted!.id, deliveries: 0, same: false },
    { at: 3, id: inserted!.id, deliveries: 0, same: false }
  ], 'the same data in another key order is the same; other data, topic or tenant is not; an unknown id has no row')
})

t.test('a producer id is stored once: later events under it, in the same batch or after, store nothing', async t => {
  const id = unique('acct')
  const count = async () => (await app.db.query<{ n: number }>(
    'select count(*)::int as n from webhook_events where producer_id = $1', [id]))[0]!.n
  const twice = newEvents([event(id, { v: 1 }), event(id, { v: 2 })])
  const inserted = await app.db.tx(q => fanOut(q, twice))
  t.same(inserted.map(i => i.id), [twice[0]!.id], 'of two in one batch, the first in insertion order is stored')
  t.same(await app.db.tx(q => fanOut(q, newEvents([event(id, { v: 1 })]))), [], 'again later: nothing stored')
  t.equal(await count(), 1)
})
