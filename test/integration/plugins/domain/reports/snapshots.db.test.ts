// The aged reports' snapshots: a tenant's report is added up once per change of its invoices (or bills) and day,
// and every page until the next change reads what was added up. Seen from outside through the answers and the
// `aged_report_pages_total` counter of GET /metrics (which pages were read from the snapshot kept, which made one);
// the bound on what is kept, through the table that keeps it.
import t from 'tap'
import { bearer, build, install, type Installed } from '../../../../support/helper.js'
import { bill, invoice } from '../../../../support/records.js'
import { publishRaw } from '../../../../support/webhooks.js'

type Json = Record<string, any>

const TOKEN = 'metrics-token-for-the-tests-0123'
const app = await build(t, { WEBHOOK_WORKER: 'false', METRICS_TOKEN: TOKEN })

const AS_OF = '2026-11-27'
type Snapshot = 'kept' | 'made' | 'joined'
type Path = 'aged-receivables' | 'aged-payables'

/** The aged_report_pages_total series, by report and snapshot. */
async function pages (): Promise<Map<string, number>> {
  const res = await app.inject({ method: 'GET', url: '/metrics', headers: bearer(TOKEN) })
  const counts = new Map<string, number>()
  for (const m of res.body.matchAll(/^aged_report_pages_total\{report="([a-z-]+)",snapshot="([a-z]+)"\} (\d+)$/gm)) {
    counts.set(`${m[1]}/${m[2]}`, Number(m[3]))
  }
  return counts
}

/** What `fn` added to each series of aged_report_pages_total, written `report/snapshot: n`, sorted. */
async function counted (fn: () => Promise<unknown>): Promise<string[]> {
  const before = await pages()
  await fn()
  const after = await pages()
  return [...after].filter(([k, n]) => n !== (before.get(k) ?? 0))
    .map(([k, n]) => `${k}: ${n - (before.get(k) ?? 0)}`).sort()
}

/** A report page of the tenant; throws unless 200. */
async function report (i: Installed, path: Path = 'aged-receivables', query: Record<string, string> = {}) {
  const res = await app.inject({
    method: 'GET',
    url: `/public/v1/orgs/${i.orgRefId}/entities/${i.entityRefId}/reports/${path}?` +
      new URLSearchParams({ as_of: AS_OF, ...query }).toString(),
    headers: bearer(i.accessToken)
  })
  if (res.statusCode !== 200) throw new Error(`${path}: ${res.statusCode} ${res.body}`)
  return res.json<Json>()
}

/** An authorised document of `amount` due on 2026-10-01 (57 days overdue), sent as one event. */
async function send (i: Installed, id: string, amount: string, opts: { updated?: number, kind?: 'bill' } = {}) {
  const make = opts.kind === 'bill' ? bill : invoice
  const party = opts.kind === 'bill' ? 'supplier' : 'customer'
  const data = make({
    id,
    updated_at: new Date(Date.UTC(2026, 10, 1) + (opts.updated ?? 1) * 1000).toISOString(),
    status: 'authorised',
    [party]: { id: 'c_1', name: 'Contact one' },
    currency: 'EUR',
    due_date: '2026-10-01',
    line_items: [{ description: 'Item', quantity: '1', unit_amount: amount, tax_amount: '0.00' }]
  })
  const res = await publishRaw(app, {
    topic: `${opts.kind ?? 'invoice'}.updated`, org_ref_id: i.orgRefId, entity_ref_id: i.entityRefId, data
  })
  if (res.statusCode !== 202) throw new Error(`publish: ${res.statusCode} ${res.body}`)
}

const totalOf = (page: Json): string[] => page.totals.map((x: Json) => `${x.currency} ${x.total}`)

t.test('a report is added up once per change of the tenant\'s documents; a replay changes nothing', async t => {
  const i = await install(app)
  await send(i, 'inv_1', '100.00')
  t.strictSame(await counted(() => report(i)), ['aged-receivables/made: 1'], 'the first page makes the snapshot')
  t.strictSame(await counted(async () => {
    t.strictSame(totalOf(await report(i)), ['EUR 100.00'])
    await report(i, 'aged-receivables', { currency: 'EUR', limit: '1' })
    await report(i, 'aged-receivables', { customer_id: 'c_1' })
  }), ['aged-receivables/kept: 3'], 'other pages and filters of the same day read it')

  await send(i, 'inv_2', '20.50')
  let page: Json = {}
  t.strictSame(await counted(async () => { page = await report(i) }), ['aged-receivables/made: 1'],
    'a new invoice: the next page adds up again')
  t.strictSame(totalOf(page), ['EUR 120.50'], 'and counts it')

  await send(i, 'inv_2', '99.00') // the same updated_at: the copy kept is as new, nothing changes
  t.strictSame(await counted(async () => { page = await report(i) }), ['aged-receivables/kept: 1'],
    'an event the records ignore leaves the snapshot kept')
  t.strictSame(totalOf(page), ['EUR 120.50'])
  const [pending] = await app.db.query<{ n: number }>(
    'select count(*)::int as n from aged_report_changes where org_ref_id = $1 and entity_ref_id = $2',
    [i.orgRefId, i.entityRefId])
  t.equal(pending!.n, 0, 'what a transaction notes of its changes is gone once it commits')
})

t.test('another tenant\'s documents, and the other report\'s, leave a snapshot kept', async t => {
  const [a, b] = [await install(app), await install(app)]
  await send(a, 'inv_1', '10.00')
  await send(a, 'bill_1', '7.00', { kind: 'bill' })
  await report(a)
  await report(a, 'aged-payables')
  await send(b, 'inv_1', '30.00')
  await send(a, 'bill_1', '8.00', { kind: 'bill', updated: 2 })
  t.strictSame(await counted(async () => {
    t.strictSame(totalOf(await report(a)), ['EUR 10.00'])
    t.strictSame(totalOf(await report(a, 'aged-payables')), ['EUR 8.00'])
  }), ['aged-payables/made: 1', 'aged-receivables/kept: 1'], 'only the changed report of the changed tenant')
})

t.test('a change written to the records by SQL, outside the service, is in the next page', async t => {
  const i = await install(app)
  await send(i, 'inv_1', '10.00')
  await send(i, 'inv_2', '5.00')
  t.strictSame(totalOf(await report(i)), ['EUR 15.00'])
  const tenant = [i.orgRefId, i.entityRefId]
  await app.db.query(
    "update invoices set amount_due_minor = 0 where org_ref_id = $1 and entity_ref_id = $2 and id = 'inv_1'", tenant)
  t.strictSame(totalOf(await report(i)), ['EUR 5.00'], 'an update')
  await app.db.query("delete from invoices where org_ref_id = $1 and entity_ref_id = $2 and id = 'inv_2'", tenant)
  t.strictSame(totalOf(await report(i)), [], 'a delete')
})

t.test('pages asked for at once, without a snapshot, read the one snapshot the first makes', async t => {
  const i = await install(app)
  await send(i, 'inv_1', '10.00')
  let answers: Json[] = []
  const before = await pages()
  answers = await Promise.all(Array.from({ length: 6 }, () => report(i)))
  const after = await pages()
  const grew = (snapshot: Snapshot) =>
    (after.get(`aged-receivables/${snapshot}`) ?? 0) - (before.get(`aged-receivables/${snapshot}`) ?? 0)
  t.equal(grew('made'), 1, 'one snapshot made')
  // Which of the others waited for it and which came after it depends on when each reached the store.
  t.equal(grew('joined') + grew('kept'), 5, 'the others read it')
  t.ok(answers.every(a => JSON.stringify(a) === JSON.stringify(answers[0])), 'the same answer to each')
})

t.test('the last eight days added up are kept, no more, and only at the current version', async t => {
  const i = await install(app)
  await send(i, 'inv_1', '10.00')
  const days = Array.from({ length: 10 }, (_, k) => `2026-11-${String(10 + k).padStart(2, '0')}`)
  const ask = (day: string) => report(i, 'aged-receivables', { as_of: day })
  t.strictSame(await counted(async () => { for (const d of days) await ask(d) }), ['aged-receivables/made: 10'])
  t.strictSame(await counted(async () => { for (const d of days.slice(2)) await ask(d) }),
    ['aged-receivables/kept: 8'], 'the eight days added up last')
  t.strictSame(await counted(() => ask(days[0]!)), ['aged-receivables/made: 1'], 'an older day is added up again')

  const kept = async () => (await app.db.query<{ n: number }>(
    'select count(*)::int as n from aged_snapshots where org_ref_id = $1 and entity_ref_id = $2',
    [i.orgRefId, i.entityRefId]))[0]!.n
  t.equal(await kept(), 8, 'eight snapshots kept')
  await send(i, 'inv_1', '11.00', { updated: 2 })
  await ask(days[0]!)
  t.equal(await kept(), 1, 'a change: the earlier version\'s snapshots are dropped when the next is made')
})

t.test('changes by SQL in one transaction: rolled back they move nothing; committed, each report and tenant touched',
  async t => {
    const [a, b] = [await install(app), await install(app)]
    for (const i of [a, b]) {
      await send(i, 'inv_1', '10.00')
      await send(i, 'bill_1', '4.00', { kind: 'bill' })
    }
    const all = async () => [
      ...totalOf(await report(a)), ...totalOf(await report(a, 'aged-payables')),
      ...totalOf(await report(b)), ...totalOf(await report(b, 'aged-payables'))
    ]
    t.strictSame(await all(), ['EUR 10.00', 'EUR 4.00', 'EUR 10.00', 'EUR 4.00'])
    const byId = 'where org_ref_id = $1 and entity_ref_id = $2'
    await app.db.tx(async q => {
      await q.query(`update bills set amount_due_minor = 100 ${byId}`, [a.orgRefId, a.entityRefId])
      await q.query('select 1 / 0')
    }).then(() => t.fail('the transaction is rolled back'), () => {})
    t.strictSame(await counted(all), ['aged-payables/kept: 2', 'aged-receivables/kept: 2'], 'rolled back: all kept')

    // Bills before invoices, tenant b before a: the reverse of the order the service writes in.
    await app.db.tx(async q => {
      await q.query(`update bills set amount_due_minor = 500 ${byId}`, [b.orgRefId, b.entityRefId])
      await q.query(`update invoices set amount_due_minor = 2000 ${byId}`, [a.orgRefId, a.entityRefId])
      await q.query(`update bills set amount_due_minor = 600 ${byId}`, [a.orgRefId, a.entityRefId])
    })
    let totals: string[] = []
    t.strictSame(await counted(async () => { totals = await all() }),
      ['aged-payables/made: 2', 'aged-receivables/kept: 1', 'aged-receivables/made: 1'])
    t.strictSame(totals, ['EUR 20.00', 'EUR 6.00', 'EUR 10.00', 'EUR 5.00'])
  })

t.test('a row moved to another tenant changes both; TRUNCATE changes every tenant', async t => {
  const [a, b] = [await install(app), await install(app)]
  await send(a, 'inv_1', '10.00')
  await send(a, 'inv_2', '3.00')
  t.strictSame(totalOf(await report(a)), ['EUR 13.00'])
  t.strictSame(totalOf(await report(b)), [])
  await app.db.query(
    `update invoices set org_ref_id = $3, entity_ref_id = $4
      where org_ref_id = $1 and entity_ref_id = $2 and id = 'inv_2'`,
    [a.orgRefId, a.entityRefId, b.orgRefId, b.entityRefId])
  t.strictSame(totalOf(await report(a)), ['EUR 10.00'], 'the tenant it left')
  t.strictSame(totalOf(await report(b)), ['EUR 3.00'], 'the tenant it reached')
  // Last in the file: it empties every test's invoices.
  await app.db.query('truncate invoices')
  t.strictSame(totalOf(await report(a)), [])
  t.strictSame(totalOf(await report(b)), [])
})
