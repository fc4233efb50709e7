// The aged report tools (aged_receivables, aged_payables) through the MCP SDK client over real HTTP: the same
// arguments and the same JSON as GET .../reports/aged-receivables and aged-payables, page for page, and the same
// errors as tool errors.
import t, { type Test } from 'tap'
import type { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { ManualClock } from '../../../../support/clock.js'
import { bearer, build, install, type InstallOptions, type Installed } from '../../../../support/helper.js'
import { connectWithToken } from '../../../../support/mcp.js'
import { bill, invoice } from '../../../../support/records.js'
import { publishRaw } from '../../../../support/webhooks.js'

type Json = Record<string, any>
type ToolResult = Awaited<ReturnType<Client['callTool']>>

// One app for the file, over real HTTP, on a clock of its own: a report asked for without as_of is of the same day
// on both surfaces. Access tokens are stamped on the database's clock, so the file's clock keeps up with it when a
// tenant is installed. Its requests all come from 127.0.0.1: together about 60 POSTs to /mcp, under the 120 a
// minute of one address, and under the 60 a minute of one connected client.
const clock = new ManualClock(Date.now())
const app = await build(t, { WEBHOOK_WORKER: 'false' }, { clock })
await app.listen({ port: 0, host: '127.0.0.1' })
const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`

interface Report {
  tool: 'aged_receivables' | 'aged_payables'
  path: 'aged-receivables' | 'aged-payables'
  party: 'customer' | 'supplier'
  filter: 'customer_id' | 'supplier_id'
  scope: string
  topic: string
  make: typeof invoice
}
const RECEIVABLES: Report = {
  tool: 'aged_receivables',
  path: 'aged-receivables',
  party: 'customer',
  filter: 'customer_id',
  scope: 'invoices:read',
  topic: 'invoice.updated',
  make: invoice
}
const PAYABLES: Report = {
  tool: 'aged_payables',
  path: 'aged-payables',
  party: 'supplier',
  filter: 'supplier_id',
  scope: 'bills:read',
  topic: 'bill.updated',
  make: bill
}
const REPORTS = [RECEIVABLES, PAYABLES]
const AS_OF = '2026-11-27'
const at = (n: number): string => new Date(Date.UTC(2026, 10, 1) + n * 1000).toISOString()

interface Tenant extends Installed { path: string }
async function tenant (opts: InstallOptions = {}): Promise<Tenant> {
  const i = await install(app, opts)
  // The token was stamped on the database's clock: the app's clock must not lag behind it by more than a minute.
  clock.advance(Math.max(0, Date.now() - clock.now()))
  return { ...i, path: `/public/v1/orgs/${i.orgRefId}/entities/${i.entityRefId}` }
}

const connect = (t: Test, token: string): Promise<Client> => connectWithToken(t, base, token)

const query = (args: Json) =>
  new URLSearchParams(Object.entries(args).map(([k, v]): [string, string] => [k, String(v)])).toString()

/** The REST answer for the same arguments. */
const rest = (i: Tenant, r: Report, args: Json) =>
  app.inject({ method: 'GET', url: `${i.path}/reports/${r.path}?${query(args)}`, headers: bearer(i.accessToken) })

const textOf = (res: ToolResult): string => (res.content as Array<{ type: string, text: string }>)[0]!.text

type Doc = [id: string, party: string, currency: string, due: string, amount: string]

/** Documents of the report's kind, authorised, one line of `amount` each. */
async function send (i: Tenant, r: Report, docs: Doc[]): Promise<void> {
  const zero: Record<string, string> = { EUR: '0.00', JPY: '0', BHD: '0.000' }
  const res = await publishRaw(app, docs.map(([id, party, currency, due, amount], k) => ({
    topic: r.topic,
    org_ref_id: i.orgRefId,
    entity_ref_id: i.entityRefId,
    data: r.make({
      id,
      updated_at: at(k + 1),
      created_at: at(0),
      status: 'authorised',
      [r.party]: { id: party, name: `${party} Ltd` },
      currency,
      due_date: due,
      line_items: [{ description: 'Item', quantity: '1', unit_amount: amount, tax_amount: zero[currency]! }]
    })
  })))
  if (res.statusCode !== 202) throw new Error(`publish: ${res.statusCode} ${res.body}`)
}

/**
 * Pages through the tool with `args`, and through the route with the same arguments beside it: every page must be
 * the same JSON, next_cursor included, and the tool's text the route's body. Returns the contacts of the walk.
 */
async function walkBoth (t: Test, client: Client, i: Tenant, r: Report, args: Json): Promise<Json[]> {
  const seen: Json[] = []
  let cursor: string | undefined
  for (let n = 0; n < 20; n++) {
    const pageArgs = { ...args, ...(cursor !== undefined && { cursor }) }
    const tool = await client.callTool({ name: r.tool, arguments: pageArgs })
    const page = await rest(i, r, pageArgs)
    if (tool.isError || page.statusCode !== 200) {
      throw new Error(`${r.tool} ${JSON.stringify(pageArgs)}: ${textOf(tool)} / ${page.statusCode} ${page.body}`)
    }
    t.strictSame(tool.structuredContent, page.json(), `${r.tool} ${JSON.stringify(pageArgs)} = REST`)
    t.equal(textOf(tool), page.body, 'and its text is the REST body')
    const content = tool.structuredContent as Json
    seen.push(...content.contacts)
    if (content.next_cursor === null) return seen
    cursor = content.next_cursor
  }
  throw new Error('no last page after 20')
}

/** A tenant with documents of both kinds: four contacts, three currencies (one of 0 and one of 3 minor digits). */
async function stocked (): Promise<Tenant> {
  const i = await tenant()
  for (const r of REPORTS) {
    await send(i, r, [
      ['d_1', 'p_a', 'EUR', '2026-06-01', '100.00'],
      ['d_2', 'p_a', 'JPY', '2026-11-20', '1500'],
      ['d_3', 'p_b', 'EUR', '2026-10-01', '20.50'],
      ['d_4', 'p_c', 'BHD', '2026-12-24', '7.125'],
      ['d_5', 'p_d', 'EUR', '2026-09-01', '0.99'],
      ['d_6', 'p_b', 'EUR', '2026-11-27', '1.00']
    ])
  }
  return i
}

t.test('tools/list and the catalog: both report tools, read-only, with the route\'s query and answer', async t => {
  const i = await tenant()
  const client = await connect(t, i.accessToken)
  const { tools } = await client.listTools()
  const catalog = await (await fetch(`${base}/catalog.json`)).json() as { tools: Json[] }
  for (const r of REPORTS) {
    const tool = tools.find(x => x.name === r.tool)
    t.ok(tool, `${r.tool} is listed`)
    if (!tool) continue
    t.match(tool.annotations, { readOnlyHint: true, destructiveHint: false, idempotentHint: true })
    t.same(Object.keys(tool.inputSchema.properties ?? {}), ['as_of', r.filter, 'currency', 'limit', 'cursor'],
      `${r.tool}: the route's query`)
    t.notOk(tool.inputSchema.required?.length, 'every argument optional')
    t.same(Object.keys(tool.outputSchema?.properties ?? {}), ['as_of', 'totals', 'contacts', 'next_cursor'])
    t.match(tool.description, /next_cursor/, 'says how to page')
    t.match(tool.description, /decimal string/, 'and what money is')
    const listed = catalog.tools.find(c => c.name === r.tool)
    t.ok(listed, `${r.tool} is in /catalog.json`)
    t.same(listed?.requiredScopes, [r.scope])
    t.match(listed?.annotations, { readOnlyHint: true })
  }
})

t.test('the tools answer what the routes answer, page for page, with the same arguments', async t => {
  const i = await stocked()
  const client = await connect(t, i.accessToken)
  for (const r of REPORTS) {
    const whole = await walkBoth(t, client, i, r, { as_of: AS_OF })
    t.strictSame(whole.map(c => `${c[r.party].id}/${c.currency}`),
      ['p_a/EUR', 'p_d/EUR', 'p_b/EUR', 'p_a/JPY', 'p_c/BHD'], `${r.tool}: every contact, most overdue first`)
    t.strictSame(await walkBoth(t, client, i, r, { as_of: AS_OF, limit: 2 }), whole, `${r.tool}: limit 2`)
    t.strictSame(await walkBoth(t, client, i, r, { as_of: AS_OF, limit: 1, currency: 'EUR' }),
      whole.filter(c => c.currency === 'EUR'), `${r.tool}: one currency`)
    t.strictSame(await walkBoth(t, client, i, r, { as_of: AS_OF, limit: 1, [r.filter]: 'p_a' }),
      whole.filter(c => c[r.party].id === 'p_a'), `${r.tool}: one contact`)
    // Without as_of: today on the app's clock, on both surfaces.
    const today = new Date(clock.now()).toISOString().slice(0, 10)
    const byDefault = await client.callTool({ name: r.tool, arguments: { limit: 100 } })
    t.equal((byDefault.structuredContent as Json).as_of, today)
    t.strictSame(byDefault.structuredContent, (await rest(i, r, { limit: 100 })).json(), `${r.tool}: as of today`)
  }
  // The cursor is the same on both surfaces: one from the route continues through the tool.
  const first = (await rest(i, RECEIVABLES, { as_of: AS_OF, limit: 3 })).json()
  const next = await client.callTool({ name: 'aged_receivables', arguments: { cursor: first.next_cursor } })
  t.strictSame(next.structuredContent,
    (await rest(i, RECEIVABLES, { cursor: first.next_cursor })).json(), 'a REST cursor continues through MCP')
  t.equal((next.structuredContent as Json).as_of, AS_OF, 'as of the first page\'s day')
  t.equal((next.structuredContent as Json).contacts.length, 2)
})

t.test('a bad cursor, a bad as_of and a missing scope are tool errors with the route\'s error code', async t => {
  const i = await stocked()
  const limited = await tenant({ scopes: ['customers:read'] })
  const good = await connect(t, i.accessToken)
  const partial = await connect(t, limited.accessToken)
  const failed = (res: ToolResult, what: string) => {
    t.equal(res.isError, true, `${what}: a tool error`)
    t.notOk(res.structuredContent, `${what}: no structuredContent`)
    return textOf(res)
  }

  const cursorOf = async (r: Report, args: Json) => (await rest(i, r, { limit: 1, ...args })).json().next_cursor
  const receivables = await cursorOf(RECEIVABLES, { as_of: AS_OF })
  const payables = await cursorOf(PAYABLES, { as_of: AS_OF })
  const ofEur = await cursorOf(RECEIVABLES, { as_of: AS_OF, currency: 'EUR' })
  const cursors: Array<[string, Report, Json]> = [
    ['garbage', RECEIVABLES, { cursor: 'garbage' }],
    ['edited', RECEIVABLES, { cursor: receivables.slice(0, -1) + (receivables.endsWith('A') ? 'B' : 'A') }],
    ['of the other report', PAYABLES, { cursor: receivables }],
    ['of payables on receivables', RECEIVABLES, { cursor: payables }],
    ['with another explicit as_of', RECEIVABLES, { cursor: receivables, as_of: '2026-11-28' }],
    ['without its currency', RECEIVABLES, { cursor: ofEur }]
  ]
  for (const [name, r, args] of cursors) {
    const text = failed(await good.callTool({ name: r.tool, arguments: args }), `${r.tool}: a cursor ${name}`)
    const res = await rest(i, r, args)
    t.equal(res.statusCode, 400)
    t.equal(text, res.body, `${r.tool}: a cursor ${name}: the route's body`)
    t.match(JSON.parse(text), { error: 'invalid_cursor' })
  }

  // Refused by the argument check (the route's query string check says the same of the same parameter).
  const invalid: Array<[Report, Json, string]> = [
    [RECEIVABLES, { as_of: '2026-02-30' }, '/as_of'],
    [PAYABLES, { as_of: '26-11-01' }, '/as_of'],
    [RECEIVABLES, { currency: 'eur' }, '/currency'],
    [RECEIVABLES, { limit: 0 }, '/limit'],
    [PAYABLES, { limit: 101 }, '/limit'],
    [RECEIVABLES, { supplier_id: 'p_a' }, '/supplier_id']
  ]
  for (const [r, args, path] of invalid) {
    const what = `${r.tool} ${JSON.stringify(args)}`
    const text = failed(await good.callTool({ name: r.tool, arguments: args }), what)
    t.match(JSON.parse(text), { error: 'validation_error', details: [{ path }] }, `${what}: ${text}`)
    const res = await rest(i, r, args)
    t.equal(res.statusCode, 400, `${what}: the route refuses it too`)
    t.equal(res.json().error, 'validation_error')
  }
  // Refused past the argument check, by the report itself: the route's very body.
  for (const [r, args] of [[RECEIVABLES, { as_of: '0000-01-01' }], [PAYABLES, { currency: 'XXX' }]] as const) {
    const text = failed(await good.callTool({ name: r.tool, arguments: args }), `${r.tool} ${JSON.stringify(args)}`)
    t.equal(text, (await rest(i, r, args)).body, `${r.tool} ${JSON.stringify(args)}: the route's body`)
    t.match(JSON.parse(text), { error: 'validation_error' })
  }

  for (const r of REPORTS) {
    const text = failed(await partial.callTool({ name: r.tool, arguments: { as_of: AS_OF } }), `${r.tool}, no scope`)
    const res = await app.inject({
      method: 'GET', url: `${limited.path}/reports/${r.path}?as_of=${AS_OF}`, headers: bearer(limited.accessToken)
    })
    t.equal(res.statusCode, 403)
    t.equal(text, res.body, `${r.tool}: the route's 403 body`)
    t.strictSame(JSON.parse(text),
      { error: 'insufficient_scope', message: `Missing scope: ${r.scope}`, required: [r.scope] })
  }
})
