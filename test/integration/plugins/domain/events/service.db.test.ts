// The events' service (plugins/domain/events/service.ts) on the database under test: one transaction writes the
// records an event carries, the event and its deliveries; a repeat answers the first result, a conflict rolls the
// whole batch back, records included, and the answers keep the order the events were sent in.
import t from 'tap'
import { RECORD_KINDS } from '../../../../../plugins/domain/records/kinds.js'
import { createRecordStore } from '../../../../../plugins/domain/records/store.js'
import { build, install, type Installed } from '../../../../support/helper.js'
import { invoice, nth } from '../../../../support/records.js'
import { selfSigned } from '../../../../support/receiver.js'
import { receiverEnv, subscribe } from '../../../../support/webhooks.js'

const app = await build(t, receiverEnv(selfSigned().caFile, { WEBHOOK_WORKER: 'false' }))
const invoices = createRecordStore(app.db, RECORD_KINDS.invoice)

const paid = (i: Installed, n: number, id?: string) => ({
  ...(id !== undefined && { id }),
  topic: 'invoice.paid',
  org_ref_id: i.orgRefId,
  entity_ref_id: i.entityRefId,
  data: invoice({ ...nth('inv', n), status: 'paid' })
})

const count = async (sql: string, params: unknown[]) => (await app.db.query<{ n: number }>(sql, params))[0]!.n
const eventsOf = (i: Installed) => count(
  'select count(*)::int as n from webhook_events where org_ref_id = $1 and entity_ref_id = $2',
  [i.orgRefId, i.entityRefId])
const deliveriesOf = (i: Installed) => count(
  `select count(*)::int as n from webhook_deliveries d join webhook_events e on e.id = d.event_id
    where e.org_ref_id = $1 and e.entity_ref_id = $2`, [i.orgRefId, i.entityRefId])

t.test('an event is stored with its record and one delivery per matching subscription; again, the first answer',
  async t => {
    const i = await install(app)
    await subscribe(app, i, { target_url: 'https://hooks.example.com/a' })
    await subscribe(app, i, { target_url: 'https://hooks.example.com/b' })
    await subscribe(app, i, { target_url: 'https://hooks.example.com/c', topics: ['bill.created'] })

    const first = await app.events.publish(paid(i, 1, 'acct-1'))
    t.match(first, { id: /^evt_/, deliveries: 2 }, 'the two subscriptions to the topic')
    t.equal(await deliveriesOf(i), 2)
    t.ok(await invoices.get(i.orgRefId, i.entityRefId, 'inv_00001'), 'the record is kept')

    t.same(await app.events.publish(paid(i, 1, 'acct-1')), first, 'the same event again: the first answer')
    t.equal(await eventsOf(i), 1, 'stored once')
    t.equal(await deliveriesOf(i), 2, 'delivered once')
  })

t.test('a batch answers in the order sent, whatever the order its producer ids are written in', async t => {
  const i = await install(app)
  await subscribe(app, i, { target_url: 'https://hooks.example.com/a' })
  const before = await app.events.publish(paid(i, 1, 'm'))
  const answers = await app.events.publishBatch([
    paid(i, 2, 'z'), paid(i, 3), paid(i, 1, 'm'), paid(i, 4, 'a'), paid(i, 2, 'z')
  ])
  t.equal(answers.length, 5)
  t.same(answers[2], before, 'an event stored by an earlier request: its first answer')
  t.same(answers[4], answers[0], 'the same event twice in the batch: one event, one answer')
  t.equal(new Set(answers.map(a => a.id)).size, 4)
  t.ok(answers.every(a => a.deliveries === 1))
  t.equal(await eventsOf(i), 4)
})

t.test('a conflict under a producer id refuses the whole batch: no event, delivery or record of it stays', async t => {
  const i = await install(app)
  await subscribe(app, i, { target_url: 'https://hooks.example.com/a' })
  await app.events.publish(paid(i, 1, 'taken'))
  const events = await eventsOf(i)

  await t.rejects(app.events.publishBatch([paid(i, 7, 'fresh'), paid(i, 8, 'taken')]),
    { statusCode: 409, code: 'event_conflict' })
  t.equal(await eventsOf(i), events, 'the new event before the conflict was rolled back')
  t.equal(await deliveriesOf(i), 1, 'and its delivery')
  t.equal(await invoices.get(i.orgRefId, i.entityRefId, 'inv_00007'), undefined, 'and its record')

  await t.rejects(app.events.publish(paid(i, 2, 'taken')), { statusCode: 409, code: 'event_conflict' },
    'one event alone conflicts the same way')
  t.equal(await invoices.get(i.orgRefId, i.entityRefId, 'inv_00002'), undefined)
})

t.test('topics and records are checked before anything is written', async t => {
  const i = await install(app)
  await t.rejects(app.events.publishBatch([paid(i, 1), { ...paid(i, 2), topic: 'invoice.deleted' }]),
    { statusCode: 400, code: 'unknown_topic' })
  await t.rejects(app.events.publishBatch([paid(i, 1), { ...paid(i, 2), data: { ...paid(i, 2).data, total: '1' } }]),
    { statusCode: 400, code: 'validation_error' })
  t.equal(await eventsOf(i), 0)
  t.equal(await invoices.get(i.orgRefId, i.entityRefId, 'inv_00001'), undefined)
})
