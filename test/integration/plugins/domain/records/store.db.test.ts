// The record store (plugins/domain/records/store.ts) against the database under test: the newest copy wins, a
// lookup or a page sees one tenant only, and keyset pages walk a list in (updated_at, id) order, ties included,
// without losing or repeating a record at their bounds, with and without filters, in either order.
import t from 'tap'
import { RECORD_KINDS } from '../../../../../plugins/domain/records/kinds.js'
import {
  createRecordStore, type ListFilter, type Page, type Position, type RecordRow
} from '../../../../../plugins/domain/records/store.js'
import { build, unique } from '../../../../support/helper.js'

const app = await build(t, { WEBHOOK_WORKER: 'false' })
const invoices = createRecordStore(app.db, RECORD_KINDS.invoice)
const bills = createRecordStore(app.db, RECORD_KINDS.bill)

interface Tenant { org: string, entity: string }
/** A tenant no other test writes to. */
const tenant = (): Tenant => ({ org: unique('org'), entity: unique('ent') })

const T0 = Date.parse('2026-11-01T00:00:00.000Z')
/** The instant `ms` milliseconds after T0, as the store takes it. */
const at = (ms: number): string => new Date(T0 + ms).toISOString()

/** A record of the tenant kept at `at(ms)`; its body names its id and instant. */
function row (tn: Tenant, id: string, ms: number, over: Partial<RecordRow> = {}): RecordRow {
  return {
    orgRefId: tn.org,
    entityRefId: tn.entity,
    id,
    updatedAt: at(ms),
    status: 'open',
    partyId: null,
    dueDate: null,
    currency: 'EUR',
    amountDueMinor: null,
    partyName: null,
    body: JSON.stringify({ id, ms }),
    ...over
  }
}

const keep = (rows: RecordRow[], store = invoices): Promise<void> => app.db.tx(q => store.upsert(q, rows))

/** The ids of a page's records, in its order. */
const ids = (page: Page): string[] => (JSON.parse(`[${page.bodies}]`) as Array<{ id: string }>).map(r => r.id)

/** Every page of a list, from the first to the one without a next position: the ids of each. */
async function walk (tn: Tenant, f: Omit<ListFilter, 'after'>, store = invoices): Promise<string[][]> {
  const pages: string[][] = []
  let after: Position | undefined
  for (;;) {
    const page = await store.list(tn.org, tn.entity, { ...f, after })
    pages.push(ids(page))
    if (!page.next) return pages
    if (pages.length > 20) throw new Error('the pages do not end')
    after = { updatedAt: page.next.updatedAt.toISOString(), id: page.next.id }
  }
}

t.test('upsert keeps the copy with the newest updated_at; late, repeated and older copies change nothing', async t => {
  const tn = tenant()
  await keep([row(tn, 'inv_1', 10_000, { body: '{"v":10}' })])
  t.equal(await invoices.get(tn.org, tn.entity, 'inv_1'), '{"v":10}', 'the first copy is kept')

  await keep([row(tn, 'inv_1', 20_000, { body: '{"v":20}', status: 'paid' })])
  t.equal(await invoices.get(tn.org, tn.entity, 'inv_1'), '{"v":20}', 'a newer copy replaces it')

  await keep([row(tn, 'inv_1', 15_000, { body: '{"v":15}', status: 'void' })])
  t.equal(await invoices.get(tn.org, tn.entity, 'inv_1'), '{"v":20}', 'an older copy arriving late is ignored')

  await keep([row(tn, 'inv_1', 20_000, { body: '{"v":"20 again"}', status: 'void' })])
  t.equal(await invoices.get(tn.org, tn.entity, 'inv_1'), '{"v":20}', 'a copy as new as the kept one is ignored')

  await keep([row(tn, 'inv_1', 20_001, { body: '{"v":20.001}', status: 'paid' })])
  t.equal(await invoices.get(tn.org, tn.entity, 'inv_1'), '{"v":20.001}', 'one millisecond newer is newer')

  const bodies = async (status: string) =>
    JSON.parse(`[${(await invoices.list(tn.org, tn.entity, { descending: false, limit: 10, status })).bodies}]`)
  t.same(await bodies('paid'), [{ v: 20.001 }], "the columns the lists filter on are the newest copy's")
  t.same(await bodies('void'), [], 'the ignored copies did not change them')
  t.same(await bodies('open'), [])
})

t.test('upsert writes any number of records in one call, and nothing for none', async t => {
  const tn = tenant()
  await keep([])
  t.same(await walk(tn, { descending: false, limit: 10 }), [[]], 'no rows: nothing kept')

  await keep([row(tn, 'a', 1), row(tn, 'b', 2), row(tn, 'c', 3)])
  await keep([row(tn, 'a', 10), row(tn, 'b', 0), row(tn, 'd', 4)])
  t.same(await walk(tn, { descending: false, limit: 10 }), [['b', 'c', 'd', 'a']],
    'each row of the call is decided alone: a newer, an older and a new one')
  t.equal(await invoices.get(tn.org, tn.entity, 'b'), JSON.stringify({ id: 'b', ms: 2 }),
    'the older copy of b was not taken')
})

t.test("upsert writes inside the caller's transaction: a rollback keeps nothing", async t => {
  const tn = tenant()
  await t.rejects(app.db.tx(async q => {
    await invoices.upsert(q, [row(tn, 'inv_rolled_back', 1)])
    throw new Error('rolled back')
  }), /rolled back/)
  t.equal(await invoices.get(tn.org, tn.entity, 'inv_rolled_back'), undefined)
})

t.test('get answers the body exactly as it was sent; lookups of one turn are answered each in their place', async t => {
  const tn = tenant()
  const other = tenant()
  const sent = '{ "z": 1,\n  "a": ["x", {"é": null}] }'
  await keep([row(tn, 'inv_a', 1, { body: sent }), row(tn, 'inv_b', 2)])
  await keep([row(other, 'inv_a', 1, { body: '{"other":true}' })])

  t.equal(await invoices.get(tn.org, tn.entity, 'inv_a'), sent, 'spacing, key order and characters kept')
  t.equal(await invoices.get(tn.org, tn.entity, 'inv_missing'), undefined, 'no such record: undefined')

  const together = await Promise.all([
    invoices.get(tn.org, tn.entity, 'inv_b'),
    invoices.get(tn.org, tn.entity, 'inv_missing'),
    invoices.get(other.org, other.entity, 'inv_a'),
    invoices.get(tn.org, tn.entity, 'inv_a'),
    invoices.get(tn.org, other.entity, 'inv_a'),
    invoices.get(tn.org, tn.entity, 'inv_b')
  ])
  t.same(together, [JSON.stringify({ id: 'inv_b', ms: 2 }), undefined, '{"other":true}', sent, undefined,
    JSON.stringify({ id: 'inv_b', ms: 2 })], 'every lookup gets its own answer, the missing ones undefined')
})

t.test('keyset pages: (updated_at, id) order, ties by id byte-wise, bounds neither lost nor repeated', async t => {
  const tn = tenant()
  // Three records share an instant: byte-wise, 'A' < 'b' < 'r3' (a locale's order would put 'b' first or 'A' after).
  await keep([
    row(tn, 'r6', 7_000), row(tn, 'r1', 1_000), row(tn, 'b', 3_000), row(tn, 'r2', 2_000), row(tn, 'r3', 3_000),
    row(tn, 'A', 3_000), row(tn, 'r5', 6_500), row(tn, 'r4', 5_000)
  ])
  const all = ['r1', 'r2', 'A', 'b', 'r3', 'r4', 'r5', 'r6']

  t.same(await walk(tn, { descending: false, limit: 100 }), [all], 'one page when the limit is larger')
  t.same(await walk(tn, { descending: false, limit: 3 }), [['r1', 'r2', 'A'], ['b', 'r3', 'r4'], ['r5', 'r6']],
    'ascending by three: a bound inside the tie')
  t.same(await walk(tn, { descending: false, limit: 4 }), [['r1', 'r2', 'A', 'b'], ['r3', 'r4', 'r5', 'r6']],
    'a last page that is exactly full has no next position (no empty page after it)')
  t.same(await walk(tn, { descending: false, limit: 1 }), all.map(id => [id]), 'one by one, every record once')
  t.same(await walk(tn, { descending: true, limit: 3 }), [['r6', 'r5', 'r4'], ['r3', 'b', 'A'], ['r2', 'r1']],
    'descending by three')
  t.same(await walk(tn, { descending: true, limit: 8 }), [[...all].reverse()], 'descending, exactly full')

  const first = await invoices.list(tn.org, tn.entity, { descending: false, limit: 3 })
  t.same(first.next, { updatedAt: new Date(at(3_000)), id: 'A' }, 'the next position is the last record shown')
  const after = (ms: number, id: string) =>
    invoices.list(tn.org, tn.entity, { descending: false, limit: 2, after: { updatedAt: at(ms), id } })
  const last = await after(5_000, 'r4')
  t.same(ids(last), ['r5', 'r6'])
  t.equal(last.next, undefined, 'nothing after the last page')
  const past = await after(7_000, 'r6')
  t.same({ bodies: past.bodies, next: past.next }, { bodies: '', next: undefined }, 'after the last record: empty')
})

t.test('keyset pages keep the milliseconds of a bound', async t => {
  const tn = tenant()
  await keep([row(tn, 'x1', 1_001), row(tn, 'x2', 1_002), row(tn, 'x3', 1_002), row(tn, 'x4', 1_999)])
  const first = await invoices.list(tn.org, tn.entity, { descending: false, limit: 2 })
  t.equal(first.next?.updatedAt.toISOString(), at(1_002), 'the position keeps the millisecond')
  t.same(await walk(tn, { descending: false, limit: 2 }), [['x1', 'x2'], ['x3', 'x4']])
  t.same(await walk(tn, { descending: true, limit: 1 }), [['x4'], ['x3'], ['x2'], ['x1']])
})

t.test('updated_since is an inclusive lower bound, and the later of it and the position starts the page', async t => {
  const tn = tenant()
  await keep([row(tn, 'r1', 1_000), row(tn, 'r2', 2_000), row(tn, 'A', 3_000), row(tn, 'b', 3_000),
    row(tn, 'r4', 5_000), row(tn, 'r5', 6_000)])
  const since = (ms: number) => new Date(T0 + ms)

  t.same(await walk(tn, { descending: false, limit: 10, updatedSince: since(3_000) }), [['A', 'b', 'r4', 'r5']],
    'records at the instant itself are included')
  t.same(await walk(tn, { descending: true, limit: 3, updatedSince: since(3_000) }), [['r5', 'r4', 'b'], ['A']],
    'descending: the bound ends the list')
  t.same(await walk(tn, { descending: false, limit: 10, updatedSince: since(3_001) }), [['r4', 'r5']])
  t.same(await walk(tn, { descending: false, limit: 10, updatedSince: since(9_000) }), [[]], 'after the newest: none')

  const page = (after: Position, ms: number) =>
    invoices.list(tn.org, tn.entity, { descending: false, limit: 10, updatedSince: since(ms), after }).then(ids)
  t.same(await page({ updatedAt: at(1_000), id: 'r1' }, 3_000), ['A', 'b', 'r4', 'r5'],
    'a position before updated_since: the bound starts the page')
  t.same(await page({ updatedAt: at(3_000), id: 'A' }, 2_000), ['b', 'r4', 'r5'],
    'a position after updated_since: the position starts the page')
})

t.test('filters: status, party and due date (strictly before), on every page', async t => {
  const tn = tenant()
  await keep([
    row(tn, 'i1', 1, { status: 'open', partyId: 'cus_1', dueDate: '2026-11-30' }),
    row(tn, 'i2', 2, { status: 'paid', partyId: 'cus_1', dueDate: '2026-12-01' }),
    row(tn, 'i3', 3, { status: 'open', partyId: 'cus_2', dueDate: '2026-12-02' }),
    row(tn, 'i4', 4, { status: 'open', partyId: null, dueDate: null }),
    row(tn, 'i5', 5, { status: 'open', partyId: 'cus_1', dueDate: '2026-10-01' }),
    row(tn, 'i6', 6, { status: 'paid', partyId: 'cus_2', dueDate: '2026-11-01' })
  ])
  const list = (f: Partial<ListFilter>) => walk(tn, { descending: false, limit: 2, ...f }).then(p => p.flat())

  t.same(await list({ status: 'open' }), ['i1', 'i3', 'i4', 'i5'])
  t.same(await list({ status: 'paid', descending: true }), ['i6', 'i2'])
  t.same(await list({ status: 'draft' }), [])
  t.same(await list({ partyId: 'cus_1' }), ['i1', 'i2', 'i5'], 'no party (null) is not any party')
  t.same(await list({ dueBefore: '2026-12-01' }), ['i1', 'i5', 'i6'], 'due on the date itself is not before it')
  t.same(await list({ status: 'open', partyId: 'cus_1', dueBefore: '2026-12-01' }), ['i1', 'i5'], 'all three at once')
  t.same(await walk(tn, { descending: false, limit: 1, status: 'open', partyId: 'cus_1' }), [['i1'], ['i5']],
    'a filtered list pages through the matching records only')
})

t.test('tenants stay apart, also when their ids run together, and each kind has its own records', async t => {
  const run = unique('t')
  // Joined, the two tenants' ids are the same text: the store must not tell them apart by the concatenation.
  const x: Tenant = { org: `${run}ab`, entity: 'c' }
  const y: Tenant = { org: `${run}a`, entity: 'bc' }
  const z: Tenant = { org: `${run}ab`, entity: 'd' }
  await keep([row(x, 'same', 1, { body: '{"id":"same","of":"x"}' }), row(x, 'x_only', 2)])
  await keep([row(y, 'same', 5, { body: '{"id":"same","of":"y"}' }), row(y, 'y_only', 1)])
  await keep([row(z, 'same', 3, { body: '{"id":"same","of":"z"}' })])

  t.equal(await invoices.get(x.org, x.entity, 'same'), '{"id":"same","of":"x"}')
  t.equal(await invoices.get(y.org, y.entity, 'same'), '{"id":"same","of":"y"}')
  t.equal(await invoices.get(z.org, z.entity, 'same'), '{"id":"same","of":"z"}')
  t.equal(await invoices.get(x.org, x.entity, 'y_only'), undefined, "another tenant's record is not there")
  t.equal(await invoices.get(y.org, y.entity, 'x_only'), undefined)

  await keep([row(x, 'same', 9, { body: '{"id":"same","of":"x","newer":true}' })])
  t.equal(await invoices.get(y.org, y.entity, 'same'), '{"id":"same","of":"y"}',
    "a newer copy of x's record leaves y's alone")

  const asc = { descending: false, limit: 10 }
  const desc = { descending: true, limit: 1 }
  const [px, py, pz, pyDesc, pxPaid] = await Promise.all([
    invoices.list(x.org, x.entity, asc), invoices.list(y.org, y.entity, asc), invoices.list(z.org, z.entity, asc),
    invoices.list(y.org, y.entity, desc), invoices.list(x.org, x.entity, { ...asc, status: 'paid' })
  ])
  t.same(ids(px), ['x_only', 'same'], 'pages of several tenants and shapes in one turn: each its own')
  t.same(ids(py), ['y_only', 'same'])
  t.same(ids(pz), ['same'])
  t.same(ids(pyDesc), ['same'])
  t.same(pyDesc.next, { updatedAt: new Date(at(5)), id: 'same' })
  t.same(ids(pxPaid), [])

  await keep([row(x, 'same', 1, { body: '{"id":"same","kind":"bill"}' })], bills)
  t.equal(await bills.get(x.org, x.entity, 'same'), '{"id":"same","kind":"bill"}', 'a bill with the id of an invoice')
  t.equal(await invoices.get(x.org, x.entity, 'same'), '{"id":"same","of":"x","newer":true}',
    'the invoice is untouched')
  t.same(await walk(x, asc, bills), [['same']], "the bills' list has the bill only")
})
