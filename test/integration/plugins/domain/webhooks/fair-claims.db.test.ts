// The fair claim (docs/webhook-delivery.md#fair-delivery), driven by hand on the real database: an app without a
// worker, the queue filled through POST /events, and claims taken with the store as workers take them. What is
// checked is which deliveries each claim takes: the caps per subscription and per tenant, across workers, round
// robin across tenants and subscriptions, and that a backlog never hides anyone else's due delivery.
import t, { type Test } from 'tap'
import {
  createDeliveryQueueStore, type Caps, type ClaimedDelivery
} from '../../../../../plugins/domain/webhooks/delivery-queue-store.js'
import { counterUpdates } from '../../../../../plugins/domain/webhooks/worker.js'
import { build, install, type Installed } from '../../../../support/helper.js'
import { invoice, nth } from '../../../../support/records.js'
import { publishRaw, receiverEnv, subscribe } from '../../../../support/webhooks.js'
import { selfSigned } from '../../../../support/receiver.js'
import { cancelPending, dueIn, leaseExpired } from '../../../../support/queue-time.js'

const app = await build(t, receiverEnv(selfSigned().caFile, { WEBHOOK_WORKER: 'false' }))
const store = createDeliveryQueueStore(app.db)
const LEASE_S = 60

interface Tenant { install: Installed, subscriptions: string[] }

/** A tenant (its own install) with `n` subscriptions to invoice.paid. */
async function tenant (n: number): Promise<Tenant> {
  const i = await install(app)
  const subscriptions: string[] = []
  for (let k = 0; k < n; k++) {
    subscriptions.push((await subscribe(app, i, { target_url: `https://hooks.example.com/${k}` })).id)
  }
  return { install: i, subscriptions }
}

/** `events` events for the tenant, in batches of 100: one delivery per subscription each. */
async function backlog (tn: Tenant, events: number): Promise<void> {
  for (let from = 0; from < events; from += 100) {
    const batch = Array.from({ length: Math.min(100, events - from) }, (_, k) => ({
      topic: 'invoice.paid',
      org_ref_id: tn.install.orgRefId,
      entity_ref_id: tn.install.entityRefId,
      data: invoice(nth('inv', from + k))
    }))
    const res = await publishRaw(app, batch)
    if (res.statusCode !== 202) throw new Error(`publish: ${res.statusCode} ${res.body}`)
  }
}

const claim = (worker: string, limit: number, caps: Caps): Promise<ClaimedDelivery[]> =>
  app.db.tx(q => store.claim(q, worker, limit, LEASE_S, caps))

/** Records every claimed delivery as delivered: their leases end, as a worker's cycle ends them. */
async function finish (claimed: ClaimedDelivery[]): Promise<void> {
  const results = claimed.map(c => ({
    deliveryId: c.id,
    subscriptionId: c.subscriptionId,
    attempt: c.attempts + 1,
    attemptedAt: new Date(),
    durationMs: 1,
    status: 200,
    responseBody: 'ok',
    error: null,
    errorClass: null,
    requestHeaders: {},
    responseHeaders: {},
    succeeded: true,
    nextAttemptAt: null
  }))
  await app.db.tx(q => store.record(q, results, counterUpdates(results)))
}

/** How many of the claimed deliveries each subscription got, in the tenants' subscription order. */
const spread = (claimed: ClaimedDelivery[], ...tenants: Tenant[]): number[][] =>
  tenants.map(tn => tn.subscriptions.map(s => claimed.filter(c => c.subscriptionId === s).length))

/** How many of the claimed deliveries each tenant got. */
const byTenant = (claimed: ClaimedDelivery[], ...tenants: Tenant[]): number[] =>
  spread(claimed, ...tenants).map(subs => subs.reduce((x, y) => x + y, 0))

/** Each test starts from an empty queue: whatever an earlier one left pending is cancelled. */
async function emptyQueue (t: Test): Promise<void> {
  await cancelPending(app.db)
  t.teardown(() => cancelPending(app.db))
}

t.test('the caps hold per subscription and per tenant, for all workers together', async t => {
  await emptyQueue(t)
  const a = await tenant(3)
  const b = await tenant(1)
  const c = await tenant(1)
  await backlog(a, 10)
  await backlog(b, 10)
  await backlog(c, 10)
  const caps = { perSubscription: 2, perTenant: 3 }

  const first = await claim('w1', 100, caps)
  t.same(spread(first, a, b, c), [[1, 1, 1], [2], [2]],
    "tenant a: three attempts, one per subscription (its cap); b and c: their subscription's cap")
  t.same(await claim('w2', 100, caps), [], 'another worker finds every subscription and tenant at its cap')

  await finish([a.subscriptions[0], b.subscriptions[0]].map(s => first.find(d => d.subscriptionId === s)!))
  const second = await claim('w2', 100, caps)
  t.same(byTenant(second, a, b, c), [1, 1, 0],
    'what finished frees exactly its slots: one of a (back to its tenant cap of 3), one of b')
})

t.test('two workers claiming at the same moment stay within the caps together', async t => {
  await emptyQueue(t)
  const a = await tenant(4)
  await backlog(a, 20)
  const caps = { perSubscription: 3, perTenant: 5 }
  const claims = await Promise.all(['w1', 'w2', 'w3', 'w4'].map(w => claim(w, 64, caps)))
  const all = claims.flat()
  t.equal(all.length, 5, 'the tenant cap, not four times it')
  t.equal(new Set(all.map(d => d.id)).size, 5, 'no delivery claimed twice')
  t.ok(spread(all, a)[0]!.every(n => n <= 3), 'no subscription over its cap')
})

t.test('round robin: every tenant first once, then every subscription of a tenant once', async t => {
  await emptyQueue(t)
  const a = await tenant(3)
  await backlog(a, 50)
  const b = await tenant(1)
  await backlog(b, 1)
  const c = await tenant(2)
  await backlog(c, 2)
  const caps = { perSubscription: 8, perTenant: 16 }

  const first = await claim('w1', 3, caps)
  t.same(byTenant(first, a, b, c), [1, 1, 1], "three slots: one for each tenant, whatever a's backlog")
  const second = await claim('w1', 4, caps)
  t.same(byTenant(second, a, b, c), [2, 0, 2], 'four more: two rounds over the tenants that have work left')
  t.same(spread([...first, ...second], a)[0], [1, 1, 1],
    "a's three subscriptions one each: every subscription's first before any subscription's second")
})

t.test("a backlog of one tenant never hides another's due delivery, and costs the claim nothing", async t => {
  await emptyQueue(t)
  const big = await tenant(2)
  await backlog(big, 1000)
  const late = await tenant(1)
  await backlog(late, 1)
  const caps = { perSubscription: 8, perTenant: 16 }
  const claimed = await claim('w1', 2, caps)
  t.same(byTenant(claimed, big, late), [1, 1],
    'two slots: the oldest of the big backlog and the newcomer, not two of the 2,000 older deliveries')

  // The statement visits the subscriptions with work, not the rows: the plan's rows read stay bounded.
  await app.db.query('analyze webhook_deliveries')
  const [plan] = await app.db.query<{ 'QUERY PLAN': unknown }>(
    `explain (analyze, format json) select count(*) from (
       with recursive queues (subscription_id) as (
         (select subscription_id from webhook_deliveries where status = 'pending' order by subscription_id limit 1)
         union all
         select (select d.subscription_id from webhook_deliveries d
                  where d.status = 'pending' and d.subscription_id > q.subscription_id
                  order by d.subscription_id limit 1)
           from queues q where q.subscription_id is not null)
       select * from queues) x`)
  const rowsRead = (node: { 'Actual Rows'?: number, 'Actual Loops'?: number, Plans?: unknown[] }): number =>
    (node['Actual Rows'] ?? 0) * (node['Actual Loops'] ?? 1) +
    (node.Plans ?? []).reduce<number>((n, p) => n + rowsRead(p as typeof node), 0)
  const plan0 = (plan!['QUERY PLAN'] as Array<{ Plan: Parameters<typeof rowsRead>[0] }>)[0]!.Plan
  t.ok(rowsRead(plan0) < 100, `the skip scan reads ${rowsRead(plan0)} rows for 3 subscriptions and 2,001 deliveries`)
})

t.test('what is not due waits; an expired lease is claimable and no longer counts', async t => {
  await emptyQueue(t)
  const a = await tenant(1)
  await backlog(a, 3)
  const caps = { perSubscription: 1, perTenant: 16 }
  await dueIn(app.db, a.subscriptions[0]!, 3600)
  t.same(await claim('w1', 10, caps), [], 'retries scheduled later are not due')

  await dueIn(app.db, a.subscriptions[0]!, -1)
  const [held] = await claim('w1', 10, caps)
  t.ok(held, 'one claimed: the subscription cap is 1')
  t.same(await claim('w2', 10, caps), [], 'its lease counts')
  await leaseExpired(app.db, held!.id)
  const again = await claim('w2', 10, caps)
  t.equal(again.length, 1, 'the expired lease no longer counts: one more is claimed')
})

t.test('a claim of 0 takes nothing and holds no lock', async (t) => {
  t.same(await app.db.tx(q => store.claim(q, 'w1', 0, LEASE_S, { perSubscription: 1, perTenant: 1 })), [])
})
