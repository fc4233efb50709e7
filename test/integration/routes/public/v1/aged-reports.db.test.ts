// The aged receivables and payables reports (docs/records.md#aged-receivables-and-payables): invoices and bills
// arrive through POST /events and are read back through GET .../reports/aged-receivables and aged-payables. Every
// expected answer is written out by hand below.
import t, { type Test } from 'tap'
import { ManualClock } from '../../../../support/clock.js'
import { bearer, build, install, SIGNING_KEY, type InstallOptions, type Installed } from '../../../../support/helper.js'
import { decode, forge, rs256With } from '../../../../support/jwt-forge.js'
import { bill, invoice } from '../../../../support/records.js'
import { publishRaw } from '../../../../support/webhooks.js'

type Json = Record<string, any>

// One app for the file, on a clock the tests set. Access tokens are stamped on the database's clock, so the file's
// clock keeps up with it whenever a tenant is installed (below); the last test moves it to a midnight, with a
// token signed to live that long.
const clock = new ManualClock(Date.now())
const app = await build(t, { WEBHOOK_WORKER: 'false', ACCESS_TOKEN_MAX_LIFETIME: '86400' }, { clock })

/** What differs between the two reports. */
interface Report {
  path: 'aged-receivables' | 'aged-payables'
  party: 'customer' | 'supplier'
  filter: 'customer_id' | 'supplier_id'
  scope: string
  topic: string
  paidTopic: string
  make: typeof invoice
}
const RECEIVABLES: Report = {
  path: 'aged-receivables',
  party: 'customer',
  filter: 'customer_id',
  scope: 'invoices:read',
  topic: 'invoice.updated',
  paidTopic: 'invoice.paid',
  make: invoice
}
const PAYABLES: Report = {
  path: 'aged-payables',
  party: 'supplier',
  filter: 'supplier_id',
  scope: 'bills:read',
  topic: 'bill.updated',
  paidTopic: 'bill.paid',
  make: bill
}
const REPORTS = [RECEIVABLES, PAYABLES]

const AS_OF = '2026-11-27'
/** An instant `n` seconds after 2026-11-01T00:00:00.000Z, as records carry it. */
const at = (n: number): string => new Date(Date.UTC(2026, 10, 1) + n * 1000).toISOString()
/** Zero with the currency's minor digits, for the tax of a line. */
const ZERO: Record<string, string> = { EUR: '0.00', USD: '0.00', JPY: '0', KWD: '0.000' }

interface Tenant extends Installed {
  /** `/public/v1/orgs/{org}/entities/{entity}` */
  path: string
}

/** A tenant of its own (every test its own, so that the 600 requests a minute of an install are never reached). */
async function tenant (opts: InstallOptions = {}): Promise<Tenant> {
  const i = await install(app, opts)
  // The token was stamped on the database's clock: the app's clock must not lag behind it by more than a minute.
  clock.advance(Math.max(0, Date.now() - clock.now()))
  return { ...i, path: `/public/v1/orgs/${i.orgRefId}/entities/${i.entityRefId}` }
}

const appOf = ({ clientId, clientSecret, appSlug, ownerToken }: Installed) =>
  ({ clientId, clientSecret, appSlug, ownerToken })

const qs = (query: Record<string, string | number>) =>
  new URLSearchParams(Object.entries(query).map(([k, v]): [string, string] => [k, String(v)])).toString()

/** GET a report of the tenant with its token (or `token`); the query as given, text or pairs. */
const get = (i: Tenant, r: Report, query: Record<string, string | number> | string = {}, token = i.accessToken) =>
  app.inject({
    method: 'GET',
    url: `${i.path}/reports/${r.path}?${typeof query === 'string' ? query : qs(query)}`,
    headers: bearer(token)
  })

/** A report's answer; throws unless 200. */
async function report (i: Tenant, r: Report, query: Record<string, string | number> | string = {}): Promise<Json> {
  const res = await get(i, r, query)
  if (res.statusCode !== 200) throw new Error(`${r.path}?${JSON.stringify(query)}: ${res.statusCode} ${res.body}`)
  return res.json()
}

interface Doc {
  id: string
  /** The customer's (invoices) or the supplier's (bills) id. */
  party: string
  name?: string
  currency?: string
  due: string
  /** The total: one line of this amount, no tax. */
  amount: string
  /** amount_paid; amount_due is the total less it. */
  paid?: string
  status?: string
  /** updated_at, in seconds after 2026-11-01. */
  updated?: number
}

/** A valid invoice (receivables) or bill (payables), authorised unless said otherwise, its sums made right. */
function doc (r: Report, d: Doc): Json {
  const currency = d.currency ?? 'EUR'
  return r.make({
    id: d.id,
    updated_at: at(d.updated ?? 1),
    created_at: at(0),
    status: d.status ?? 'authorised',
    [r.party]: { id: d.party, name: d.name ?? `Name of ${d.party}` },
    currency,
    due_date: d.due,
    line_items: [{ description: 'Item', quantity: '1', unit_amount: d.amount, tax_amount: ZERO[currency]! }],
    ...(d.paid !== undefined && { amount_paid: d.paid })
  })
}

/** Sends documents as one batch of events (of `topic`, by default the report's update topic). */
async function send (i: Tenant, r: Report, docs: Json[], topic = r.topic): Promise<void> {
  const res = await publishRaw(app, docs.map(data =>
    ({ topic, org_ref_id: i.orgRefId, entity_ref_id: i.entityRefId, data })))
  if (res.statusCode !== 202) throw new Error(`publish: ${res.statusCode} ${res.body}`)
}

/** An entry's or a total's five buckets (in the order they are written: current first), total and count. */
interface Sums {
  current: string
  '1_30': string
  '31_60': string
  '61_90': string
  over_90: string
  total: string
  count: number
}
const sums = (
  current: string, d1to30: string, d31to60: string, d61to90: string, over90: string, total: string, count: number
): Sums => ({ current, '1_30': d1to30, '31_60': d31to60, '61_90': d61to90, over_90: over90, total, count })
const totalOf = (currency: string, s: Sums) => ({ currency, ...s })
const entryOf = (r: Report, id: string, name: string, currency: string, s: Sums, oldest: string) =>
  ({ [r.party]: { id, name }, currency, ...s, oldest_due_date: oldest })

/** The contacts' ids and currencies of a page, in order. */
const keys = (r: Report, contacts: Json[]): string[] => contacts.map(c => `${c[r.party].id}/${c.currency}`)

/**
 * Pages through a report to its end, passing each page's next_cursor with the same other parameters; `between`
 * runs after every page but the last. Checks every page: its keys, the day counted to, full pages but the last,
 * next_cursor null only there. Returns the pages.
 */
async function walk (
  t: Test, i: Tenant, r: Report, query: Record<string, string | number>,
  between?: (page: Json, n: number) => Promise<void>
): Promise<Json[]> {
  const limit = Number(query.limit ?? 50)
  const pages: Json[] = []
  let cursor: string | undefined
  for (let n = 0; n < 100; n++) {
    const page = await report(i, r, { ...query, ...(cursor !== undefined && { cursor }) })
    t.same(Object.keys(page), ['as_of', 'totals', 'contacts', 'next_cursor'], `${r.path} page ${n}: its keys`)
    if (n > 0) t.equal(page.as_of, pages[0]!.as_of, `${r.path} page ${n}: as of the first page's day`)
    pages.push(page)
    if (page.next_cursor === null) {
      const sizes = pages.map(p => p.contacts.length)
      t.ok(sizes.slice(0, -1).every(s => s === limit) && sizes.at(-1)! <= limit,
        `${r.path} ${JSON.stringify(query)}: full pages, then the last (${sizes.join(' ')})`)
      return pages
    }
    t.type(page.next_cursor, 'string')
    cursor = page.next_cursor
    await between?.(page, n)
  }
  throw new Error('no last page after 100')
}

t.test('every bucket boundary, on both reports: due today is current, 30 days overdue 1_30, 31 days 31_60, ...',
  async t => {
    // One contact per boundary, the amount rising with the days overdue, so that the order is the days' order.
    const DUE: Array<[id: string, due: string, amount: string]> = [
      ['b_m1', '2026-11-28', '10.00'], // due tomorrow
      ['b_00', '2026-11-27', '20.00'], // due today
      ['b_01', '2026-11-26', '30.00'],
      ['b_30', '2026-10-28', '40.00'],
      ['b_31', '2026-10-27', '50.00'],
      ['b_60', '2026-09-28', '60.00'],
      ['b_61', '2026-09-27', '70.00'],
      ['b_90', '2026-08-29', '80.00'],
      ['b_91', '2026-08-28', '90.00']
    ]
    const i = await tenant()
    for (const r of REPORTS) {
      await send(i, r, DUE.map(([id, due, amount], k) => doc(r, { id: `d_${id}`, party: id, due, amount, updated: k })))
      const one = (id: string, s: Sums) => entryOf(r, id, `Name of ${id}`, 'EUR', s, DUE.find(d => d[0] === id)![1])
      t.strictSame(await report(i, r, { as_of: AS_OF }), {
        as_of: AS_OF,
        totals: [totalOf('EUR', sums('30.00', '70.00', '110.00', '150.00', '90.00', '450.00', 9))],
        contacts: [
          one('b_91', sums('0.00', '0.00', '0.00', '0.00', '90.00', '90.00', 1)),
          one('b_90', sums('0.00', '0.00', '0.00', '80.00', '0.00', '80.00', 1)),
          one('b_61', sums('0.00', '0.00', '0.00', '70.00', '0.00', '70.00', 1)),
          one('b_60', sums('0.00', '0.00', '60.00', '0.00', '0.00', '60.00', 1)),
          one('b_31', sums('0.00', '0.00', '50.00', '0.00', '0.00', '50.00', 1)),
          one('b_30', sums('0.00', '40.00', '0.00', '0.00', '0.00', '40.00', 1)),
          one('b_01', sums('0.00', '30.00', '0.00', '0.00', '0.00', '30.00', 1)),
          one('b_00', sums('20.00', '0.00', '0.00', '0.00', '0.00', '20.00', 1)),
          one('b_m1', sums('10.00', '0.00', '0.00', '0.00', '0.00', '10.00', 1))
        ],
        next_cursor: null
      }, `${r.path}: as of ${AS_OF}`)

      // A day later every document is a day later: each boundary crossed once.
      t.strictSame(await report(i, r, { as_of: '2026-11-28' }), {
        as_of: '2026-11-28',
        totals: [totalOf('EUR', sums('10.00', '50.00', '90.00', '130.00', '170.00', '450.00', 9))],
        contacts: [
          one('b_91', sums('0.00', '0.00', '0.00', '0.00', '90.00', '90.00', 1)),
          one('b_90', sums('0.00', '0.00', '0.00', '0.00', '80.00', '80.00', 1)),
          one('b_61', sums('0.00', '0.00', '0.00', '70.00', '0.00', '70.00', 1)),
          one('b_60', sums('0.00', '0.00', '0.00', '60.00', '0.00', '60.00', 1)),
          one('b_31', sums('0.00', '0.00', '50.00', '0.00', '0.00', '50.00', 1)),
          one('b_30', sums('0.00', '0.00', '40.00', '0.00', '0.00', '40.00', 1)),
          one('b_01', sums('0.00', '30.00', '0.00', '0.00', '0.00', '30.00', 1)),
          one('b_00', sums('0.00', '20.00', '0.00', '0.00', '0.00', '20.00', 1)),
          one('b_m1', sums('10.00', '0.00', '0.00', '0.00', '0.00', '10.00', 1))
        ],
        next_cursor: null
      }, `${r.path}: as of the day after`)

      // The first and the last day a date can name: nothing due yet, everything long overdue.
      const first = await report(i, r, { as_of: '0001-01-01' })
      t.strictSame(first.totals, [totalOf('EUR', sums('450.00', '0.00', '0.00', '0.00', '0.00', '450.00', 9))])
      t.strictSame(keys(r, first.contacts), ['b_91', 'b_90', 'b_61', 'b_60', 'b_31', 'b_30', 'b_01', 'b_00', 'b_m1']
        .map(id => `${id}/EUR`), 'all current: by amount')
      const last = await report(i, r, { as_of: '9999-12-31' })
      t.strictSame(last.totals, [totalOf('EUR', sums('0.00', '0.00', '0.00', '0.00', '450.00', '450.00', 9))])
      t.equal(last.as_of, '9999-12-31')
    }
  })

t.test('what counts: authorised documents with an amount_due other than zero, as they are now', async t => {
  const i = await tenant()
  for (const r of REPORTS) {
    await send(i, r, [
      // Counted: a partly paid one (its remaining amount_due), one unpaid, one overpaid (a negative amount_due).
      doc(r, { id: 'part', party: 'k_1', due: '2026-11-20', amount: '100.00', paid: '30.00' }),
      doc(r, { id: 'open', party: 'k_1', due: '2026-12-31', amount: '45.50' }),
      doc(r, { id: 'over', party: 'k_2', due: '2026-11-01', amount: '50.00', paid: '80.00' }),
      // Not counted, whatever they still owe: a draft (due before every counted one), a paid one, a voided one,
      // and an authorised one with nothing left to pay.
      doc(r, { id: 'draft', party: 'k_1', due: '2020-01-01', amount: '1000.00', status: 'draft' }),
      doc(r, { id: 'paid', party: 'k_1', due: '2026-01-01', amount: '2000.00', paid: '0.00', status: 'paid' }),
      doc(r, { id: 'void', party: 'k_1', due: '2026-01-01', amount: '4000.00', status: 'voided' }),
      doc(r, { id: 'settled', party: 'k_1', due: '2026-01-01', amount: '8000.00', paid: '8000.00' }),
      doc(r, { id: 'paid_2', party: 'k_3', due: '2026-01-01', amount: '16000.00', status: 'paid' }),
      doc(r, { id: 'draft_2', party: 'k_3', due: '2026-01-01', amount: '32000.00', status: 'draft' }),
      // Owed and owed back in one contact: counted, a total of zero.
      doc(r, { id: 'even_1', party: 'k_4', due: '2026-11-10', amount: '25.00' }),
      doc(r, { id: 'even_2', party: 'k_4', due: '2026-11-30', amount: '0.00', paid: '25.00' })
    ])
    t.strictSame(await report(i, r, { as_of: AS_OF }), {
      as_of: AS_OF,
      totals: [totalOf('EUR', sums('20.50', '65.00', '0.00', '0.00', '0.00', '85.50', 5))],
      contacts: [
        entryOf(r, 'k_1', 'Name of k_1', 'EUR', sums('45.50', '70.00', '0.00', '0.00', '0.00', '115.50', 2),
          '2026-11-20'),
        entryOf(r, 'k_4', 'Name of k_4', 'EUR', sums('-25.00', '25.00', '0.00', '0.00', '0.00', '0.00', 2),
          '2026-11-10'),
        entryOf(r, 'k_2', 'Name of k_2', 'EUR', sums('0.00', '-30.00', '0.00', '0.00', '0.00', '-30.00', 1),
          '2026-11-01')
      ],
      next_cursor: null
    }, `${r.path}: k_3 has nothing open`)
    // Negative sums in a cursor's position: k_4's page resumes at k_2.
    t.strictSame(keys(r, (await walk(t, i, r, { as_of: AS_OF, limit: 1 })).flatMap(p => p.contacts)),
      ['k_1/EUR', 'k_4/EUR', 'k_2/EUR'], `${r.path}: page by page`)

    // Now: the partly paid one is paid in full, the voided one back to authorised, the overpaid one voided.
    await send(i, r, [
      doc(r, { id: 'part', party: 'k_1', due: '2026-11-20', amount: '100.00', status: 'paid', updated: 9 }),
      doc(r, { id: 'void', party: 'k_1', due: '2026-01-01', amount: '4000.00', paid: '1.00', updated: 9 }),
      doc(r, {
        id: 'over',
        party: 'k_2',
        due: '2026-11-01',
        amount: '50.00',
        paid: '80.00',
        status: 'voided',
        updated: 9
      })
    ], r.paidTopic)
    t.strictSame(await report(i, r, { as_of: AS_OF }), {
      as_of: AS_OF,
      totals: [totalOf('EUR', sums('20.50', '25.00', '0.00', '0.00', '3999.00', '4044.50', 4))],
      contacts: [
        entryOf(r, 'k_1', 'Name of k_1', 'EUR', sums('45.50', '0.00', '0.00', '0.00', '3999.00', '4044.50', 2),
          '2026-01-01'),
        entryOf(r, 'k_4', 'Name of k_4', 'EUR', sums('-25.00', '25.00', '0.00', '0.00', '0.00', '0.00', 2),
          '2026-11-10')
      ],
      next_cursor: null
    }, `${r.path}: the documents as they are now`)
  }
})

t.test('three currencies: their minor digits, exact sums, totals by currency code', async t => {
  const i = await tenant()
  const r = RECEIVABLES
  await send(i, r, [
    // Sent in no particular order of currency.
    doc(r, { id: 'kwd_1', party: 'gulf', currency: 'KWD', due: '2026-11-20', amount: '0.125' }),
    doc(r, { id: 'kwd_2', party: 'gulf', currency: 'KWD', due: '2026-08-01', amount: '1000.250' }),
    doc(r, { id: 'kwd_3', party: 'acme', currency: 'KWD', due: '2026-12-01', amount: '0.001' }),
    doc(r, { id: 'jpy_1', party: 'acme', currency: 'JPY', due: '2026-10-01', amount: '1250' }),
    doc(r, { id: 'jpy_2', party: 'tokyo', currency: 'JPY', due: '2026-11-27', amount: '99999999999999999999' }),
    doc(r, { id: 'jpy_3', party: 'tokyo', currency: 'JPY', due: '2026-11-30', amount: '1' }),
    // 0.10 + 0.20 is 0.30, not 0.30000000000000004; and sums past 2^63 minor units.
    doc(r, { id: 'eur_1', party: 'acme', due: '2026-11-01', amount: '0.10' }),
    doc(r, { id: 'eur_2', party: 'acme', due: '2026-11-02', amount: '0.20' }),
    doc(r, { id: 'eur_3', party: 'big', due: '2026-06-01', amount: '99999999999999999.99' }),
    doc(r, { id: 'eur_4', party: 'big', due: '2026-06-02', amount: '99999999999999999.99' })
  ])
  const expected = {
    as_of: AS_OF,
    totals: [
      totalOf('EUR', sums('0.00', '0.30', '0.00', '0.00', '199999999999999999.98', '200000000000000000.28', 4)),
      totalOf('JPY', sums('100000000000000000000', '0', '1250', '0', '0', '100000000000000001250', 3)),
      totalOf('KWD', sums('0.001', '0.125', '0.000', '0.000', '1000.250', '1000.376', 3))
    ],
    contacts: [
      entryOf(r, 'big', 'Name of big', 'EUR',
        sums('0.00', '0.00', '0.00', '0.00', '199999999999999999.98', '199999999999999999.98', 2), '2026-06-01'),
      entryOf(r, 'gulf', 'Name of gulf', 'KWD', sums('0.000', '0.125', '0.000', '0.000', '1000.250', '1000.375', 2),
        '2026-08-01'),
      entryOf(r, 'acme', 'Name of acme', 'JPY', sums('0', '0', '1250', '0', '0', '1250', 1), '2026-10-01'),
      entryOf(r, 'acme', 'Name of acme', 'EUR', sums('0.00', '0.30', '0.00', '0.00', '0.00', '0.30', 2), '2026-11-01'),
      entryOf(r, 'tokyo', 'Name of tokyo', 'JPY',
        sums('100000000000000000000', '0', '0', '0', '0', '100000000000000000000', 2), '2026-11-27'),
      entryOf(r, 'acme', 'Name of acme', 'KWD', sums('0.001', '0.000', '0.000', '0.000', '0.000', '0.001', 1),
        '2026-12-01')
    ],
    next_cursor: null
  }
  const res = await get(i, r, { as_of: AS_OF })
  t.equal(res.statusCode, 200)
  t.equal(res.headers['content-type'], 'application/json; charset=utf-8')
  t.strictSame(res.json(), expected)
  // The bytes: compact, keys in this order, money as strings.
  const bucketsText = (s: string[]) =>
    `"current":"${s[0]}","1_30":"${s[1]}","31_60":"${s[2]}","61_90":"${s[3]}","over_90":"${s[4]}","total":"${s[5]}"`
  t.equal(res.body, '{"as_of":"2026-11-27","totals":[' +
    `{"currency":"EUR",${bucketsText(['0.00', '0.30', '0.00', '0.00', '199999999999999999.98',
      '200000000000000000.28'])},"count":4},` +
    `{"currency":"JPY",${bucketsText(['100000000000000000000', '0', '1250', '0', '0', '100000000000000001250'])},` +
    '"count":3},' +
    `{"currency":"KWD",${bucketsText(['0.001', '0.125', '0.000', '0.000', '1000.250', '1000.376'])},"count":3}],` +
    '"contacts":[' +
    `{"customer":{"id":"big","name":"Name of big"},"currency":"EUR",${bucketsText(['0.00', '0.00', '0.00', '0.00',
      '199999999999999999.98', '199999999999999999.98'])},"count":2,"oldest_due_date":"2026-06-01"},` +
    `{"customer":{"id":"gulf","name":"Name of gulf"},"currency":"KWD",${bucketsText(['0.000', '0.125', '0.000',
      '0.000', '1000.250', '1000.375'])},"count":2,"oldest_due_date":"2026-08-01"},` +
    `{"customer":{"id":"acme","name":"Name of acme"},"currency":"JPY",${bucketsText(['0', '0', '1250', '0', '0',
      '1250'])},"count":1,"oldest_due_date":"2026-10-01"},` +
    `{"customer":{"id":"acme","name":"Name of acme"},"currency":"EUR",${bucketsText(['0.00', '0.30', '0.00', '0.00',
      '0.00', '0.30'])},"count":2,"oldest_due_date":"2026-11-01"},` +
    `{"customer":{"id":"tokyo","name":"Name of tokyo"},"currency":"JPY",${bucketsText(['100000000000000000000', '0',
      '0', '0', '0', '100000000000000000000'])},"count":2,"oldest_due_date":"2026-11-27"},` +
    `{"customer":{"id":"acme","name":"Name of acme"},"currency":"KWD",${bucketsText(['0.001', '0.000', '0.000',
      '0.000', '0.000', '0.001'])},"count":1,"oldest_due_date":"2026-12-01"}` +
    '],"next_cursor":null}', 'the body, byte for byte')
  // Sums past 2^63 minor units in a cursor's position, page by page.
  const pages = await walk(t, i, r, { as_of: AS_OF, limit: 1 })
  t.strictSame(pages.flatMap(p => p.contacts), expected.contacts)
  t.ok(pages.every(p => JSON.stringify(p.totals) === JSON.stringify(expected.totals)), 'the totals on every page')
})

t.test('the order of contacts: by over_90, 61_90, 31_60, 1_30, current, descending, then id and currency',
  async t => {
    // Each pair of neighbours differs first in the bucket named; ids run against the order, so that ranking by id
    // would reverse it.
    const DAYS: Record<string, string> = {
      over_90: '2026-08-01', '61_90': '2026-09-01', '31_60': '2026-10-01', '1_30': '2026-11-01', current: '2026-12-01'
    }
    const spread: Array<[id: string, amounts: Partial<Record<string, string>>]> = [
      ['p_9', { over_90: '100.00' }],
      ['p_8', { over_90: '50.00', '61_90': '999.00' }],
      ['p_7', { over_90: '50.00', '61_90': '10.00', '31_60': '999.00' }],
      ['p_6', { over_90: '50.00', '61_90': '10.00', '31_60': '5.00', '1_30': '999.00' }],
      ['p_5', { over_90: '50.00', '61_90': '10.00', '31_60': '5.00', '1_30': '1.00', current: '1000.00' }],
      ['p_4', { over_90: '50.00', '61_90': '10.00', '31_60': '5.00', '1_30': '1.00', current: '999.00' }]
    ]
    for (const r of REPORTS) {
      const i = await tenant()
      let n = 0
      const docs = spread.flatMap(([id, amounts]) => Object.entries(amounts)
        .map(([bucket, amount]) => doc(r, { id: `x_${++n}`, party: id, due: DAYS[bucket]!, amount: amount! })))
      // Equal buckets: byte-wise id order ('C_1' before 'c_0', unlike a linguistic collation), then currency. A
      // contact in two currencies is two entries.
      for (const [id, currency] of [['c_0', 'EUR'], ['C_1', 'USD'], ['C_1', 'EUR'], ['B_2', 'EUR'], ['b_3', 'EUR']]) {
        docs.push(doc(r, { id: `x_${++n}`, party: id!, currency, due: DAYS['1_30']!, amount: '7.00' }))
      }
      // Compared in minor units across currencies: JPY 800 is 800 units, less than EUR 9.00 (900 cents), more than
      // EUR 7.00 (700 cents), which is more than KWD 0.650 (650 fils).
      docs.push(doc(r, { id: `x_${++n}`, party: 'yen', currency: 'JPY', due: DAYS['1_30']!, amount: '800' }))
      docs.push(doc(r, { id: `x_${++n}`, party: 'eur', due: DAYS['1_30']!, amount: '9.00' }))
      docs.push(doc(r, { id: `x_${++n}`, party: 'dinar', currency: 'KWD', due: DAYS['1_30']!, amount: '0.650' }))
      // Negative sums come after zero and positive ones.
      docs.push(doc(r, { id: `x_${++n}`, party: 'a_credit', due: DAYS['1_30']!, amount: '0.00', paid: '3.00' }))
      await send(i, r, docs.reverse())
      const expected = ['p_9', 'p_8', 'p_7', 'p_6', 'p_5', 'p_4'].map(id => `${id}/EUR`).concat(
        'eur/EUR', 'yen/JPY', 'B_2/EUR', 'C_1/EUR', 'C_1/USD', 'b_3/EUR', 'c_0/EUR', 'dinar/KWD', 'a_credit/EUR')
      const whole = await report(i, r, { as_of: AS_OF, limit: 100 })
      t.strictSame(keys(r, whole.contacts), expected, `${r.path}: the order`)
      t.strictSame(whole.contacts.slice(0, 6).map((c: Json) => [c.over_90, c['61_90'], c['31_60'], c['1_30'],
        c.current]), [
        ['100.00', '0.00', '0.00', '0.00', '0.00'],
        ['50.00', '999.00', '0.00', '0.00', '0.00'],
        ['50.00', '10.00', '999.00', '0.00', '0.00'],
        ['50.00', '10.00', '5.00', '999.00', '0.00'],
        ['50.00', '10.00', '5.00', '1.00', '1000.00'],
        ['50.00', '10.00', '5.00', '1.00', '999.00']
      ])
      t.strictSame(whole.totals.map((x: Json) => [x.currency, x.total, x.count]),
        [['EUR', '5437.00', 26], ['JPY', '800', 1], ['KWD', '0.650', 1], ['USD', '7.00', 1]], `${r.path}: totals`)
      // The same order page by page, whatever the page size.
      for (const limit of [1, 4]) {
        const pages = await walk(t, i, r, { as_of: AS_OF, limit })
        t.strictSame(keys(r, pages.flatMap(p => p.contacts)), expected, `${r.path}, limit ${limit}`)
      }
    }
  })

t.test("a contact's name is the one on its newest document, whatever that document's status", async t => {
  for (const r of REPORTS) {
    const i = await tenant()
    const counted = (id: string, party: string, name: string, updated: number) =>
      doc(r, { id, party, name, due: '2026-11-01', amount: '1.00', updated })
    await send(i, r, [
      counted('n_1', 'named', 'Old Name', 10),
      doc(r, {
        id: 'n_2',
        party: 'named',
        name: 'Newest Name',
        due: '2026-11-01',
        amount: '5.00',
        status: 'paid',
        updated: 30
      }),
      doc(r, {
        id: 'n_3',
        party: 'named',
        name: 'Middle Name',
        due: '2026-11-01',
        amount: '5.00',
        status: 'draft',
        updated: 20
      }),
      // The same updated_at: the greater id, byte-wise ('t_0' after 'T_1'), is the newer.
      counted('T_1', 'tied', 'Upper', 10),
      counted('t_0', 'tied', 'Lower', 10),
      // Its newest document in another currency.
      counted('o_1', 'other_currency', 'Euro Name', 10),
      doc(r, {
        id: 'o_2',
        party: 'other_currency',
        name: 'Yen Name',
        currency: 'JPY',
        due: '2026-11-01',
        amount: '100',
        status: 'voided',
        updated: 11
      })
    ])
    const names = async () => Object.fromEntries((await report(i, r, { as_of: AS_OF })).contacts
      .map((c: Json) => [c[r.party].id, c[r.party].name]))
    t.strictSame(await names(), { named: 'Newest Name', tied: 'Lower', other_currency: 'Yen Name' }, r.path)

    // A newer version renames; a late one (older than the copy kept) changes nothing.
    await send(i, r, [
      counted('n_1', 'named', 'Renamed', 40),
      counted('o_1', 'other_currency', 'Too Late', 5)
    ])
    t.strictSame(await names(), { named: 'Renamed', tied: 'Lower', other_currency: 'Yen Name' }, r.path)
    // A document that moves to another contact takes its name there, and leaves the old contact.
    await send(i, r, [counted('t_0', 'moved', 'Moved Name', 50)])
    t.strictSame(await names(), { named: 'Renamed', tied: 'Upper', other_currency: 'Yen Name', moved: 'Moved Name' })
  }
})

t.test('paging with limit 1: every contact once, the same totals on every page, null next_cursor on the last',
  async t => {
    for (const r of REPORTS) {
      const i = await tenant()
      const docs = Array.from({ length: 7 }, (_, k) => doc(r, {
        id: `pg_${k}`,
        party: `q_${k % 5}`,
        currency: k === 6 ? 'JPY' : 'EUR',
        due: `2026-${String(6 + k).padStart(2, '0')}-15`,
        amount: k === 6 ? '700' : `${k + 1}0.00`
      }))
      await send(i, r, docs)
      // As of 2026-11-27: due 06-15, 07-15 and 08-15 over 90 days overdue; 09-15 61_90 (73 days); 10-15 31_60 (43);
      // 11-15 1_30 (12); 12-15 current.
      const expectedTotals = [
        totalOf('EUR', sums('0.00', '60.00', '50.00', '40.00', '60.00', '210.00', 6)),
        totalOf('JPY', sums('700', '0', '0', '0', '0', '700', 1))
      ]
      const expectedContacts = [
        // q_0: k=0 (10.00, over_90) and k=5 (60.00, 1_30); q_1: k=1 (20.00, over_90) and JPY k=6 (700, current);
        // q_2: 30.00 over_90; q_3: 40.00 61_90; q_4: 50.00 31_60.
        entryOf(r, 'q_2', 'Name of q_2', 'EUR', sums('0.00', '0.00', '0.00', '0.00', '30.00', '30.00', 1),
          '2026-08-15'),
        entryOf(r, 'q_1', 'Name of q_1', 'EUR', sums('0.00', '0.00', '0.00', '0.00', '20.00', '20.00', 1),
          '2026-07-15'),
        entryOf(r, 'q_0', 'Name of q_0', 'EUR', sums('0.00', '60.00', '0.00', '0.00', '10.00', '70.00', 2),
          '2026-06-15'),
        entryOf(r, 'q_3', 'Name of q_3', 'EUR', sums('0.00', '0.00', '0.00', '40.00', '0.00', '40.00', 1),
          '2026-09-15'),
        entryOf(r, 'q_4', 'Name of q_4', 'EUR', sums('0.00', '0.00', '50.00', '0.00', '0.00', '50.00', 1),
          '2026-10-15'),
        entryOf(r, 'q_1', 'Name of q_1', 'JPY', sums('700', '0', '0', '0', '0', '700', 1), '2026-12-15')
      ]
      t.strictSame(await report(i, r, { as_of: AS_OF }),
        { as_of: AS_OF, totals: expectedTotals, contacts: expectedContacts, next_cursor: null }, `${r.path}: whole`)
      for (const limit of [1, 2, 5]) {
        const pages = await walk(t, i, r, { as_of: AS_OF, limit })
        t.equal(pages.length, Math.ceil(6 / limit), `limit ${limit}: its number of pages`)
        t.ok(pages.every(p => p.as_of === AS_OF), 'every page is as of the same day')
        t.ok(pages.every(p => JSON.stringify(p.totals) === JSON.stringify(expectedTotals)),
          `${r.path}, limit ${limit}: the totals of every contact on every page`)
        t.strictSame(pages.flatMap(p => p.contacts), expectedContacts, `${r.path}, limit ${limit}: each contact once`)
      }
      // The page size may change between pages; the cursor still resumes after the last contact shown.
      const first = await report(i, r, { as_of: AS_OF, limit: 2 })
      const rest = await report(i, r, { as_of: AS_OF, limit: 100, cursor: first.next_cursor })
      t.strictSame(rest.contacts, expectedContacts.slice(2))
      t.equal(rest.next_cursor, null)
    }
  })

t.test('the default page holds 50 contacts, the largest 100', async t => {
  const i = await tenant()
  const r = RECEIVABLES
  // 101 contacts, l_000 owing 1.00 to l_100 owing 101.00: the order is l_100 down to l_000.
  const docs = Array.from({ length: 101 }, (_, k) => doc(r, {
    id: `l_doc_${k}`, party: `l_${String(k).padStart(3, '0')}`, due: '2026-12-01', amount: `${k + 1}.00`
  }))
  await send(i, r, docs.slice(0, 100))
  await send(i, r, docs.slice(100))
  const ids = (page: Json) => page.contacts.map((c: Json) => c.customer.id)
  const from = (high: number, count: number) =>
    Array.from({ length: count }, (_, k) => `l_${String(high - k).padStart(3, '0')}`)
  const totals = [totalOf('EUR', sums('5151.00', '0.00', '0.00', '0.00', '0.00', '5151.00', 101))]

  const byDefault = await report(i, r, { as_of: AS_OF })
  t.strictSame(ids(byDefault), from(100, 50), 'without limit: 50')
  t.strictSame(byDefault.totals, totals)
  t.type(byDefault.next_cursor, 'string')
  const most = await report(i, r, { as_of: AS_OF, limit: 100 })
  t.strictSame(ids(most), from(100, 100), 'limit 100')
  const rest = await report(i, r, { as_of: AS_OF, limit: 100, cursor: most.next_cursor })
  t.strictSame(ids(rest), ['l_000'])
  t.strictSame(rest.totals, totals)
  t.equal(rest.next_cursor, null)
})

t.test('paging while documents are paid between pages: none of the others skipped or repeated', async t => {
  for (const r of REPORTS) {
    const i = await tenant()
    // Six contacts, one document each, ranked by amount (all 1 to 30 days overdue): s_1 first.
    const open = (k: number, over: Partial<Doc> = {}) => doc(r, {
      id: `s_doc_${k}`, party: `s_${k}`, due: '2026-11-20', amount: `${70 - 10 * k}.00`, updated: 1, ...over
    })
    await send(i, r, [1, 2, 3, 4, 5, 6].map(k => open(k)))
    const pages = await walk(t, i, r, { as_of: AS_OF, limit: 1 }, async (_, n) => {
      // After the first page, s_3 (not shown yet) is paid; after the second, s_2 (the last shown, whose position
      // the cursor holds) is paid as well.
      if (n === 0) await send(i, r, [open(3, { status: 'paid', updated: 100 })], r.paidTopic)
      if (n === 1) await send(i, r, [open(2, { status: 'paid', updated: 100 })], r.paidTopic)
    })
    t.strictSame(keys(r, pages.flatMap(p => p.contacts)), ['s_1/EUR', 's_2/EUR', 's_4/EUR', 's_5/EUR', 's_6/EUR'],
      `${r.path}: s_3 gone, no one twice`)
    t.strictSame(pages.map(p => [p.totals[0].total, p.totals[0].count]),
      [['210.00', 6], ['170.00', 5], ['120.00', 4], ['120.00', 4], ['120.00', 4]],
      'each page adds up what is open when it is asked for')
  }
})

t.test('filters: customer_id / supplier_id and currency, alone, together and while paging', async t => {
  for (const r of REPORTS) {
    const i = await tenant()
    await send(i, r, [
      doc(r, { id: 'f_1', party: 'f_a', due: '2026-11-01', amount: '10.00' }),
      doc(r, { id: 'f_2', party: 'f_a', currency: 'JPY', due: '2026-12-01', amount: '500' }),
      doc(r, { id: 'f_3', party: 'f_b', due: '2026-08-01', amount: '20.00' }),
      doc(r, { id: 'f_4', party: 'f_c', due: '2026-10-01', amount: '30.00' }),
      doc(r, { id: 'f_5', party: 'f_b', currency: 'JPY', due: '2026-09-01', amount: '40' }),
      // Not counted: it does not make f_d a contact of any filter.
      doc(r, { id: 'f_6', party: 'f_d', due: '2026-10-01', amount: '30.00', status: 'draft' })
    ])
    const a = entryOf(r, 'f_a', 'Name of f_a', 'EUR', sums('0.00', '10.00', '0.00', '0.00', '0.00', '10.00', 1),
      '2026-11-01')
    const aYen = entryOf(r, 'f_a', 'Name of f_a', 'JPY', sums('500', '0', '0', '0', '0', '500', 1), '2026-12-01')
    const b = entryOf(r, 'f_b', 'Name of f_b', 'EUR', sums('0.00', '0.00', '0.00', '0.00', '20.00', '20.00', 1),
      '2026-08-01')
    const bYen = entryOf(r, 'f_b', 'Name of f_b', 'JPY', sums('0', '0', '0', '40', '0', '40', 1), '2026-09-01')
    const c = entryOf(r, 'f_c', 'Name of f_c', 'EUR', sums('0.00', '0.00', '30.00', '0.00', '0.00', '30.00', 1),
      '2026-10-01')
    const cases: Array<[Record<string, string>, Json[], Json[]]> = [
      [{}, [
        totalOf('EUR', sums('0.00', '10.00', '30.00', '0.00', '20.00', '60.00', 3)),
        totalOf('JPY', sums('500', '0', '0', '40', '0', '540', 2))
      ], [b, bYen, c, a, aYen]],
      [{ [r.filter]: 'f_a' }, [
        totalOf('EUR', sums('0.00', '10.00', '0.00', '0.00', '0.00', '10.00', 1)),
        totalOf('JPY', sums('500', '0', '0', '0', '0', '500', 1))
      ], [a, aYen]],
      [{ currency: 'JPY' }, [totalOf('JPY', sums('500', '0', '0', '40', '0', '540', 2))], [bYen, aYen]],
      [{ currency: 'EUR', [r.filter]: 'f_b' }, [totalOf('EUR', sums('0.00', '0.00', '0.00', '0.00', '20.00', '20.00',
        1))], [b]],
      [{ currency: 'USD' }, [], []],
      [{ [r.filter]: 'f_d' }, [], []],
      [{ [r.filter]: 'F_A' }, [], []]
    ]
    for (const [filter, totals, contacts] of cases) {
      const what = `${r.path} ${JSON.stringify(filter)}`
      t.strictSame(await report(i, r, { as_of: AS_OF, ...filter }),
        { as_of: AS_OF, totals, contacts, next_cursor: null }, what)
      const pages = await walk(t, i, r, { as_of: AS_OF, limit: 1, ...filter })
      t.strictSame(pages.flatMap(p => p.contacts), contacts, `${what}, page by page`)
      t.ok(pages.every(p => JSON.stringify(p.totals) === JSON.stringify(totals)), `${what}: the totals on every page`)
    }
  }
})

t.test('every refused query: 400 validation_error naming the parameter, or invalid_cursor', async t => {
  const i = await tenant()
  const elsewhere = await tenant()
  for (const who of [i, elsewhere]) {
    for (const r of REPORTS) {
      await send(who, r, [
        ...[1, 2, 3].map(k => doc(r, { id: `r_${k}`, party: `r_${k}`, due: '2026-11-01', amount: `${k}.00` })),
        // r_1 in a second currency: a report of r_1 alone has two entries.
        doc(r, { id: 'r_4', party: 'r_1', currency: 'JPY', due: '2026-11-01', amount: '5' })
      ])
    }
  }
  const cursorOf = async (who: Tenant, r: Report, query: Record<string, string | number>) => {
    const page = await report(who, r, { limit: 1, ...query })
    t.type(page.next_cursor, 'string')
    return page.next_cursor as string
  }
  const plain = await cursorOf(i, RECEIVABLES, { as_of: AS_OF })
  const defaultDay = await cursorOf(i, RECEIVABLES, {})
  const ofPayables = await cursorOf(i, PAYABLES, { as_of: AS_OF })
  const ofEur = await cursorOf(i, RECEIVABLES, { as_of: AS_OF, currency: 'EUR' })
  const ofContact = await cursorOf(i, RECEIVABLES, { as_of: AS_OF, customer_id: 'r_1' })
  const ofElsewhere = await cursorOf(elsewhere, RECEIVABLES, { as_of: AS_OF })

  // Where they belong, the cursors resume; with the same explicit as_of too, and with another limit.
  const good: Array<[Tenant, Report, Record<string, string | number>]> = [
    [i, RECEIVABLES, { cursor: plain }],
    [i, RECEIVABLES, { cursor: plain, as_of: AS_OF, limit: 2 }],
    [i, RECEIVABLES, { cursor: defaultDay }],
    [i, RECEIVABLES, { cursor: defaultDay, as_of: new Date(clock.now()).toISOString().slice(0, 10) }],
    [i, PAYABLES, { cursor: ofPayables }],
    [i, RECEIVABLES, { cursor: ofEur, currency: 'EUR' }],
    [i, RECEIVABLES, { cursor: ofContact, customer_id: 'r_1', as_of: AS_OF }],
    [elsewhere, RECEIVABLES, { cursor: ofElsewhere }]
  ]
  for (const [who, r, query] of good) {
    const res = await get(who, r, query)
    t.equal(res.statusCode, 200, `${r.path} ${JSON.stringify(query)}: ${res.body}`)
  }

  const flip = (c: string) => c === 'A' ? 'B' : 'A'
  const [version, payload, tag] = plain.split('.') as [string, string, string]
  const badCursors: Array<[string, Report, Record<string, string>]> = [
    ['garbage', RECEIVABLES, { cursor: 'not a cursor!' }],
    ['a character of its position changed', RECEIVABLES,
      { cursor: [version, flip(payload[0]!) + payload.slice(1), tag].join('.') }],
    ['a character of its tag changed', RECEIVABLES, { cursor: plain.slice(0, -1) + flip(plain.at(-1)!) }],
    ['cut short', RECEIVABLES, { cursor: plain.slice(0, -3) }],
    ['another version', RECEIVABLES, { cursor: ['v2', payload, tag].join('.') }],
    ['of another tenant', RECEIVABLES, { cursor: ofElsewhere }],
    ['of the other report', PAYABLES, { cursor: plain }],
    ['of payables on receivables', RECEIVABLES, { cursor: ofPayables }],
    ['with a currency it was not issued with', RECEIVABLES, { cursor: plain, currency: 'EUR' }],
    ['without the currency it was issued with', RECEIVABLES, { cursor: ofEur }],
    ['with another currency', RECEIVABLES, { cursor: ofEur, currency: 'JPY' }],
    ['with a contact it was not issued with', RECEIVABLES, { cursor: plain, customer_id: 'r_1' }],
    ['without the contact it was issued with', RECEIVABLES, { cursor: ofContact }],
    ['with another explicit as_of', RECEIVABLES, { cursor: plain, as_of: '2026-11-28' }],
    ['issued without as_of, with an explicit one of another day', RECEIVABLES,
      { cursor: defaultDay, as_of: '2020-02-29' }]
  ]
  for (const [name, r, query] of badCursors) {
    const res = await get(i, r, query)
    t.equal(res.statusCode, 400, name)
    t.strictSame(res.json(), {
      error: 'invalid_cursor',
      message: 'The cursor is not one this listing gave: pass next_cursor unchanged, with the same order.'
    }, name)
  }

  const badQueries: Array<[string, string]> = [
    ['as_of=2026-02-30', '/as_of'],
    ['as_of=26-11-01', '/as_of'],
    ['as_of=0000-01-01', '/as_of'],
    ['as_of=2026-11-27T00:00:00Z', '/as_of'],
    ['as_of=', '/as_of'],
    ['currency=eur', '/currency'],
    ['currency=XXX', '/currency'],
    ['currency=EURO', '/currency'],
    ['currency=XYZ', '/currency'],
    ['limit=0', '/limit'],
    ['limit=101', '/limit'],
    ['limit=x', '/limit'],
    ['limit=1.5', '/limit'],
    ['cursor=', '/cursor'],
    ['customer_id=', '/customer_id'],
    ['status=authorised', '/'],
    ['due_before=2026-12-01', '/'],
    ['supplier_id=r_1', '/']
  ]
  for (const [query, path] of badQueries) {
    const res = await get(i, RECEIVABLES, query)
    t.equal(res.statusCode, 400, query)
    t.match(res.json(), { error: 'validation_error', details: [{ location: 'querystring', path }] },
      `${query}: ${res.body}`)
    t.equal(res.json().details.length, 1, `${query}: one detail`)
  }
  t.equal((await get(i, PAYABLES, 'customer_id=r_1')).statusCode, 400, 'payables have no customer_id')
  // What the query string's format lets through and no report can answer, named the same way.
  t.strictSame((await get(i, RECEIVABLES, 'as_of=0000-01-01')).json(), {
    error: 'validation_error',
    message: 'Request validation failed.',
    details: [{ location: 'querystring', path: '/as_of', message: 'must be a date of the years 1 to 9999' }]
  })
  t.strictSame((await get(i, PAYABLES, 'currency=XXX')).json(), {
    error: 'validation_error',
    message: 'Request validation failed.',
    details: [
      { location: 'querystring', path: '/currency', message: 'must be an ISO 4217 currency code in circulation' }
    ]
  })
  // A contact id Postgres cannot compare (NUL) is the request's own 400, on both reports.
  for (const [r, filter] of [[RECEIVABLES, 'customer_id'], [PAYABLES, 'supplier_id']] as const) {
    const res = await get(i, r, `${filter}=a%00b`)
    t.equal(res.statusCode, 400)
    t.equal(res.json().error, 'validation_error')
  }
})

t.test("another tenant's documents never count, even under the same contact and document ids", async t => {
  const a = await tenant()
  const sameAppElsewhere = await tenant({ app: appOf(a) })
  const sameOrgOtherEntity = await tenant({ orgRefId: a.orgRefId, app: appOf(a) })
  for (const r of REPORTS) {
    await send(a, r, [
      doc(r, { id: 'shared', party: 'c_shared', name: 'A Name', due: '2026-11-01', amount: '1.00', updated: 1 })
    ])
    // Newer, with another name, and more to add up: none of it is A's.
    await send(sameAppElsewhere, r, [
      doc(r, { id: 'shared', party: 'c_shared', name: 'B Name', due: '2026-06-01', amount: '500.00', updated: 9 }),
      doc(r, { id: 'other', party: 'c_shared', name: 'B Name', due: '2026-06-01', amount: '1.00', updated: 9 }),
      doc(r, { id: 'only_b', party: 'c_only_b', due: '2026-06-01', amount: '7.00', updated: 9 })
    ])
    await send(sameOrgOtherEntity, r, [
      doc(r, { id: 'x', party: 'c_shared', name: 'C Name', due: '2026-11-01', amount: '2.00', updated: 20 })
    ])
    t.strictSame(await report(a, r, { as_of: AS_OF }), {
      as_of: AS_OF,
      totals: [totalOf('EUR', sums('0.00', '1.00', '0.00', '0.00', '0.00', '1.00', 1))],
      contacts: [
        entryOf(r, 'c_shared', 'A Name', 'EUR', sums('0.00', '1.00', '0.00', '0.00', '0.00', '1.00', 1), '2026-11-01')
      ],
      next_cursor: null
    }, `${r.path}: A's own`)
    t.strictSame(await report(sameAppElsewhere, r, { as_of: AS_OF }), {
      as_of: AS_OF,
      totals: [totalOf('EUR', sums('0.00', '0.00', '0.00', '0.00', '508.00', '508.00', 3))],
      contacts: [
        entryOf(r, 'c_shared', 'B Name', 'EUR', sums('0.00', '0.00', '0.00', '0.00', '501.00', '501.00', 2),
          '2026-06-01'),
        entryOf(r, 'c_only_b', 'Name of c_only_b', 'EUR', sums('0.00', '0.00', '0.00', '0.00', '7.00', '7.00', 1),
          '2026-06-01')
      ],
      next_cursor: null
    }, `${r.path}: B's own`)
    t.strictSame((await report(sameOrgOtherEntity, r, { as_of: AS_OF })).contacts.map((c: Json) => c[r.party]),
      [{ id: 'c_shared', name: 'C Name' }], `${r.path}: another entity of the same org, its own`)
    t.strictSame((await report(a, r, { as_of: AS_OF, [r.filter]: 'c_only_b' })).contacts, [],
      `${r.path}: B's contact, asked for by id, is not A's`)
    // Another tenant's path with one's own token: refused before anything is read.
    const res = await get({ ...a, accessToken: sameAppElsewhere.accessToken }, r, { as_of: AS_OF })
    t.equal(res.statusCode, 403)
    t.strictSame(res.json(), { error: 'tenant_mismatch', message: "Path tenant does not match the token's tenant." })
  }
})

t.test("scopes: each report needs its kind's read scope; without a token it is 401", async t => {
  const full = await tenant()
  for (const r of REPORTS) await send(full, r, [doc(r, { id: 'd', party: 'p', due: '2026-11-01', amount: '1.00' })])
  for (const r of REPORTS) {
    const other = REPORTS.find(x => x !== r)!
    const limited = await tenant({
      app: appOf(full), orgRefId: full.orgRefId, entityRefId: full.entityRefId, scopes: [other.scope, 'customers:read']
    })
    for (const query of ['', 'as_of=2026-11-27', 'limit=0', 'cursor=garbage', 'x=1']) {
      const res = await get(limited, r, query)
      t.equal(res.statusCode, 403, `${r.path}?${query}`)
      t.strictSame(res.json(),
        { error: 'insufficient_scope', message: `Missing scope: ${r.scope}`, required: [r.scope] })
      t.equal(res.headers['www-authenticate'], `Bearer error="insufficient_scope", scope="${r.scope}"`)
    }
    t.equal((await get(limited, other, { as_of: AS_OF })).json().contacts.length, 1, `${other.path}: granted`)

    const anonymous = await app.inject({ method: 'GET', url: `${full.path}/reports/${r.path}` })
    t.equal(anonymous.statusCode, 401)
    t.strictSame(anonymous.json(), { error: 'invalid_token', message: 'Missing bearer token.' })
    t.equal(anonymous.headers['www-authenticate'], 'Bearer realm="public"')
    const forged = await get(full, r, { as_of: AS_OF }, 'not-a-token')
    t.equal(forged.statusCode, 401)
    t.strictSame(forged.json(), { error: 'invalid_token', message: 'Invalid access token.' })
  }
})

t.test('an empty report: no totals, no contacts, no cursor', async t => {
  const i = await tenant()
  for (const r of REPORTS) {
    const res = await get(i, r, { as_of: AS_OF })
    t.equal(res.statusCode, 200)
    t.equal(res.body, '{"as_of":"2026-11-27","totals":[],"contacts":[],"next_cursor":null}', r.path)
  }
  // Documents that do not count leave it empty.
  for (const r of REPORTS) {
    await send(i, r, [
      doc(r, { id: 'e_1', party: 'e', due: '2026-11-01', amount: '1.00', status: 'draft' }),
      doc(r, { id: 'e_2', party: 'e', due: '2026-11-01', amount: '1.00', paid: '1.00' })
    ])
    t.strictSame(await report(i, r, { as_of: AS_OF, limit: 1 }),
      { as_of: AS_OF, totals: [], contacts: [], next_cursor: null }, r.path)
  }
})

// Runs last: it moves the file's clock forward to a midnight.
t.test("without as_of: today in UTC on the app's clock, kept by the cursor across midnight", async t => {
  const i = await tenant()
  // The install's token made to live a day (the file allows it), signed with the service's key: the clock moves
  // up to a day. Issued 30 s ahead of the clock (within the skew allowed), it outlives the next midnight.
  const { header, payload } = decode(i.accessToken)
  const iat = Math.floor(clock.now() / 1000) + 30
  const who: Tenant = {
    ...i, accessToken: forge(header, { ...payload, iat, exp: iat + 86_400 }, rs256With(SIGNING_KEY))
  }

  // The last millisecond of the clock's day, and that day and its neighbours as dates.
  const dayMs = 86_400_000
  const endOfDay = Math.floor(clock.now() / dayMs) * dayMs + dayMs - 1
  clock.advance(endOfDay - clock.now())
  const date = (ms: number) => new Date(ms).toISOString().slice(0, 10)
  const today = date(endOfDay)
  const tomorrow = date(endOfDay + 1)
  const yesterday = date(endOfDay - dayMs)
  t.not(today, tomorrow)

  for (const r of REPORTS) {
    // Due today, due tomorrow, due yesterday: current, current, 1 day overdue, as of today.
    await send(who, r, [
      doc(r, { id: 'm_1', party: 'm_1', due: today, amount: '3.00' }),
      doc(r, { id: 'm_2', party: 'm_2', due: tomorrow, amount: '2.00' }),
      doc(r, { id: 'm_3', party: 'm_3', due: yesterday, amount: '1.00' })
    ])
  }
  const firsts = new Map<Report, Json>()
  for (const r of REPORTS) {
    const first = await report(who, r, { limit: 1 })
    t.equal(first.as_of, today, `${r.path}: today on the app's clock`)
    t.strictSame(first.totals, [totalOf('EUR', sums('5.00', '1.00', '0.00', '0.00', '0.00', '6.00', 3))])
    t.strictSame(keys(r, first.contacts), ['m_3/EUR'])
    t.strictSame(first, await report(who, r, { limit: 1, as_of: today }), 'the same as asking for today')
    firsts.set(r, first)
  }

  clock.advance(1)
  for (const r of REPORTS) {
    const fresh = await report(who, r, {})
    t.equal(fresh.as_of, tomorrow, `${r.path}: past midnight, a new report is of the new day`)
    t.strictSame(fresh.totals, [totalOf('EUR', sums('2.00', '4.00', '0.00', '0.00', '0.00', '6.00', 3))])
    const next = await report(who, r, { limit: 1, cursor: firsts.get(r)!.next_cursor })
    t.equal(next.as_of, today, `${r.path}: the next page of the report begun yesterday is still of its day`)
    t.strictSame(next.totals, firsts.get(r)!.totals, 'with its totals')
    t.strictSame(keys(r, next.contacts), ['m_1/EUR'])
    const named = await get(who, r, { limit: 1, cursor: firsts.get(r)!.next_cursor, as_of: tomorrow })
    t.equal(named.statusCode, 400, 'the new day, named, is not the cursor\'s')
    t.equal(named.json().error, 'invalid_cursor')
  }
})
