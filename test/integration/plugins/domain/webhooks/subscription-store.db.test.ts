// The subscription store (plugins/domain/webhooks/subscription-store.ts) against the database under test: the
// per-install limit under concurrent creations, reads that see one install's subscriptions only, soft deletion,
// disabling and secret rotation.
import t from 'tap'
import {
  createSubscriptionStore, type NewSubscription
} from '../../../../../plugins/domain/webhooks/subscription-store.js'
import { build, install, unique, type Installed } from '../../../../support/helper.js'

const app = await build(t, { WEBHOOK_WORKER: 'false' })
const store = createSubscriptionStore(app.db)

const subscription = (i: Installed, over: Partial<NewSubscription> = {}): NewSubscription => ({
  id: unique('whs'),
  installId: i.installId,
  orgRefId: i.orgRefId,
  entityRefId: i.entityRefId,
  topics: ['invoice.paid'],
  targetUrl: 'https://hooks.example.com/x',
  secretCiphertext: 'ciphertext-1',
  ...over
})

t.test('insert: up to the limit of active subscriptions, also when the creations race', async t => {
  const i = await install(app)
  const created = await Promise.all(Array.from({ length: 6 }, () => store.insert(subscription(i), 3)))
  t.equal(created.filter(s => s !== undefined).length, 3, 'three of six concurrent creations, the others refused')
  t.equal(await store.insert(subscription(i), 3), undefined, 'at the limit: refused')

  const first = created.find(s => s !== undefined)!
  await app.db.tx(q => store.disable(q, [first.id], 'gone'))
  t.ok(await store.insert(subscription(i), 3), 'an inactive subscription does not count')
  t.ok(await store.insert(subscription(await install(app)), 3), "another install's count is its own")
})

t.test('insert answers the subscription as stored', async t => {
  const i = await install(app)
  const s = await store.insert(subscription(i, { topics: ['invoice.paid', 'bill.created'] }), 50)
  t.match(s, {
    installId: i.installId,
    topics: ['invoice.paid', 'bill.created'],
    targetUrl: 'https://hooks.example.com/x',
    isActive: true,
    disabledReason: null,
    createdAt: Date,
    lastDeliveryAt: null,
    lastDeliveryStatus: null,
    consecutiveFailures: 0
  })
})

t.test("list and find see the install's own subscriptions only; the inactive ones on request", async t => {
  const i = await install(app)
  const other = await install(app)
  const a = (await store.insert(subscription(i), 50))!
  const b = (await store.insert(subscription(i), 50))!
  const c = (await store.insert(subscription(i), 50))!
  const theirs = (await store.insert(subscription(other), 50))!
  await app.db.tx(q => store.disable(q, [b.id], 'consecutive_failures'))

  t.same((await store.list(i.installId, false)).map(s => s.id), [a.id, c.id], 'active ones, oldest first')
  const all = await store.list(i.installId, true)
  t.same(all.map(s => [s.id, s.isActive, s.disabledReason]),
    [[a.id, true, null], [b.id, false, 'consecutive_failures'], [c.id, true, null]], 'with the inactive one')

  t.match(await store.find(i.installId, b.id), { id: b.id, isActive: false }, 'found, active or not')
  t.equal(await store.find(i.installId, theirs.id), undefined, "another install's is not there")
  t.equal(await store.find(other.installId, a.id), undefined, 'nor is this one for them')
})

t.test('remove: the own active subscription, once; disable keeps the first reason', async t => {
  const i = await install(app)
  const other = await install(app)
  const s = (await store.insert(subscription(i), 50))!
  t.equal(await app.db.tx(q => store.remove(q, other.installId, s.id)), false, "someone else's: nothing")
  t.equal(await app.db.tx(q => store.remove(q, i.installId, s.id)), true, 'removed')
  t.equal(await app.db.tx(q => store.remove(q, i.installId, s.id)), false, 'again: nothing left to remove')
  t.match(await store.find(i.installId, s.id), { isActive: false, disabledReason: 'deleted' })

  await app.db.tx(q => store.disable(q, [s.id], 'gone'))
  t.match(await store.find(i.installId, s.id), { disabledReason: 'deleted' }, 'an inactive one is left as it is')
  await app.db.tx(q => store.disable(q, [], 'gone'))
})

t.test('rotateSecret: the replaced secret signs for the overlap; none without one; nothing when inactive', async t => {
  const i = await install(app)
  const s = (await store.insert(subscription(i), 50))!
  const secrets = async () => (await app.db.query<Record<string, unknown>>(
    `select secret_ciphertext, signing_scheme, previous_secret_ciphertext, previous_signing_scheme,
            extract(epoch from previous_secret_expires_at - now())::float8 as overlap_s
       from webhook_subscriptions where id = $1`, [s.id]))[0]!

  const rotated = await store.rotateSecret(s.id, 'ciphertext-2', 3600)
  t.ok(rotated?.previousExpiresAt instanceof Date)
  const after = await secrets()
  t.match(after, {
    secret_ciphertext: 'ciphertext-2',
    signing_scheme: 'standard',
    previous_secret_ciphertext: 'ciphertext-1',
    previous_signing_scheme: 'standard'
  })
  t.ok(Math.abs((after.overlap_s as number) - 3600) < 60, 'the old one signs for another hour')

  t.same(await store.rotateSecret(s.id, 'ciphertext-3', 0), { previousExpiresAt: null }, 'without an overlap')
  t.match(await secrets(), { secret_ciphertext: 'ciphertext-3', previous_secret_ciphertext: null },
    'the replaced secret stops at once')

  await app.db.tx(q => store.disable(q, [s.id], 'deleted'))
  t.equal(await store.rotateSecret(s.id, 'ciphertext-4', 0), undefined, 'an inactive subscription keeps its secret')
  t.match(await secrets(), { secret_ciphertext: 'ciphertext-3' })
})
