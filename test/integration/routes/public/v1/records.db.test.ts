// The read routes (docs/records.md): invoices, bills and customers kept from the producer's events and served
// by GET .../invoices, /bills, /customers and their single records. Everything goes through POST /events and the
// routes; the database is read only to count what a refused event must not have left behind.
import t, { type Test } from 'tap'
import { bearer, build, install, type InstallOptions, type Installed } from '../../../../support/helper.js'
import { bill, customer, invoice, nth } from '../../../../support/records.js'
import { publishRaw, subscribe } from '../../../../support/webhooks.js'

type Json = Record<string, any>
type Plural = 'invoices' | 'bills' | 'customers'

// One app for the file; no delivery worker: a delivery queued stays queued, so it can be counted.
const app = await build(t, { WEBHOOK_WORKER: 'false' })

const TOPIC: Record<Plural, string> = {
  invoices: 'invoice.updated', bills: 'bill.updated', customers: 'customer.updated'
}
const TITLE: Record<Plural, string> = { invoices: 'Invoice', bills: 'Bill', customers: 'Customer' }
const SCOPE: Record<Plural, string> = { invoices: 'invoices:read', bills: 'bills:read', customers: 'customers:read' }
const KINDS = Object.keys(TOPIC) as Plural[]

/** An instant `n` seconds after 2026-11-01T00:00:00.000Z, as records carry it. */
const at = (n: number): string => new Date(Date.UTC(2026, 10, 1) + n * 1000).toISOString()

interface Tenant extends Installed {
  /** `/public/v1/orgs/{org}/entities/{entity}` */
  path: string
}

/** A tenant of its own (every test its own, so that the 600 requests a minute of an install are never reached). */
async function tenant (opts: InstallOptions = {}): Promise<Tenant> {
  const i = await install(app, opts)
  return { ...i, path: `/public/v1/orgs/${i.orgRefId}/entities/${i.entityRefId}` }
}

/** The app of an install, to install it again elsewhere. */
const appOf = ({ clientId, clientSecret, appSlug, ownerToken }: Installed) =>
  ({ clientId, clientSecret, appSlug, ownerToken })

/** GET under the tenant's path, with its token (or `token`). */
const read = (i: Tenant, url: string, headers: Record<string, string> = {}, token = i.accessToken) =>
  app.inject({ method: 'GET', url: i.path + url, headers: { ...bearer(token), ...headers } })

const eventOf = (i: Pick<Installed, 'orgRefId' | 'entityRefId'>, data: unknown, topic: string, id?: string) =>
  ({ ...(id && { id }), topic, org_ref_id: i.orgRefId, entity_ref_id: i.entityRefId, data })

/** Sends records of one kind as one batch; throws unless accepted. */
async function send (i: Pick<Installed, 'orgRefId' | 'entityRefId'>, kind: Plural, records: Json[]): Promise<Json[]> {
  const res = await publishRaw(app, records.map(r => eventOf(i, r, TOPIC[kind])))
  if (res.statusCode !== 202) throw new Error(`publish: ${res.statusCode} ${res.body}`)
  return res.json()
}

/** The (updated_at, id) order of the lists: ids compare byte-wise (ASCII here, so as JavaScript compares them). */
const byPosition = (a: Json, b: Json): number =>
  a.updated_at < b.updated_at ? -1 : a.updated_at > b.updated_at ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0
const sorted = (records: Json[], descending = false): Json[] =>
  [...records].sort((a, b) => descending ? byPosition(b, a) : byPosition(a, b))

/**
 * Pages through a list to its end, passing each page's `next_cursor` with the same other parameters; `between`
 * runs after every page but the last. Checks the shape of every page: full pages but the last, which is not empty
 * (unless the whole list is), and `next_cursor` null only there.
 */
async function walk (
  t: Test, i: Tenant, kind: Plural, query: Record<string, string | number>,
  between?: (page: Json[]) => Promise<void>
): Promise<Json[]> {
  const limit = Number(query.limit ?? 50)
  const seen: Json[] = []
  const sizes: number[] = []
  let cursor: string | undefined
  for (let n = 0; n < 200; n++) {
    const qs = new URLSearchParams({ ...Object.fromEntries(Object.entries(query).map(([k, v]) => [k, String(v)])) })
    if (cursor !== undefined) qs.set('cursor', cursor)
    const res = await read(i, `/${kind}?${qs}`)
    if (res.statusCode !== 200) throw new Error(`${kind}?${qs}: ${res.statusCode} ${res.body}`)
    const page = res.json()
    t.same(Object.keys(page), [kind, 'next_cursor'], `${kind}?${qs}: the page's keys`)
    seen.push(...page[kind])
    sizes.push(page[kind].length)
    if (page.next_cursor === null) {
      const full = sizes.slice(0, -1).every(s => s === limit)
      const last = sizes.at(-1)!
      t.ok(full && (last > 0 || sizes.length === 1) && last <= limit,
        `${kind} ${JSON.stringify(query)}: full pages, then a last one of 1..${limit} (${sizes.join(' ')})`)
      return seen
    }
    t.type(page.next_cursor, 'string')
    cursor = page.next_cursor
    await between?.(page[kind])
  }
  throw new Error('no last page after 200')
}

const ids = (records: Json[]): string[] => records.map(r => r.id)

/** Each kind's builder: a valid record of the kind with its own id and updated_at, and what `over` changes. */
const RECORD: Record<Plural, (n: number, over?: Json) => Json> = {
  invoices: (n, over = {}) => invoice({ ...nth('inv', n), ...over }),
  bills: (n, over = {}) => bill({ ...nth('bill', n), ...over }),
  customers: (n, over = {}) => customer({ ...nth('cus', n), ...over })
}

/**
 * About 25 records of a kind, with what the lists order and filter on spread out: groups of three share an
 * updated_at (the id breaks the tie, byte-wise: `INV_5` before `inv_4`, unlike a linguistic collation), statuses,
 * parties and due dates cycle.
 */
function series (kind: Plural, count = 25): Json[] {
  const statuses = {
    invoices: ['draft', 'authorised', 'paid', 'voided'],
    bills: ['draft', 'authorised', 'paid'],
    customers: ['active', 'archived']
  }[kind]
  const prefix = { invoices: 'inv', bills: 'bill', customers: 'cus' }[kind]
  return Array.from({ length: count }, (_, k) => {
    const n = k + 1
    const over: Json = {
      id: n % 5 === 0 ? `${prefix.toUpperCase()}_${n}` : `${prefix}_${n}`,
      updated_at: at(Math.ceil(n / 3)),
      status: statuses[n % statuses.length]
    }
    if (kind === 'invoices') over.customer = { id: `cus_${n % 3}`, name: `Customer ${n % 3}` }
    if (kind === 'bills') over.supplier = { id: `sup_${n % 3}`, name: `Supplier ${n % 3}` }
    if (kind !== 'customers') over.due_date = `2026-12-${String(1 + (n % 10)).padStart(2, '0')}`
    return RECORD[kind](n, over)
  })
}

t.test('every route of the three kinds serves what was sent', async t => {
  const i = await tenant()
  for (const kind of KINDS) {
    const records = [RECORD[kind](2), RECORD[kind](1)]
    await send(i, kind, records)
    const list = await read(i, `/${kind}`)
    t.equal(list.statusCode, 200, `GET /${kind}`)
    t.match(list.headers['content-type'], /^application\/json/)
    t.strictSame(list.json(), { [kind]: [records[1], records[0]], next_cursor: null },
      `${kind}: the whole list, in updated_at order, no cursor after the last page`)
    for (const r of records) {
      const one = await read(i, `/${kind}/${r.id}`)
      t.equal(one.statusCode, 200, `GET /${kind}/${r.id}`)
      t.strictSame(one.json(), r)
      t.match(one.headers.etag, /^"[A-Za-z0-9_-]+"$/, 'a strong ETag')
    }
    const missing = await read(i, `/${kind}/nope`)
    t.equal(missing.statusCode, 404)
    t.strictSame(missing.json(), { error: 'not_found', message: `${TITLE[kind]} not found.` })
  }
  // Records of one kind are not records of another: the same id in two tables.
  await send(i, 'bills', [RECORD.bills(9, { id: 'shared_1' })])
  await send(i, 'invoices', [RECORD.invoices(9, { id: 'shared_1' })])
  t.equal((await read(i, '/bills/shared_1')).json().supplier.id, 'sup_017')
  t.equal((await read(i, '/invoices/shared_1')).json().customer.id, 'cus_0042')
  t.equal((await read(i, '/customers/shared_1')).statusCode, 404)
  t.equal((await read(i, '/invoices?limit=100')).json().invoices.length, 3)
})

t.test('paging to the end with small limits: every record once, in (updated_at, id) order', async t => {
  const i = await tenant()
  const all = Object.fromEntries(KINDS.map(k => [k, series(k)])) as Record<Plural, Json[]>
  for (const kind of KINDS) await send(i, kind, all[kind])
  t.strictSame(ids(sorted(all.invoices)).slice(0, 6), ['inv_1', 'inv_2', 'inv_3', 'INV_5', 'inv_4', 'inv_6'],
    'ties on updated_at are broken by the id, byte-wise')

  for (const limit of [1, 2, 3]) {
    for (const order of ['updated_at', '-updated_at']) {
      const seen = await walk(t, i, 'invoices', { limit, ...(order === '-updated_at' && { order }) })
      t.strictSame(seen, sorted(all.invoices, order === '-updated_at'), `invoices, limit ${limit}, ${order}`)
    }
  }
  // Without order: the default is updated_at.
  t.strictSame(await walk(t, i, 'invoices', { limit: 7, order: 'updated_at' }), sorted(all.invoices))
  for (const kind of ['bills', 'customers'] as const) {
    for (const order of ['updated_at', '-updated_at']) {
      const seen = await walk(t, i, kind, { limit: 2, order })
      t.strictSame(seen, sorted(all[kind], order === '-updated_at'), `${kind}, limit 2, ${order}`)
    }
  }
  // The default limit is 50 and the largest 100: 120 invoices, one page of each.
  await send(i, 'invoices', Array.from({ length: 95 }, (_, k) => RECORD.invoices(100 + k)))
  const first = (await read(i, '/invoices')).json()
  t.equal(first.invoices.length, 50, 'default limit 50')
  t.type(first.next_cursor, 'string')
  const most = (await read(i, '/invoices?limit=100')).json()
  t.equal(most.invoices.length, 100, 'limit 100')
  const rest = (await read(i, `/invoices?limit=100&cursor=${most.next_cursor}`)).json()
  t.equal(rest.invoices.length, 20)
  t.equal(rest.next_cursor, null)
})

t.test('paging while records change between pages', async t => {
  await t.test('oldest first: an updated record moves to the end; nothing twice but what changed after it was seen',
    async t => {
      for (const limit of [2, 3]) {
        const i = await tenant()
        const records = series('invoices')
        await send(i, 'invoices', records)
        const newest = new Map(records.map(r => [r.id, r]))
        const seenIds = new Set<string>()
        const updatedAfterSeen = new Set<string>()
        const updated = new Set<string>()
        let step = 0
        const seen = await walk(t, i, 'invoices', { limit }, async page => {
          for (const r of page) seenIds.add(r.id)
          if (++step > 8) return
          // The record the cursor names (the page's last), and the one the next page would have started with.
          const last = page.at(-1)!.id
          const next = sorted([...newest.values()]).find(r => !seenIds.has(r.id))?.id
          const changes = [last, next].filter((id): id is string => id !== undefined).map((id, k): Json => ({
            ...newest.get(id)!, number: `INV-UPD-${step}-${k}`, updated_at: at(1000 + 10 * step + k)
          }))
          await send(i, 'invoices', changes)
          for (const c of changes) {
            newest.set(c.id, c)
            updated.add(c.id)
            if (seenIds.has(c.id)) updatedAfterSeen.add(c.id)
          }
        })
        t.ok(updatedAfterSeen.size > 0 && updated.size > updatedAfterSeen.size, 'both kinds of change happened')
        t.strictSame(seen, sorted(seen), `limit ${limit}: the walk never goes back in (updated_at, id)`)
        t.same(new Set(ids(seen)), new Set(newest.keys()), 'none is lost')
        const counts = new Map<string, number>()
        for (const id of ids(seen)) counts.set(id, (counts.get(id) ?? 0) + 1)
        const twice = [...counts].filter(([, n]) => n > 1).map(([id]) => id)
        t.ok(twice.length > 0 && twice.every(id => updatedAfterSeen.has(id)),
          'a record shows up again only after it changed once seen')
        t.ok([...counts].filter(([id]) => !updated.has(id)).every(([, n]) => n === 1), 'an unchanged one once')
        const lastSeen = new Map(seen.map(r => [r.id, r]))
        const same = (id: string) => JSON.stringify(lastSeen.get(id)) === JSON.stringify(newest.get(id))
        const stale = [...newest.keys()].filter(id => !same(id))
        t.strictSame(stale, [], 'by the end, the newest version of every record has been seen')
      }
    })

  await t.test('newest first: a record changed during the walk moves behind it; still nothing twice', async t => {
    const i = await tenant()
    const records = series('invoices')
    await send(i, 'invoices', records)
    const updated = new Set<string>()
    let step = 0
    const seen = await walk(t, i, 'invoices', { limit: 3, order: '-updated_at' }, async page => {
      if (++step > 5) return
      // One just seen, one not yet seen (the oldest): both become the newest, before the cursor.
      const changes = [page[0]!, sorted(records)[step]!]
        .map((r, k): Json => ({ ...r, updated_at: at(1000 + 10 * step + k) }))
      await send(i, 'invoices', changes)
      for (const c of changes) updated.add(c.id)
    })
    t.strictSame(seen, sorted(seen, true), 'the walk never goes back')
    t.equal(new Set(ids(seen)).size, seen.length, 'no record twice')
    t.strictSame(ids(seen).filter(id => !updated.has(id)), ids(sorted(records, true)).filter(id => !updated.has(id)),
      'every record that did not change is there, once')
  })
})

t.test('updated_since: an incremental sync from the last updated_at seen (inclusive)', async t => {
  const i = await tenant()
  await send(i, 'invoices', Array.from({ length: 10 }, (_, k) => RECORD.invoices(k + 1)))
  const full = await walk(t, i, 'invoices', { limit: 4 })
  t.strictSame(ids(full), Array.from({ length: 10 }, (_, k) => nth('inv', k + 1).id))
  const watermark = full.at(-1)!.updated_at
  t.equal(watermark, at(10))

  // Changes: two updated, one new, one late (older than the copy kept: no change).
  const v3 = RECORD.invoices(3, { updated_at: at(20), status: 'paid' })
  const v7 = RECORD.invoices(7, { updated_at: at(21), number: 'INV-7B' })
  const v11 = RECORD.invoices(11, { updated_at: at(22) })
  await send(i, 'invoices', [v3, v7, v11, RECORD.invoices(5, { updated_at: at(2), number: 'LATE' })])

  const changes = await walk(t, i, 'invoices', { limit: 2, updated_since: watermark })
  t.strictSame(changes, [full.at(-1), v3, v7, v11], 'the boundary record (inclusive), then what changed, in order')
  t.strictSame(await walk(t, i, 'invoices', { limit: 1, updated_since: at(20) }), [v3, v7, v11],
    'a record updated exactly at updated_since is included')
  t.strictSame(await walk(t, i, 'invoices', { updated_since: '2026-11-01T01:00:20.000+01:00' }), [v3, v7, v11],
    'an instant with an offset is the same instant')
  t.strictSame(await walk(t, i, 'invoices', { updated_since: '2026-11-01T00:00:20.001Z' }), [v7, v11],
    'a millisecond later excludes it')
  t.strictSame(await walk(t, i, 'invoices', { limit: 2, updated_since: at(20), order: '-updated_at' }), [v11, v7, v3])
  t.strictSame((await read(i, `/invoices?updated_since=${at(23)}`)).json(), { invoices: [], next_cursor: null })
  // A cursor and an updated_since that is not the walk's own: a page holds what satisfies both.
  const first = (await read(i, '/invoices?limit=1')).json()
  t.equal(first.invoices[0].id, 'inv_00001')
  t.strictSame((await read(i, `/invoices?cursor=${first.next_cursor}&updated_since=${at(20)}`)).json().invoices,
    [v3, v7, v11], 'updated_since later than the cursor: updated_since bounds the page')
  t.strictSame(ids((await read(i, `/invoices?cursor=${first.next_cursor}&updated_since=${at(1)}`)).json().invoices),
    ['inv_00002', 'inv_00004', 'inv_00005', 'inv_00006', 'inv_00008', 'inv_00009', 'inv_00010', 'inv_00003',
      'inv_00007', 'inv_00011'], 'updated_since earlier than the cursor: the cursor does')
  const newest = (await read(i, '/invoices?limit=1&order=-updated_at')).json()
  t.strictSame(newest.invoices, [v11])
  t.strictSame((await read(i, `/invoices?order=-updated_at&cursor=${newest.next_cursor}&updated_since=${at(20)}`))
    .json().invoices, [v7, v3], 'newest first: the cursor above, updated_since below')
  t.equal((await read(i, '/invoices/inv_00005')).json().number, 'INV-2026-1042', 'the late version changed nothing')
})

t.test('filters: status, customer_id / supplier_id, due_before (exclusive), together and while paging', async t => {
  const i = await tenant()
  const all = Object.fromEntries(KINDS.map(k => [k, series(k)])) as Record<Plural, Json[]>
  for (const kind of KINDS) await send(i, kind, all[kind])

  const cases: Array<[Plural, Record<string, string>, (r: Json) => boolean]> = [
    ['invoices', { status: 'paid' }, r => r.status === 'paid'],
    ['invoices', { status: 'voided' }, r => r.status === 'voided'],
    ['invoices', { customer_id: 'cus_1' }, r => r.customer.id === 'cus_1'],
    ['invoices', { due_before: '2026-12-05' }, r => r.due_date < '2026-12-05'],
    ['invoices', { status: 'authorised', customer_id: 'cus_2', due_before: '2026-12-09' },
      r => r.status === 'authorised' && r.customer.id === 'cus_2' && r.due_date < '2026-12-09'],
    ['bills', { status: 'draft' }, r => r.status === 'draft'],
    ['bills', { supplier_id: 'sup_0' }, r => r.supplier.id === 'sup_0'],
    ['bills', { due_before: '2026-12-03', supplier_id: 'sup_1' },
      r => r.due_date < '2026-12-03' && r.supplier.id === 'sup_1'],
    ['customers', { status: 'archived' }, r => r.status === 'archived'],
    ['customers', { status: 'active' }, r => r.status === 'active']
  ]
  for (const [kind, filter, keep] of cases) {
    const expected = sorted(all[kind].filter(keep))
    t.ok(expected.length > 0 && expected.length < all[kind].length, `${kind} ${JSON.stringify(filter)}: a real filter`)
    t.strictSame(await walk(t, i, kind, { limit: 2, ...filter }), expected, `${kind} ${JSON.stringify(filter)}`)
    t.strictSame(await walk(t, i, kind, { limit: 3, order: '-updated_at', ...filter }), sorted(expected, true),
      `${kind} ${JSON.stringify(filter)}, newest first`)
  }
  t.ok(all.invoices.some(r => r.due_date === '2026-12-05'), 'some invoices are due on the due_before date itself')
  t.strictSame((await read(i, '/invoices?customer_id=cus_nobody')).json(), { invoices: [], next_cursor: null })
  t.strictSame((await read(i, '/bills?status=authorised&updated_since=' + at(9))).json().bills,
    sorted(all.bills.filter(r => r.status === 'authorised' && r.updated_at >= at(9))))
})

t.test('out-of-order and repeated events: the newest copy is kept, every event is accepted and delivered', async t => {
  const i = await tenant()
  const sub = await subscribe(app, i, {
    topics: ['invoice.created', 'invoice.updated', 'invoice.paid'], target_url: 'https://hooks.example.com/records'
  })
  const deliveries = async () => (await app.db.query<{ n: number }>(
    'select count(*)::int as n from webhook_deliveries where subscription_id = $1', [sub.id]))[0]!.n
  const publish = async (events: unknown) => {
    const res = await publishRaw(app, events)
    t.equal(res.statusCode, 202, res.body)
    return res.json()
  }
  const current = async () => (await read(i, '/invoices/inv_00001')).json()
  const version = (number: string, n: number, over: Json = {}) =>
    RECORD.invoices(1, { number, updated_at: at(n), ...over })

  const v1 = version('V1', 10)
  const v2 = version('V2', 20, { status: 'paid' })
  t.match(await publish(eventOf(i, v2, 'invoice.paid')), { deliveries: 1 })
  const late = await publish(eventOf(i, v1, 'invoice.created'))
  t.match(late, { deliveries: 1 }, 'the late event is accepted and delivered')
  const [stored] = await app.db.query<{ body: string }>('select body from webhook_events where id = $1', [late.id])
  t.strictSame(JSON.parse(stored!.body).data, v1, 'what is delivered is the event as sent')
  t.strictSame(await current(), v2, 'an older updated_at changes nothing')
  t.equal(await deliveries(), 2)

  t.match(await publish(eventOf(i, version('V2-AGAIN', 20), 'invoice.updated')), { deliveries: 1 })
  t.strictSame(await current(), v2, 'the same updated_at changes nothing, whatever else differs')

  const v3 = version('V3', 30)
  const first = await publish(eventOf(i, v3, 'invoice.updated', 'acct-1'))
  t.strictSame(await current(), v3, 'a newer one replaces it')
  t.strictSame(await publish(eventOf(i, v3, 'invoice.updated', 'acct-1')), first,
    'the same event id again answers the first result')
  t.equal(await deliveries(), 4, 'and queues nothing more')
  const conflict = await publishRaw(app, eventOf(i, version('V9', 90), 'invoice.updated', 'acct-1'))
  t.equal(conflict.statusCode, 409, 'the same id with other content is a conflict')
  t.strictSame(await current(), v3, 'and the record it carried is not kept')
  t.equal(await deliveries(), 4)

  // Batches with several versions of one record: the newest is kept wherever it is; of equals, the first.
  const batches: Array<[Json[], Json]> = [
    [[version('V5', 50), version('V4', 40)], version('V5', 50)],
    [[version('V6', 60), version('V7', 70)], version('V7', 70)],
    [[version('V8A', 80), version('V8B', 80), version('V3-LATE', 30)], version('V8A', 80)]
  ]
  for (const [records, kept] of batches) {
    const answer = await publish(records.map(r => eventOf(i, r, 'invoice.updated')))
    t.equal(answer.length, records.length)
    t.ok(answer.every((a: Json) => a.deliveries === 1), 'every event of the batch is delivered')
    t.strictSame(await current(), kept, `of ${records.map(r => r.number).join(', ')}: ${kept.number}`)
  }
  t.equal(await deliveries(), 11)
  t.strictSame(ids((await read(i, '/invoices')).json().invoices), ['inv_00001'], 'one record, however many versions')
})

t.test('records come back exactly as sent: key order, strings, digits', async t => {
  const i = await tenant()
  // The producer's own key order (the schema's, reversed, nested too) and strings that JSON must escape.
  const reverse = (v: unknown): unknown => Array.isArray(v)
    ? v.map(reverse)
    : v !== null && typeof v === 'object'
      ? Object.fromEntries(Object.entries(v).reverse().map(([k, x]) => [k, reverse(x)]))
      : v
  const record = reverse(RECORD.invoices(1, {
    id: 'inv/ü 1',
    number: 'INV "quoted" \\ back\nslash\ttab \u0001 \u2028 </script>',
    customer: { id: 'cus_é', name: 'Société « Ünïcødé » 株式会社 😀' },
    line_items: [
      { description: 'Quantity 1.50 stays 1.50', quantity: '1.50', unit_amount: '90.00', tax_amount: '0.00' },
      { description: 'Negative: a credit', quantity: '-1', unit_amount: '10.00', tax_amount: '-1.90' }
    ]
  })) as Json
  t.equal(record.line_items[0].amount, '135.00')
  t.equal(Object.keys(record)[0], 'updated_at', 'not the schema order')
  const text = JSON.stringify(record)
  const envelope = `{"topic":"invoice.created","org_ref_id":"${i.orgRefId}","entity_ref_id":"${i.entityRefId}",` +
    `"data":${text}}`
  const post = (payload: string) => app.inject({
    method: 'POST',
    url: '/events',
    headers: { ...bearer(app.config.eventsToken), 'content-type': 'application/json' },
    payload
  })
  t.equal((await post(envelope)).statusCode, 202)

  const one = await read(i, `/invoices/${encodeURIComponent('inv/ü 1')}`)
  t.equal(one.statusCode, 200)
  t.equal(one.body, text, 'the single record: the bytes sent')
  const list = await read(i, '/invoices')
  t.equal(list.body, `{"invoices":[${text}],"next_cursor":null}`, 'the list: the same bytes')

  // Whitespace is not part of a record: sent pretty, it is kept compact, in the order sent.
  const other = reverse(customer({
    ...nth('cus', 2),
    email: null,
    phone: null,
    tax_number: null,
    address: { line1: null, line2: null, city: null, region: null, postal_code: null, country: null }
  })) as Json
  const pretty = JSON.stringify(eventOf(i, other, 'customer.created'), null, 2)
  t.equal((await post(pretty)).statusCode, 202)
  t.equal((await read(i, '/customers/cus_00002')).body, JSON.stringify(other), 'nulls and the order kept')
})

/** Events, deliveries and records a tenant has: what a refused event must leave unchanged. */
async function footprint (i: Tenant, subscriptionId: string) {
  const [counts] = await app.db.query<{ events: number, deliveries: number }>(
    `select (select count(*)::int from webhook_events where org_ref_id = $1 and entity_ref_id = $2) as events,
            (select count(*)::int from webhook_deliveries where subscription_id = $3) as deliveries`,
    [i.orgRefId, i.entityRefId, subscriptionId])
  const lists: Json = {}
  for (const kind of KINDS) lists[kind] = (await read(i, `/${kind}?limit=100`)).json()[kind].length
  return { ...counts, ...lists }
}

t.test('every refused record: 400 validation_error naming the field, nothing stored, nothing delivered', async t => {
  const i = await tenant()
  const sub = await subscribe(app, i, {
    topics: ['invoice.created', 'bill.created', 'customer.created'], target_url: 'https://hooks.example.com/refused'
  })
  const empty = { events: 0, deliveries: 0, invoices: 0, bills: 0, customers: 0 }
  t.strictSame(await footprint(i, sub.id), empty)

  /** A valid invoice changed by `change` afterwards (its sums are not made right again). */
  const changed = (change: (r: Json) => void, over: Json = {}, make = RECORD.invoices) => {
    const r = structuredClone(make(1, over))
    change(r)
    return r
  }
  const jpy = { currency: 'JPY', line_items: [{ quantity: '2', unit_amount: '480', tax_amount: '96' }] }
  const bhd = { currency: 'BHD', line_items: [{ quantity: '1.5', unit_amount: '480.125', tax_amount: '0.500' }] }
  t.equal(RECORD.invoices(1, bhd).line_items[0].amount, '720.188', 'BHD: 720.1875 rounds half away from zero')

  const cases: Array<{ name: string, data: unknown, topic?: string, paths: string[], message?: string | RegExp }> = [
    {
      name: 'a wrong line amount',
      data: changed(r => { r.line_items[0].amount = '961.00' }),
      paths: ['/data/line_items/0/amount', '/data/subtotal'],
      message: 'must equal quantity × unit_amount (960.00)'
    },
    {
      name: 'a wrong subtotal',
      data: changed(r => { Object.assign(r, { subtotal: '1096.00', total: '1304.05', amount_due: '1304.05' }) }),
      paths: ['/data/subtotal'],
      message: 'must equal the sum of line_items[].amount (1095.00)'
    },
    {
      name: 'a wrong total',
      data: changed(r => { Object.assign(r, { total: '1303.06', amount_due: '1303.06' }) }),
      paths: ['/data/total'],
      message: 'must equal subtotal + tax_total (1303.05)'
    },
    {
      name: 'a wrong amount_due',
      data: changed(r => { r.amount_due = '1300.00' }),
      paths: ['/data/amount_due'],
      message: 'must equal total − amount_paid (1303.05)'
    },
    {
      name: 'JPY with decimals',
      data: changed(r => { r.tax_total = '96.00' }, jpy),
      paths: ['/data/tax_total'],
      message: 'must have 0 decimals for JPY (e.g. "0")'
    },
    {
      name: 'EUR with three decimals',
      data: changed(r => { r.line_items[0].unit_amount = '480.000' }),
      paths: ['/data/line_items/0/unit_amount'],
      message: 'must have 2 decimals for EUR (e.g. "0.00")'
    },
    { name: 'EUR without decimals', data: changed(r => { r.amount_paid = '0' }), paths: ['/data/amount_paid'] },
    {
      name: 'BHD with two decimals',
      data: changed(r => { r.amount_paid = '0.00' }, bhd),
      paths: ['/data/amount_paid'],
      message: 'must have 3 decimals for BHD (e.g. "0.000")'
    },
    {
      name: 'a currency not in circulation',
      data: changed(r => { r.currency = 'XYZ' }),
      paths: ['/data/currency'],
      message: 'must be an ISO 4217 currency code in circulation'
    },
    { name: 'a lowercase currency', data: changed(r => { r.currency = 'eur' }), paths: ['/data/currency'] },
    {
      name: 'a missing field',
      data: changed(r => { delete r.number }),
      paths: ['/data'],
      message: "must have required property 'number'"
    },
    {
      name: 'a missing field of the customer',
      data: changed(r => { delete r.customer.name }),
      paths: ['/data/customer'],
      message: "must have required property 'name'"
    },
    {
      name: 'an unknown field',
      data: changed(r => { r.discount = '0.00' }),
      paths: ['/data'],
      message: 'unknown field "discount"'
    },
    {
      name: 'an unknown field of a line',
      data: changed(r => { r.line_items[1].sku = 'HP-200' }),
      paths: ['/data/line_items/1'],
      message: 'unknown field "sku"'
    },
    { name: 'an unknown status', data: changed(r => { r.status = 'sent' }), paths: ['/data/status'] },
    {
      name: 'a status no document has',
      topic: 'bill.created',
      data: changed(r => { r.status = 'cancelled' }, {}, RECORD.bills),
      paths: ['/data/status']
    },
    {
      name: 'a date that does not exist',
      data: changed(r => { r.issue_date = '2026-02-30' }),
      paths: ['/data/issue_date'],
      message: 'must be a real date'
    },
    { name: 'month 13', data: changed(r => { r.due_date = '2026-13-01' }), paths: ['/data/due_date'] },
    {
      name: 'an instant that does not exist',
      data: changed(r => { r.updated_at = '2026-11-31T10:00:00.000Z' }),
      paths: ['/data/updated_at'],
      message: 'must be a real instant'
    },
    {
      name: 'an instant without milliseconds',
      data: changed(r => { r.created_at = '2026-11-02T08:14:05Z' }),
      paths: ['/data/created_at']
    },
    { name: 'paid_at a date', data: changed(r => { r.paid_at = '2026-11-02' }), paths: ['/data/paid_at'] },
    {
      name: 'a negative zero',
      data: changed(r => { r.amount_paid = '-0.00' }),
      paths: ['/data/amount_paid'],
      message: 'must not be "-0.00": a negative zero is not an amount (zero is "0.00")'
    },
    {
      name: 'money as a JSON number',
      data: changed(r => { r.total = 1303.05 }),
      paths: ['/data/total'],
      message: 'must be string'
    },
    {
      name: 'a quantity of five decimals',
      data: changed(r => { r.line_items[0].quantity = '2.00001' }),
      paths: ['/data/line_items/0/quantity']
    },
    {
      name: 'a customer with a currency not in circulation',
      topic: 'customer.created',
      data: changed(r => { r.currency = 'XYZ' }, {}, RECORD.customers),
      paths: ['/data/currency']
    },
    {
      name: 'a customer with an unknown address field',
      topic: 'customer.created',
      data: changed(r => { r.address.street = 'Industriestraße 12' }, {}, RECORD.customers),
      paths: ['/data/address'],
      message: 'unknown field "street"'
    },
    {
      name: 'an invoice sent as a customer',
      topic: 'customer.created',
      data: RECORD.invoices(1),
      paths: ['/data', '/data/status'],
      message: /required property 'name'|unknown field/
    },
    { name: 'data not an object', data: [RECORD.invoices(1)], paths: ['/data'] },
    // Year 0 is a date of ISO 8601 and of JavaScript, not of Postgres: refused before it reaches the database.
    { name: 'a due date in year 0', data: changed(r => { r.due_date = '0000-12-01' }), paths: ['/data/due_date'] },
    {
      name: 'an updated_at in year 0',
      data: changed(r => { r.updated_at = '0000-11-01T00:00:00.000Z' }),
      paths: ['/data/updated_at']
    }
  ]
  let n = 0
  for (const c of cases) {
    const res = await publishRaw(app, eventOf(i, c.data, c.topic ?? 'invoice.created', `bad-${++n}`))
    t.equal(res.statusCode, 400, `${c.name}: 400`)
    const body = res.json()
    t.equal(body.error, 'validation_error', c.name)
    t.strictSame([...new Set((body.details ?? []).map((d: Json) => d.path))], c.paths, `${c.name}: ${res.body}`)
    t.ok(body.details?.every((d: Json) => d.location === 'body'), `${c.name}: in the body`)
    if (c.message) {
      const says = (m: string) => typeof c.message === 'string' ? m === c.message : c.message!.test(m)
      t.ok(body.details?.some((d: Json) => says(d.message)), `${c.name}: says ${c.message}`)
    }
    t.strictSame(await footprint(i, sub.id), empty, `${c.name}: nothing stored, nothing delivered`)
  }

  // In a batch, the pointer starts with the event's index; one bad event refuses the whole batch.
  const batch = [
    eventOf(i, RECORD.invoices(1), 'invoice.created'),
    eventOf(i, RECORD.bills(2), 'bill.created'),
    eventOf(i, RECORD.customers(3), 'customer.created'),
    eventOf(i, changed(r => { r.total = '1303.06' }, { id: 'inv_bad' }), 'invoice.created'),
    eventOf(i, RECORD.invoices(5), 'invoice.created')
  ]
  const refused = await publishRaw(app, batch)
  t.equal(refused.statusCode, 400)
  t.strictSame(refused.json().details.map((d: Json) => d.path), ['/3/data/total', '/3/data/amount_due'])
  t.strictSame(await footprint(i, sub.id), empty, 'nothing of the batch is stored or delivered')
  const twice = await publishRaw(app, [
    batch[0], eventOf(i, { ...RECORD.bills(2), status: 'cancelled' }, 'bill.created'), batch[2], batch[3]
  ])
  t.strictSame([...new Set(twice.json().details.map((d: Json) => d.path))],
    ['/1/data/status', '/3/data/total', '/3/data/amount_due'], 'every bad event of a batch is named')
  t.strictSame(await footprint(i, sub.id), empty)

  // The same events, made right, are stored and delivered: the checks above could have seen them.
  batch[3] = eventOf(i, RECORD.invoices(4), 'invoice.created')
  t.equal((await publishRaw(app, batch)).statusCode, 202)
  t.strictSame(await footprint(i, sub.id), { events: 5, deliveries: 5, invoices: 3, bills: 1, customers: 1 })
  for (const c of [jpy, bhd]) {
    const res = await publishRaw(app, eventOf(i, RECORD.invoices(9, c), 'invoice.created'))
    t.equal(res.statusCode, 202, `a valid ${c.currency} invoice is accepted`)
  }
})

t.test('every refused query: 400 naming the parameter, or invalid_cursor', async t => {
  const i = await tenant()
  await send(i, 'invoices', series('invoices', 4))
  await send(i, 'bills', series('bills', 4))
  const cursorOf = async (url: string) => (await read(i, url)).json().next_cursor as string
  const asc = await cursorOf('/invoices?limit=1')
  const desc = await cursorOf('/invoices?limit=1&order=-updated_at')
  const bills = await cursorOf('/bills?limit=1')
  t.equal((await read(i, `/invoices?limit=1&cursor=${asc}`)).statusCode, 200, 'the cursors are good where they belong')
  t.equal((await read(i, `/invoices?limit=1&order=-updated_at&cursor=${desc}`)).statusCode, 200)
  t.equal((await read(i, `/bills?limit=1&cursor=${bills}`)).statusCode, 200)

  const forged = (state: unknown) => Buffer.from(JSON.stringify(state)).toString('base64url')
  const [version, payload, tag] = asc.split('.') as [string, string, string]
  const position = JSON.parse(Buffer.from(payload, 'base64url').toString())
  const elsewhere = await tenant()
  await send(elsewhere, 'invoices', series('invoices', 2))
  const otherTenants = (await read(elsewhere, '/invoices?limit=1')).json().next_cursor as string
  t.equal((await read(elsewhere, `/invoices?limit=1&cursor=${otherTenants}`)).statusCode, 200, 'good in its tenant')
  const flip = (c: string) => c === 'A' ? 'B' : 'A'
  const badCursors: Record<string, string> = {
    'a cursor issued to another tenant': otherTenants,
    'its position edited by hand': [version, forged({ ...position, i: position.i + 'x' }), tag].join('.'),
    'a character of its tag changed': asc.slice(0, -1) + flip(asc.at(-1)!),
    truncated: asc.slice(0, -3),
    'without its tag': `${version}.${payload}`,
    'another version': ['v2', payload, tag].join('.'),
    garbage: encodeURIComponent('not a cursor!'),
    'base64 of nothing useful': 'abc',
    'JSON null': forged(null),
    'a JSON number': forged(7),
    'an empty object': forged({}),
    'a bills cursor on invoices': bills,
    'an oldest-first cursor, newest first': `${asc}&order=-updated_at`,
    'a newest-first cursor, oldest first': desc,
    'a forged instant without milliseconds': forged({ k: 'invoice', o: 'a', u: '2026-11-01T00:00:00Z', i: 'x' }),
    'a forged instant in year 0': forged({ k: 'invoice', o: 'a', u: '0000-11-01T00:00:00.000Z', i: 'x' }),
    'a forged instant past year 9999': forged({ k: 'invoice', o: 'a', u: '+275760-09-13T00:00:00.000Z', i: 'x' })
  }
  for (const [name, cursor] of Object.entries(badCursors)) {
    const res = await read(i, `/invoices?cursor=${cursor}`)
    t.equal(res.statusCode, 400, name)
    t.strictSame(res.json(), {
      error: 'invalid_cursor',
      message: 'The cursor is not one this listing gave: pass next_cursor unchanged, with the same order.'
    }, name)
  }

  const badQueries: Array<[string, string]> = [
    ['/invoices?limit=0', '/limit'],
    ['/invoices?limit=101', '/limit'],
    ['/invoices?limit=two', '/limit'],
    ['/invoices?cursor=', '/cursor'],
    ['/invoices?status=sent', '/status'],
    ['/bills?status=cancelled', '/status'],
    ['/customers?status=paid', '/status'],
    ['/invoices?order=updated', '/order'],
    ['/invoices?due_before=2026-02-30', '/due_before'],
    ['/invoices?due_before=0000-12-01', '/due_before'],
    ['/invoices?updated_since=yesterday', '/updated_since'],
    ['/invoices?updated_since=2026-11-01', '/updated_since'],
    ['/invoices?updated_since=0000-11-01T00:00:00Z', '/updated_since'],
    // Instants the format takes and no record can have: a leap second, years 0 and 10000 through an offset.
    ['/invoices?updated_since=2026-12-31T23:59:60Z', '/updated_since'],
    ['/invoices?updated_since=0001-01-01T00:00:00%2B01:00', '/updated_since'],
    ['/invoices?updated_since=9999-12-31T23:59:59-23:59', '/updated_since'],
    ['/invoices?supplier_id=sup_1', '/'],
    ['/customers?customer_id=cus_1', '/'],
    ['/customers?due_before=2026-12-01', '/']
  ]
  for (const url of ['/invoices?updated_since=0001-01-01T00:00:00Z', '/invoices?due_before=9999-12-31']) {
    t.equal((await read(i, url)).json().invoices.length, 4, `${url}: the extremes that are fine`)
  }
  for (const [url, path] of badQueries) {
    const res = await read(i, url)
    t.equal(res.statusCode, 400, url)
    t.match(res.json(), { error: 'validation_error', details: [{ location: 'querystring', path }] },
      `${url}: ${res.body}`)
  }

  // One detail per parameter, naming what it takes: a choice of values fails once, not once for each value.
  const once: Array<[string, string, string]> = [
    ['/invoices?status=sent', '/status', 'must be one of draft, authorised, paid, voided'],
    ['/invoices?status=paid&status=voided', '/status',
      'is given 2 times: give it once, as one of draft, authorised, paid, voided'],
    ['/customers?status=active&status=archived&status=active', '/status',
      'is given 3 times: give it once, as one of active, archived'],
    ['/bills?order=updated', '/order', 'must be one of updated_at, -updated_at'],
    ['/invoices?limit=1&limit=2', '/limit', 'is given 2 times: give it once, as an integer']
  ]
  for (const [url, path, message] of once) {
    const res = await read(i, url)
    t.strictSame(res.json().details, [{ location: 'querystring', path, message }], url)
  }
})

t.test('a record of another tenant is a 404, like one that does not exist', async t => {
  const a = await tenant()
  const sameAppElsewhere = await tenant({ app: appOf(a) })
  const otherAppElsewhere = await tenant()
  const sameOrgOtherEntity = await tenant({ orgRefId: a.orgRefId })
  const others = {
    'the same app in another tenant': sameAppElsewhere,
    'another app in another tenant': otherAppElsewhere,
    'another entity of the same org': sameOrgOtherEntity
  }
  for (const kind of KINDS) {
    await send(a, kind, [RECORD[kind](1, { id: 'shared', status: kind === 'customers' ? 'active' : 'draft' }),
      RECORD[kind](2, { id: 'only_a' })])
    await send(sameAppElsewhere, kind,
      [RECORD[kind](3, { id: 'shared', status: kind === 'customers' ? 'archived' : 'paid' })])
  }
  for (const kind of KINDS) {
    t.equal((await read(a, `/${kind}/shared`)).json().status, kind === 'customers' ? 'active' : 'draft',
      `${kind}: A's own`)
    t.equal((await read(sameAppElsewhere, `/${kind}/shared`)).json().status, kind === 'customers' ? 'archived' : 'paid',
      `${kind}: the same id in another tenant is another record`)
    t.strictSame(ids((await read(a, `/${kind}`)).json()[kind]), ['shared', 'only_a'])
    for (const [name, other] of Object.entries(others)) {
      const res = await read(other, `/${kind}/only_a`)
      t.equal(res.statusCode, 404, `${kind}, ${name}`)
      t.equal(res.body, `{"error":"not_found","message":"${TITLE[kind]} not found."}`,
        `${kind}, ${name}: the exact body`)
      t.notOk(res.headers.etag)
      t.notOk(ids((await read(other, `/${kind}`)).json()[kind]).includes('only_a'), `${kind}, ${name}: not listed`)
    }
    // Asked at the same moment (lookups of one turn share a statement), each tenant still gets only its own.
    const together = await Promise.all([
      read(a, `/${kind}/shared`), read(sameAppElsewhere, `/${kind}/shared`), read(otherAppElsewhere, `/${kind}/only_a`),
      read(a, `/${kind}/only_a`), read(sameOrgOtherEntity, `/${kind}/shared`), read(a, `/${kind}/shared`)
    ])
    t.same(together.map(r => r.statusCode), [200, 200, 404, 200, 404, 200], `${kind}: asked together`)
    t.same(together.filter(r => r.statusCode === 200).map(r => r.json().id), ['shared', 'shared', 'only_a', 'shared'])
    t.equal(together[0]!.body, together[5]!.body, `${kind}: the same record asked twice together, the same answer`)
    t.not(together[0]!.body, together[1]!.body, `${kind}: the same id in two tenants asked together, two records`)
    // Pages asked at the same moment share a statement as well: each gets its own tenant's page in its own order,
    // and an argument Postgres refuses (NUL) fails its own request only, not the statement the others share.
    const statements = recordStatements(t)
    const party = kind === 'invoices' ? '?customer_id=a%00b' : kind === 'bills' ? '?supplier_id=a%00b' : undefined
    const pages = await Promise.all([
      read(a, `/${kind}`), read(sameAppElsewhere, `/${kind}`), read(a, `/${kind}?order=-updated_at&limit=1`),
      read(otherAppElsewhere, `/${kind}`), read(a, `/${kind}/a%00b`), read(a, `/${kind}${party ?? ''}`),
      read(a, `/${kind}?limit=1`), read(a, `/${kind}/shared`)
    ])
    t.same(pages.map(r => r.statusCode), [200, 200, 200, 200, 400, party ? 400 : 200, 200, 200],
      `${kind}: pages and lookups together`)
    t.same(pages[4]!.json().error, 'validation_error', `${kind}: NUL in an id is the request's own 400`)
    t.same([0, 1, 2, 3, 6].map(k => ids(pages[k]!.json()[kind])),
      [['shared', 'only_a'], ['shared'], ['only_a'], [], ['shared']], `${kind}: each page its own`)
    t.ok(pages[6]!.json().next_cursor, `${kind}: the one-record page has a next cursor`)
    t.equal(pages[0]!.json().next_cursor, null)
    t.ok(statements.length < 6, `${kind}: the pages and lookups shared statements (${statements.length})`)
    // Another tenant's path with one's own token: refused before anything is looked up.
    for (const url of [`/${kind}/only_a`, `/${kind}`]) {
      const res = await read(a, url, {}, otherAppElsewhere.accessToken)
      t.equal(res.statusCode, 403, url)
      t.strictSame(res.json(), { error: 'tenant_mismatch', message: "Path tenant does not match the token's tenant." })
    }
  }
})

t.test('tenants whose org and entity ids run together alike are still two tenants', async t => {
  // The sync index keys a tenant as one text: org 'Xa' with entity 'bc', and org 'Xab' with entity 'c', must differ.
  const prefix = `t${Date.now().toString(36)}`
  const one = await tenant({ orgRefId: `${prefix}a`, entityRefId: 'bc' })
  const two = await tenant({ orgRefId: `${prefix}ab`, entityRefId: 'c', app: appOf(one) })
  await send(one, 'invoices', [RECORD.invoices(1), RECORD.invoices(2)])
  await send(two, 'invoices', [RECORD.invoices(3)])
  t.strictSame(ids((await read(one, '/invoices')).json().invoices), ['inv_00001', 'inv_00002'])
  t.strictSame(ids((await read(two, '/invoices')).json().invoices), ['inv_00003'])
  t.strictSame(ids((await read(two, '/invoices?order=-updated_at')).json().invoices), ['inv_00003'])
  t.equal((await read(two, '/invoices/inv_00001')).statusCode, 404)
})

t.test('ETag and If-None-Match', async t => {
  const i = await tenant()
  for (const kind of KINDS) {
    const v1 = RECORD[kind](1)
    await send(i, kind, [v1])
    const url = `/${kind}/${v1.id}`
    const first = await read(i, url)
    const etag = first.headers.etag as string
    t.match(etag, /^"[A-Za-z0-9_-]{20,}"$/, `${kind}: a strong ETag`)
    t.equal((await read(i, url)).headers.etag, etag, 'the same record, the same tag')

    for (const header of [etag, `W/${etag}`, '*', `"nope", ${etag}`, `W/"nope",W/${etag}`]) {
      const res = await read(i, url, { 'if-none-match': header })
      t.equal(res.statusCode, 304, `${kind}, If-None-Match: ${header}`)
      t.equal(res.body, '')
      t.equal(res.headers.etag, etag)
    }
    for (const header of ['"nope"', etag.slice(0, -2) + '"', 'W/"nope"']) {
      t.equal((await read(i, url, { 'if-none-match': header })).statusCode, 200, `${kind}, If-None-Match: ${header}`)
    }

    // The same updated_at with other content is no change, so neither is the tag.
    const stale = kind === 'customers' ? { name: 'Other' } : { number: 'OTHER' }
    await send(i, kind, [{ ...v1, ...stale }])
    t.equal((await read(i, url, { 'if-none-match': etag })).statusCode, 304)

    const v2 = RECORD[kind](1, { updated_at: at(50), ...stale })
    await send(i, kind, [v2])
    const changed = await read(i, url, { 'if-none-match': etag })
    t.equal(changed.statusCode, 200, `${kind}: a changed record is sent again`)
    t.strictSame(changed.json(), v2)
    t.not(changed.headers.etag, etag, 'with a new tag')
    t.equal((await read(i, url, { 'if-none-match': changed.headers.etag as string })).statusCode, 304)
  }
  t.equal((await read(i, '/invoices/nope', { 'if-none-match': '*' })).statusCode, 404, '* does not make a record')
})

/** The SQL statements that read or write a record table, while the test runs. */
function recordStatements (t: Test): string[] {
  const seen: string[] = []
  const query = app.db.query
  app.db.query = (async (sql: string, params?: unknown[]) => {
    if (/\b(from|into|join)\s+(invoices|bills|customers)\b/.test(sql)) seen.push(sql)
    return query.call(app.db, sql, params)
  }) as typeof query
  t.teardown(() => { app.db.query = query })
  return seen
}

t.test('scopes: a token without the kind\'s scope gets 403 before anything is read', async t => {
  const full = await tenant()
  for (const kind of KINDS) await send(full, kind, [RECORD[kind](1)])
  for (const kind of KINDS) {
    const others = KINDS.filter(k => k !== kind).map(k => SCOPE[k])
    const i = await tenant({ app: appOf(full), orgRefId: full.orgRefId, entityRefId: full.entityRefId, scopes: others })
    const id = RECORD[kind](1).id
    const statements = recordStatements(t)
    for (const url of [`/${kind}`, `/${kind}/${id}`, `/${kind}/nope`, `/${kind}?limit=0`, `/${kind}?cursor=garbage`,
      `/${kind}/${id}?x=1`]) {
      const res = await read(i, url)
      t.equal(res.statusCode, 403, `${kind}: ${url}`)
      t.strictSame(res.json(),
        { error: 'insufficient_scope', message: `Missing scope: ${SCOPE[kind]}`, required: [SCOPE[kind]] })
      t.equal(res.headers['www-authenticate'], `Bearer error="insufficient_scope", scope="${SCOPE[kind]}"`)
    }
    t.strictSame(statements, [], `${kind}: no record was read`)
    // The same install reads the kinds it holds the scope of (and the statements are seen when they run).
    const granted = KINDS.find(k => k !== kind)!
    t.equal((await read(i, `/${granted}/${RECORD[granted](1).id}`)).statusCode, 200, `${granted} is granted`)
    t.ok(statements.length > 0, 'reads are seen when they happen')
  }
})

t.test('Postgres: the service\'s connections run without JIT, which compiled the page statement on every execution',
  { skip: process.env.DATABASE_URL ? false : 'needs Postgres: set DATABASE_URL (CI runs it)' }, async t => {
    const app = await build(t)
    t.strictSame(await app.db.query('show jit'), [{ jit: 'off' }])
  })
