// The record tools (docs/records.md) through the MCP SDK client over real HTTP: the same arguments and the same
// JSON as the REST routes, page for page, and the same errors as tool errors.
import t, { type Test } from 'tap'
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { bearer, build, install, type InstallOptions, type Installed } from '../../../../support/helper.js'
import { connectWithToken } from '../../../../support/mcp.js'
import { bill, customer, invoice, nth } from '../../../../support/records.js'
import { publishRaw } from '../../../../support/webhooks.js'

type Json = Record<string, any>
type Plural = 'invoices' | 'bills' | 'customers'
type ToolResult = Awaited<ReturnType<Client['callTool']>>

// One app for the file, over real HTTP. Its requests all come from 127.0.0.1: together about 80 POSTs to /mcp,
// under the 120 a minute of one address, and under the 60 a minute of one session.
const app = await build(t, { WEBHOOK_WORKER: 'false' })
await app.listen({ port: 0, host: '127.0.0.1' })
const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`

const KINDS: Plural[] = ['invoices', 'bills', 'customers']
const SINGULAR = { invoices: 'invoice', bills: 'bill', customers: 'customer' } as const
const TOPIC = { invoices: 'invoice.updated', bills: 'bill.updated', customers: 'customer.updated' }
const at = (n: number): string => new Date(Date.UTC(2026, 10, 1) + n * 1000).toISOString()

interface Tenant extends Installed { path: string }
async function tenant (opts: InstallOptions = {}): Promise<Tenant> {
  const i = await install(app, opts)
  return { ...i, path: `/public/v1/orgs/${i.orgRefId}/entities/${i.entityRefId}` }
}

const connect = (t: Test, token: string): Promise<Client> => connectWithToken(t, base, token)

/** The REST answer for the same arguments: the list's query string, or the single record. */
async function rest (i: Tenant, url: string, token = i.accessToken) {
  return app.inject({ method: 'GET', url: i.path + url, headers: bearer(token) })
}
const query = (args: Json) =>
  new URLSearchParams(Object.entries(args).map(([k, v]): [string, string] => [k, String(v)])).toString()

async function send (i: Tenant, kind: Plural, records: Json[]): Promise<void> {
  const res = await publishRaw(app, records.map(data =>
    ({ topic: TOPIC[kind], org_ref_id: i.orgRefId, entity_ref_id: i.entityRefId, data })))
  if (res.statusCode !== 202) throw new Error(`publish: ${res.statusCode} ${res.body}`)
}

const textOf = (r: ToolResult): string => (r.content as Array<{ type: string, text: string }>)[0]!.text

/**
 * Pages through `list_<kind>` with `args`, and through the REST list with the same arguments beside it: every page
 * must be the same JSON, next_cursor included. Returns the records of the whole walk.
 */
async function walkBoth (t: Test, client: Client, i: Tenant, kind: Plural, args: Json): Promise<Json[]> {
  const seen: Json[] = []
  let cursor: string | undefined
  for (let n = 0; n < 50; n++) {
    const pageArgs = { ...args, ...(cursor !== undefined && { cursor }) }
    const tool = await client.callTool({ name: `list_${kind}`, arguments: pageArgs })
    const page = await rest(i, `/${kind}?${query(pageArgs)}`)
    if (tool.isError || page.statusCode !== 200) throw new Error(`${kind} ${JSON.stringify(pageArgs)}: ${textOf(tool)}`)
    t.strictSame(tool.structuredContent, page.json(), `list_${kind} ${JSON.stringify(pageArgs)} = REST`)
    t.equal(textOf(tool), page.body, 'and its text copy is the REST body')
    const content = tool.structuredContent as Json
    seen.push(...content[kind])
    if (content.next_cursor === null) return seen
    cursor = content.next_cursor
  }
  throw new Error('no last page after 50')
}

const byPosition = (a: Json, b: Json): number =>
  a.updated_at < b.updated_at ? -1 : a.updated_at > b.updated_at ? 1 : a.id < b.id ? -1 : a.id > b.id ? 1 : 0

t.test('tools/list: the six record tools, with their arguments and output schemas', async t => {
  const i = await tenant()
  const client = await connect(t, i.accessToken)
  const { tools } = await client.listTools()
  const catalog = await (await fetch(`${base}/catalog.json`)).json() as { tools: Json[] }
  for (const kind of KINDS) {
    const one = SINGULAR[kind]
    const list = tools.find(x => x.name === `list_${kind}`)
    const get = tools.find(x => x.name === `get_${one}`)
    t.ok(list && get, `list_${kind} and get_${one} are listed`)
    if (!list || !get) continue
    const party = { invoices: ['customer_id'], bills: ['supplier_id'], customers: [] }[kind]
    const filters = party.length > 0 ? [...party, 'due_before'] : []
    t.same(Object.keys(list.inputSchema.properties ?? {}).sort(),
      ['cursor', 'limit', 'order', 'status', 'updated_since', ...filters].sort(), `list_${kind}: the REST query`)
    t.same(Object.keys(get.inputSchema.properties ?? {}), [`${one}_id`])
    t.same(get.inputSchema.required, [`${one}_id`])
    t.same(Object.keys(list.outputSchema?.properties ?? {}), [kind, 'next_cursor'], `list_${kind}: the page`)
    t.ok(['id', 'status', 'created_at', 'updated_at'].every(f => get.outputSchema?.required?.includes(f)),
      `get_${one}: the record`)
    t.match(list.description, /next_cursor/, 'says how to page')
    t.match(list.description, /decimal string/, 'and what money is')
    for (const tool of [list, get]) {
      t.match(tool.annotations, { readOnlyHint: true, destructiveHint: false, idempotentHint: true })
      t.same(catalog.tools.find(c => c.name === tool.name)?.requiredScopes, [`${kind}:read`])
    }
  }
})

t.test('list_invoices pages to the same records as REST, page for page', async t => {
  const i = await tenant()
  const invoices = Array.from({ length: 12 }, (_, k) => invoice({
    ...nth('inv', k + 1),
    // Pairs share an updated_at: the id breaks the tie, on both surfaces.
    updated_at: at(Math.ceil((k + 1) / 2)),
    status: ['authorised', 'paid', 'draft'][k % 3],
    customer: { id: `cus_${k % 2}`, name: 'Acme' },
    due_date: `2026-12-${String(1 + k).padStart(2, '0')}`
  }))
  await send(i, 'invoices', invoices)
  await send(i, 'bills', Array.from({ length: 4 }, (_, k) => bill(nth('bill', k + 1))))
  await send(i, 'customers', Array.from({ length: 4 }, (_, k) => customer(nth('cus', k + 1))))
  const everything = (await rest(i, '/invoices?limit=100')).json().invoices
  t.strictSame(everything, [...invoices].sort(byPosition), 'REST: all of them, in (updated_at, id) order')

  const client = await connect(t, i.accessToken)
  for (const limit of [1, 2, 3]) {
    t.strictSame(await walkBoth(t, client, i, 'invoices', { limit }), everything, `limit ${limit}: the same records`)
  }
  t.strictSame(await walkBoth(t, client, i, 'invoices', { limit: 2, order: '-updated_at' }), [...everything].reverse())
  const filtered = await walkBoth(t, client, i, 'invoices',
    { limit: 1, status: 'authorised', customer_id: 'cus_0', due_before: '2026-12-10', updated_since: at(1) })
  t.strictSame(filtered, everything.filter((r: Json) => r.status === 'authorised' && r.customer.id === 'cus_0' &&
    r.due_date < '2026-12-10' && r.updated_at >= at(1)), 'the filters, the same way')
  t.ok(filtered.length > 1, 'a filter that leaves more than one page')

  const second = await connect(t, i.accessToken)
  for (const kind of ['bills', 'customers'] as const) {
    t.strictSame(await walkBoth(t, second, i, kind, { limit: 3 }), (await rest(i, `/${kind}`)).json()[kind])
  }
  // The cursor is the same on both surfaces: one from REST continues a walk through MCP.
  const { next_cursor: cursor } = (await rest(i, '/invoices?limit=5')).json()
  const rest2 = await second.callTool({ name: 'list_invoices', arguments: { limit: 100, cursor } })
  t.strictSame((rest2.structuredContent as Json).invoices, everything.slice(5))
})

t.test('get_invoice, get_bill, get_customer: structuredContent is the REST body', async t => {
  const i = await tenant()
  const records: Record<Plural, Json> = {
    invoices: invoice({ ...nth('inv', 1), customer: { id: 'cus_1', name: 'Société « Ünïcødé » 株式会社 😀 \u2028' } }),
    bills: bill({
      ...nth('bill', 1), currency: 'JPY', line_items: [{ quantity: '3', unit_amount: '1200', tax_amount: '360' }]
    }),
    customers: customer({
      ...nth('cus', 1),
      email: null,
      address: { line1: null, line2: null, city: 'Kyoto', region: null, postal_code: null, country: 'JP' }
    })
  }
  for (const kind of KINDS) await send(i, kind, [records[kind]])
  const client = await connect(t, i.accessToken)
  for (const kind of KINDS) {
    const one = SINGULAR[kind]
    const res = await rest(i, `/${kind}/${records[kind].id}`)
    t.equal(res.statusCode, 200)
    const tool = await client.callTool({ name: `get_${one}`, arguments: { [`${one}_id`]: records[kind].id } })
    t.notOk(tool.isError, `get_${one}`)
    t.strictSame(tool.structuredContent, res.json(), `get_${one} = GET /${kind}/{id}`)
    t.strictSame(tool.structuredContent, records[kind], 'which is the record sent')
    t.equal(textOf(tool), res.body, 'the text copy: the same bytes')
  }
})

t.test('a missing scope, an unknown id and bad arguments are tool errors with the REST error body', async t => {
  const i = await tenant()
  await send(i, 'invoices', [invoice(nth('inv', 1))])
  const elsewhere = await tenant()
  await send(elsewhere, 'invoices', [invoice({ ...nth('inv', 2), id: 'inv_elsewhere' })])
  // Scopes are checked before anything is looked up: the tenant of the token without them needs no records.
  const limited = await tenant({ scopes: ['bills:read'] })
  const good = await connect(t, i.accessToken)
  const partial = await connect(t, limited.accessToken)

  const failed = (r: ToolResult, what: string) => {
    t.equal(r.isError, true, `${what}: a tool error`)
    t.notOk(r.structuredContent, `${what}: no structuredContent`)
    return textOf(r)
  }
  for (const [kind, name, args] of [
    ['invoices', 'list_invoices', {}], ['invoices', 'get_invoice', { invoice_id: 'inv_00001' }],
    ['invoices', 'get_invoice', { invoice_id: 'nope' }], ['customers', 'list_customers', { status: 'active' }]
  ] as const) {
    const text = failed(await partial.callTool({ name, arguments: args }), `${name} without ${kind}:read`)
    const res = await rest(limited, `/${kind}${'invoice_id' in args ? `/${args.invoice_id}` : ''}`)
    t.equal(res.statusCode, 403)
    t.equal(text, res.body, `${name}: the REST 403 body`)
    t.strictSame(JSON.parse(text),
      { error: 'insufficient_scope', message: `Missing scope: ${kind}:read`, required: [`${kind}:read`] })
  }
  t.notOk((await partial.callTool({ name: 'list_bills', arguments: {} })).isError, 'the scope it has works')

  const unknown = [['invoices', 'nope'], ['invoices', 'inv_elsewhere'], ['bills', 'nope'], ['customers', 'nope']]
  for (const [kind, id] of unknown) {
    const one = SINGULAR[kind as Plural]
    const call = await good.callTool({ name: `get_${one}`, arguments: { [`${one}_id`]: id } })
    const text = failed(call, `get_${one} ${id}`)
    const res = await rest(i, `/${kind}/${id}`)
    t.equal(res.statusCode, 404)
    t.equal(text, res.body, `get_${one} ${id}: the REST 404 body`)
    t.equal(text, `{"error":"not_found","message":"${one[0]!.toUpperCase()}${one.slice(1)} not found."}`)
  }

  // A cursor the bills would give, on invoices.
  const ofBills = Buffer.from(JSON.stringify({ k: 'bill', o: 'a', u: at(1), i: 'x' })).toString('base64url')
  for (const cursor of ['garbage', 'bnVsbA', ofBills]) {
    const text = failed(await good.callTool({ name: 'list_invoices', arguments: { cursor } }), `cursor ${cursor}`)
    t.equal(text, (await rest(i, `/invoices?cursor=${cursor}`)).body, 'the REST invalid_cursor body')
    t.match(JSON.parse(text), { error: 'invalid_cursor' })
  }

  const invalid: Array<[Json, string]> = [
    [{ limit: 0 }, '/limit'],
    [{ limit: 101 }, '/limit'],
    [{ status: 'sent' }, '/status'],
    [{ due_before: '2026-02-30' }, '/due_before'],
    [{ due_before: '2026-13-01' }, '/due_before'],
    [{ due_before: '0000-12-01' }, '/due_before'],
    [{ updated_since: 'yesterday' }, '/updated_since'],
    [{ updated_since: '2026-12-31T23:59:60Z' }, '/updated_since'],
    [{ supplier_id: 'sup_1' }, '/supplier_id']
  ]
  for (const [args, path] of invalid) {
    const text = failed(await good.callTool({ name: 'list_invoices', arguments: args }), JSON.stringify(args))
    t.match(JSON.parse(text), { error: 'validation_error', details: [{ path }] }, `${JSON.stringify(args)}: ${text}`)
  }
  const noId = failed(await good.callTool({ name: 'get_invoice', arguments: {} }), 'get_invoice without an id')
  t.match(JSON.parse(noId), { error: 'validation_error', message: 'Invalid arguments for get_invoice.' })
})
