import { request } from 'node:http'
import t, { type Test } from 'tap'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { AppInstance } from '../../../../../app.js'
import { EMITTED_TOPICS, PLANNED_TOPICS } from '../../../../../lib/topics.js'
import { ManualClock } from '../../../../support/clock.js'
import { bearer, build, install, ISSUER, type Installed } from '../../../../support/helper.js'
import { bill, customer, invoice } from '../../../../support/records.js'
import { hooksUrl, publish } from '../../../../support/webhooks.js'

async function serve (t: Test, env: Record<string, string>, clock?: ManualClock): Promise<AppInstance> {
  const app = await build(t, env, { clock })
  await app.listen({ port: 0, host: '127.0.0.1' })
  return app
}
const baseOf = (app: AppInstance): string => `http://127.0.0.1:${(app.server.address() as { port: number }).port}`

// One app for the file, over real HTTP (the SDK client needs it), with anonymous sessions on: most tests here also
// try what a tokenless client gets. Its clock never moves: no session or token expires while the file runs. Every test
// but the rate limits' comes from 127.0.0.1: together about 90 POSTs to /mcp, under the 120 a minute of one address.
const clock = new ManualClock(Date.now())
const app = await serve(t, { MCP_ALLOW_ANONYMOUS: 'true' }, clock)
const base = baseOf(app)

async function connect (t: Test, base: string, token?: string): Promise<Client> {
  const client = new Client({ name: 'tap', version: '1.0.0' })
  const transport = new StreamableHTTPClientTransport(
    new URL(`${base}/mcp`),
    token ? { requestInit: { headers: bearer(token) } } : {}
  )
  await client.connect(transport)
  t.teardown(() => client.close())
  return client
}

const ACCEPT = { accept: 'application/json, text/event-stream', 'content-type': 'application/json' }
const initialize = {
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } }
}

async function rawSession (base: string, headers: Record<string, string> = {}): Promise<string> {
  const res = await fetch(`${base}/mcp`, {
    method: 'POST',
    headers: { ...ACCEPT, ...headers },
    body: JSON.stringify(initialize)
  })
  if (res.status !== 200) throw new Error(`initialize: ${res.status} ${await res.text()}`)
  await res.text()
  return res.headers.get('mcp-session-id')!
}

/** The one JSON-RPC message of an answer, sent as JSON or as an SSE stream (the transport may choose either). */
async function answer (res: Response): Promise<any> {
  const text = await res.text()
  return JSON.parse(res.headers.get('content-type')!.startsWith('text/event-stream')
    ? text.split('\n').find(l => l.startsWith('data: '))!.slice(6)
    : text)
}

const ping = (base: string, session: string, headers: Record<string, string> = {}) =>
  fetch(`${base}/mcp`, {
    method: 'POST',
    headers: { ...ACCEPT, 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25', ...headers },
    body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'ping' })
  })

t.test('the SDK client over real HTTP: initialize, tools/list = catalog, whoami = /me', async t => {
  const i = await install(app)
  const client = await connect(t, base, i.accessToken)

  t.match(client.getServerVersion(), { name: 'marketplace-gateway', version: '0.7.0' })
  const { tools } = await client.listTools()
  const catalog = (await (await fetch(`${base}/catalog.json`)).json()) as any
  t.same(
    tools,
    catalog.tools.map(({ requiredScopes: _r, ...tool }: Record<string, unknown>) => tool),
    'tools/list matches the catalog exactly'
  )
  t.same(tools.map(tool => tool.name).sort(), [
    'aged_payables',
    'aged_receivables',
    'create_webhook_subscription',
    'delete_webhook_subscription',
    'get_bill',
    'get_customer',
    'get_invoice',
    'list_bills',
    'list_customers',
    'list_event_types',
    'list_invoices',
    'list_webhook_deliveries',
    'list_webhook_subscriptions',
    'list_webhook_topics',
    'replay_webhook_deliveries',
    'send_test_webhook',
    'verify_webhook_signature',
    'whoami'
  ])
  for (const tool of tools) {
    t.ok(tool.title && tool.description, `${tool.name}: title and description`)
    t.equal(tool.inputSchema.type, 'object', `${tool.name}: input schema`)
    t.equal(tool.outputSchema?.type, 'object', `${tool.name}: output schema`)
    t.same(Object.keys(tool.annotations ?? {}).sort(), [
      'destructiveHint',
      'idempotentHint',
      'openWorldHint',
      'readOnlyHint',
      'title'
    ])
  }
  t.match(catalog, {
    name: 'marketplace-gateway',
    version: '0.7.0',
    protocol: { name: 'mcp', revision: '2025-11-25' },
    endpoint: /\/mcp$/
  })
  t.same(catalog.tools.find((x: { name: string }) => x.name === 'list_bills').requiredScopes, ['bills:read'])

  const whoami = await client.callTool({ name: 'whoami', arguments: {} })
  const me = await app.inject({ method: 'GET', url: '/public/v1/me', headers: bearer(i.accessToken) })
  t.same(whoami.structuredContent, me.json(), 'whoami equals /me')
  t.same(JSON.parse((whoami.content as Array<{ text: string }>)[0]!.text), me.json(), 'with a text copy')

  const { resources } = await client.listResources()
  t.same((await client.listResourceTemplates()).resourceTemplates, [], 'resources/templates/list answers, empty')
  t.same(resources.map(r => r.uri).sort(), [
    'marketplace://docs/webhooks.md',
    'marketplace://openapi.json',
    'marketplace://scopes',
    'marketplace://webhooks/topics'
  ])
  t.same(resources, catalog.resources)
  const openapi = await client.readResource({ uri: 'marketplace://openapi.json' })
  t.equal(JSON.parse((openapi.contents[0] as { text: string }).text).openapi, '3.1.0')
  await t.rejects(client.readResource({ uri: 'marketplace://nope' }), /not found/i)

  const card = (await (await fetch(`${base}/.well-known/agent.json`)).json()) as any
  t.same(card, await (await fetch(`${base}/.well-known/agent-card.json`)).json())
  t.match(card, {
    name: 'marketplace-gateway',
    version: '0.7.0',
    url: /\/mcp$/,
    defaultInputModes: Array,
    defaultOutputModes: Array,
    capabilities: Object
  })
  t.same(
    card.skills.map((s: { id: string }) => s.id),
    tools.map(x => x.name),
    'one skill per tool'
  )
  const prm = (await (await fetch(`${base}/.well-known/oauth-protected-resource/mcp`)).json()) as any
  t.same(prm, {
    resource: 'http://gateway.test/mcp',
    authorization_servers: ['http://gateway.test'],
    bearer_methods_supported: ['header'],
    scopes_supported: ['invoices:read', 'bills:read', 'customers:read'],
    resource_name: 'Marketplace gateway MCP endpoint',
    resource_documentation: 'http://gateway.test/docs'
  }, 'RFC 9728 at the path form, with only the scopes that authorise something')
  t.same(await (await fetch(`${base}/.well-known/oauth-protected-resource`)).json(), prm, 'and at the root')
})

t.test('without MCP_ALLOW_ANONYMOUS, /mcp asks for credentials so that clients start OAuth', async t => {
  // A second app: the setting is read once, when the route is registered.
  const base = baseOf(await serve(t, { MCP_ALLOW_ANONYMOUS: 'false' }))
  const challenge = 'Bearer resource_metadata="http://gateway.test/.well-known/oauth-protected-resource/mcp", ' +
    'scope="bills:read customers:read invoices:read"'
  for (const method of ['POST', 'GET', 'DELETE']) {
    const res = await fetch(`${base}/mcp`, {
      method,
      headers: ACCEPT,
      body: method === 'POST' ? JSON.stringify(initialize) : undefined
    })
    t.equal(res.status, 401, method)
    t.equal(res.headers.get('www-authenticate'), challenge, `${method}: where to learn how to get a token`)
    t.same(await res.json(), { error: 'invalid_token', message: 'Missing bearer token.' })
  }
  const forged = await fetch(`${base}/mcp`, {
    method: 'POST',
    headers: { ...ACCEPT, authorization: 'Bearer not.a.token' },
    body: JSON.stringify(initialize)
  })
  t.equal(forged.status, 401)
  t.equal(forged.headers.get('www-authenticate'),
    `${challenge}, error="invalid_token", error_description="Invalid access token."`)
  const client = new Client({ name: 'tap', version: '1.0.0' })
  await t.rejects(client.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`))),
    'the SDK client without a token is refused')
})

t.test('every tool without a token, with a token lacking the scope, and with a good token', async t => {
  const good = await install(app)
  const limited = await install(app, { appScopes: ['bom:read'] })
  const clients = {
    none: await connect(t, base),
    limited: await connect(t, base, limited.accessToken),
    good: await connect(t, base, good.accessToken)
  }
  // Agents list the tools first; the SDK client then checks every result against the tool's output schema.
  for (const client of Object.values(clients)) await client.listTools()
  const errorOf = (r: Record<string, unknown>) => JSON.parse((r.content as Array<{ text: string }>)[0]!.text)

  // One record of each kind in the good install's tenant, for the read tools to find.
  const inv = invoice({ id: 'inv_7' })
  const bil = bill({ id: 'bill_7' })
  const cus = customer({ id: 'cus_7' })
  await publish(app, good, inv, 'invoice.created')
  await publish(app, good, bil, 'bill.created')
  await publish(app, good, cus, 'customer.created')

  const created = await clients.good.callTool({
    name: 'create_webhook_subscription',
    arguments: { topics: ['invoice.paid'], target_url: 'https://hooks.example.com/mcp' }
  })
  t.notOk(created.isError)
  const subId = (created.structuredContent as { id: string }).id
  t.match(created.structuredContent, {
    id: /^whs_/,
    topics: ['invoice.paid'],
    target_url: 'https://hooks.example.com/mcp',
    signing_secret: /^whsec_/
  })
  const rest = await app.inject({
    method: 'GET',
    url: hooksUrl(good),
    headers: bearer(good.accessToken)
  })
  t.same(
    rest.json().subscriptions.map((s: { _id: string }) => s._id),
    [subId],
    'a webhook created through MCP shows up in the REST listing'
  )

  const calls: Record<
    string,
    { args: Record<string, unknown>, scope?: string, public?: boolean, good: (r: Record<string, unknown>) => void }
  > = {
    whoami: { args: {}, good: r => t.equal(r.install_id, good.installId) },
    list_webhook_topics: {
      args: {},
      public: true,
      good: r => t.same((r.topics as Array<{ name: string, status: string }>).map(x => `${x.name}:${x.status}`), [
        ...EMITTED_TOPICS.map(name => `${name}:emitted`), ...PLANNED_TOPICS.map(name => `${name}:planned`)
      ])
    },
    list_webhook_subscriptions: { args: {}, good: r => t.match(r, { subscriptions: [{ _id: subId }] }) },
    create_webhook_subscription: {
      args: { topics: ['bill.created'], target_url: 'https://hooks.example.com/2' },
      good: r => t.match(r, { topics: ['bill.created'] })
    },
    list_webhook_deliveries: {
      args: { subscription_id: subId }, good: r => t.same(r, { attempts: [], next_cursor: null })
    },
    delete_webhook_subscription: { args: { subscription_id: subId }, good: r => t.same(r, { ok: true, modified: 1 }) },
    verify_webhook_signature: {
      args: {
        signing_secret: "It's a Secret to Everybody",
        body: 'Hello, World!',
        signature: '757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17'
      },
      public: true,
      good: r => t.equal(r.valid, true)
    },
    list_invoices: { args: {}, scope: 'invoices:read', good: r => t.same(r, { invoices: [inv], next_cursor: null }) },
    get_invoice: { args: { invoice_id: 'inv_7' }, scope: 'invoices:read', good: r => t.same(r, inv) },
    list_bills: { args: {}, scope: 'bills:read', good: r => t.same(r, { bills: [bil], next_cursor: null }) },
    get_bill: { args: { bill_id: 'bill_7' }, scope: 'bills:read', good: r => t.same(r, bil) },
    list_customers: {
      args: {}, scope: 'customers:read', good: r => t.same(r, { customers: [cus], next_cursor: null })
    },
    get_customer: { args: { customer_id: 'cus_7' }, scope: 'customers:read', good: r => t.same(r, cus) }
  }
  for (const [name, c] of Object.entries(calls)) {
    const anonymous = await clients.none.callTool({ name, arguments: c.args })
    if (c.public) {
      t.notOk(anonymous.isError, `${name} works without a token`)
    } else {
      t.equal(anonymous.isError, true, `${name} without a token is a tool error`)
      t.notOk(
        anonymous.structuredContent,
        'errors carry no structuredContent (it would have to match the output schema)'
      )
      t.match(
        errorOf(anonymous),
        { error: 'invalid_token', message: /access token/ },
        `${name}: the error names the missing token`
      )
    }
    const partial = await clients.limited.callTool({ name, arguments: c.args })
    if (c.scope) {
      t.equal(partial.isError, true, `${name} without ${c.scope}`)
      t.same(errorOf(partial), {
        error: 'insufficient_scope',
        message: `Missing scope: ${c.scope}`,
        required: [c.scope]
      })
    } else if (name !== 'list_webhook_deliveries' && name !== 'delete_webhook_subscription') {
      t.notOk(partial.isError, `${name} needs no scope`)
    }
    const full = await clients.good.callTool({ name, arguments: c.args })
    t.notOk(full.isError, `${name} with a good token`)
    c.good(full.structuredContent as Record<string, unknown>)
  }
  const missing = await clients.good.callTool({ name: 'get_invoice', arguments: { invoice_id: 'inv_1' } })
  t.equal(missing.isError, true, 'an id the tenant does not have is a tool error')
  t.notOk(missing.structuredContent)
  t.same(errorOf(missing), { error: 'not_found', message: 'Invoice not found.' })
  const other = await clients.limited.callTool({
    name: 'delete_webhook_subscription',
    arguments: { subscription_id: subId }
  })
  t.same(other.structuredContent, { ok: true, modified: 0 }, "another install's subscription is out of reach")
  const bad = await clients.good.callTool({
    name: 'create_webhook_subscription',
    arguments: { topics: ['nope'], target_url: 'http://x' }
  })
  t.equal(bad.isError, true)
  t.match(errorOf(bad), { error: 'unknown_topic', unknown: ['nope'] })
  await t.rejects(
    clients.good.callTool({ name: 'no_such_tool', arguments: {} }),
    { code: -32602, message: 'MCP error -32602: Unknown tool: no_such_tool' },
    'an unknown tool is a JSON-RPC error, its message prefixed once'
  )
  await t.rejects(
    clients.good.readResource({ uri: 'marketplace://nope' }),
    { code: -32602, message: 'MCP error -32602: Resource not found: marketplace://nope', data: { uri: 'marketplace://nope' } },
    'an unknown resource too: -32602 with data.uri, the SDK\'s one code for it on both revisions'
  )
  const invalid = await clients.good.callTool({ name: 'get_invoice', arguments: { invoice: 1 } })
  t.equal(invalid.isError, true)
  t.match(errorOf(invalid), { error: 'validation_error' }, 'arguments are checked against the input schema')
})

t.test('sessions: active_sessions up, down on DELETE, down on idle expiry', async t => {
  // An app and a clock of its own: moving the file's clock past the idle time would also expire its access tokens.
  const clock = new ManualClock(Date.now())
  const app = await serve(t, { MCP_ALLOW_ANONYMOUS: 'true' }, clock)
  const base = baseOf(app)
  const sessions = async () =>
    ((await (await fetch(`${base}/health`)).json()) as { active_sessions: number }).active_sessions
  const before = await sessions()
  t.equal(before, 0, 'a new app has no session open')
  const a = await rawSession(base)
  const b = await rawSession(base)
  t.equal(await sessions(), before + 2)
  const del = await fetch(`${base}/mcp`, {
    method: 'DELETE',
    headers: { 'mcp-session-id': a, 'mcp-protocol-version': '2025-11-25' }
  })
  t.equal(del.status, 200)
  t.equal(await sessions(), before + 1, 'down on DELETE')
  t.equal((await ping(base, a)).status, 404, 'a closed session is unknown')

  // The clock has not moved: every open session was last seen now.
  const idleMs = app.config.mcpSessionIdleMinutes * 60_000
  clock.advance(idleMs)
  t.equal(await sessions(), before + 1, 'idle for exactly MCP_SESSION_IDLE_MINUTES: still open')
  clock.advance(1)
  t.equal(await sessions(), 0, 'down on idle expiry')
  t.equal((await ping(base, b)).status, 404)

  // Asked for before anything counts the sessions: expired all the same.
  const c = await rawSession(base)
  t.equal((await ping(base, c)).status, 200)
  clock.advance(idleMs + 1)
  t.equal((await ping(base, c)).status, 404, 'a session past its idle time is unknown, whenever the sweep runs')
  t.equal(await sessions(), 0)
})

t.test('transport errors, tokens, Host and Origin', async t => {
  const i: Installed = await install(app)
  const unknown = await ping(base, 'no-such-session')
  t.equal(unknown.status, 404)
  t.same(await unknown.json(), { jsonrpc: '2.0', error: { code: -32001, message: 'Session not found.' }, id: null })
  const noSession = await fetch(`${base}/mcp`, {
    method: 'POST',
    headers: ACCEPT,
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' })
  })
  t.equal(noSession.status, 400)
  t.match(await noSession.json(), { jsonrpc: '2.0', error: { code: -32000 }, id: null })
  const malformed = await fetch(`${base}/mcp`, { method: 'POST', headers: ACCEPT, body: '{"jsonrpc":' })
  t.equal(malformed.status, 400)
  t.match(await malformed.json(), { jsonrpc: '2.0', error: { code: -32700 } })
  const array = await fetch(`${base}/mcp`, { method: 'POST', headers: ACCEPT, body: '[]' })
  t.equal(array.status, 400)

  const forged = await fetch(`${base}/mcp`, {
    method: 'POST',
    headers: { ...ACCEPT, authorization: 'Bearer not.a.token' },
    body: JSON.stringify(initialize)
  })
  t.equal(forged.status, 401)
  // MCP_BASE_URL defaults to PUBLIC_BASE_URL (the tests' issuer).
  const metadata = 'http://gateway\\.test/\\.well-known/oauth-protected-resource/mcp'
  const challenge = new RegExp(`^Bearer resource_metadata="${metadata}", scope="[^"]+", error="invalid_token"`)
  t.match(forged.headers.get('www-authenticate'), challenge)
  t.same(await forged.json(), { error: 'invalid_token', message: 'Invalid access token.' })
  await app.inject({ method: 'DELETE', url: `/installs/${i.installId}`, headers: bearer(i.userToken) })
  const uninstalled = await fetch(`${base}/mcp`, {
    method: 'POST',
    headers: { ...ACCEPT, ...bearer(i.accessToken) },
    body: JSON.stringify(initialize)
  })
  t.equal(uninstalled.status, 401, 'the whole public pipeline runs')
  t.equal(((await uninstalled.json()) as { message: string }).message, 'Install is not active.')

  // fetch will not send a forged Host header; node:http will.
  const evilHost = await new Promise<number>((resolve, reject) => {
    const req = request(`${base}/mcp`, { method: 'POST', headers: { ...ACCEPT, host: 'evil.example:80' } }, res => {
      res.resume()
      resolve(res.statusCode!)
    })
    req.on('error', reject)
    req.end(JSON.stringify(initialize))
  })
  t.equal(evilHost, 403, 'a foreign Host header (DNS rebinding)')
  const evilOrigin = await fetch(`${base}/mcp`, {
    method: 'POST',
    headers: { ...ACCEPT, origin: 'http://evil.example' },
    body: JSON.stringify(initialize)
  })
  t.equal(evilOrigin.status, 403)
  const goodOrigin = await fetch(`${base}/mcp`, {
    method: 'POST',
    headers: { ...ACCEPT, origin: ISSUER },
    body: JSON.stringify(initialize)
  })
  t.equal(goodOrigin.status, 200, 'MCP_ALLOWED_ORIGINS defaults to the origin of MCP_BASE_URL')
  t.equal(goodOrigin.headers.get('access-control-allow-origin'), ISSUER)
  const preflight = await fetch(`${base}/mcp`, {
    method: 'OPTIONS',
    headers: { origin: ISSUER, 'access-control-request-method': 'POST' }
  })
  t.equal(preflight.status, 204, 'CORS preflight for an allowed origin')
  t.match(preflight.headers.get('access-control-allow-headers'), 'mcp-session-id')

  // A session opened by one install is not usable by another, nor anonymously.
  const j = await install(app)
  const k = await install(app)
  const owned = await rawSession(base, bearer(j.accessToken))
  t.equal((await ping(base, owned, bearer(j.accessToken))).status, 200)
  t.equal((await ping(base, owned, bearer(k.accessToken))).status, 404, 'another install')
  t.equal((await ping(base, owned)).status, 404, 'no token')

  const badParams = await fetch(`${base}/mcp`, {
    method: 'POST',
    headers: { ...ACCEPT, 'mcp-session-id': owned, 'mcp-protocol-version': '2025-11-25', ...bearer(j.accessToken) },
    body: JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'whoami', arguments: 'x' } })
  })
  t.match(await answer(badParams), {
    jsonrpc: '2.0',
    id: 9,
    error: { code: -32602, message: /arguments/ }
  })

  const call = (id: number, params: unknown, method = 'tools/call') => fetch(`${base}/mcp`, {
    method: 'POST',
    headers: { ...ACCEPT, 'mcp-session-id': owned, 'mcp-protocol-version': '2025-11-25', ...bearer(j.accessToken) },
    body: JSON.stringify({ jsonrpc: '2.0', id, method, params })
  })
  const nul = await call(10, {
    name: 'create_webhook_subscription',
    arguments: { topics: ['invoice.paid'], target_url: 'https://hooks.example.com/\u0000x' }
  })
  t.equal(nul.status, 200)
  t.same(await nul.json(), {
    jsonrpc: '2.0',
    id: 10,
    error: { code: -32602, message: 'Invalid params: params.arguments must not contain NUL characters.' }
  }, 'a NUL in tool arguments: -32602 with the request id, not a parse error')
  const nulHandshake = await fetch(`${base}/mcp`, {
    method: 'POST',
    headers: ACCEPT,
    body: JSON.stringify({
      ...initialize, id: 12, params: { ...initialize.params, clientInfo: { name: 'a\u0000b', version: '1' } }
    })
  })
  t.equal(nulHandshake.status, 400, 'a NUL in the handshake, which is stored: 400, not 500')
  t.same(await nulHandshake.json(), {
    jsonrpc: '2.0', id: 12, error: { code: -32602, message: 'Invalid params: params must not contain NUL characters.' }
  })
  t.notOk(nulHandshake.headers.get('mcp-session-id'), 'and no session')
  const schemaRefused = await call(11, { cursor: 1 }, 'tools/list')
  t.match(await answer(schemaRefused),
    { jsonrpc: '2.0', id: 11, error: { code: -32602, message: /^Invalid params: params\.cursor: / } },
    "params the SDK's schema refuses: -32602, not -32603")
  const uriRefused = await call(15, { uri: 5 }, 'resources/read')
  t.match(await answer(uriRefused),
    { jsonrpc: '2.0', id: 15, error: { code: -32602, message: /^Invalid params: params\.uri: / } })

  // A call with more than name and arguments leaves the fast path: the SDK's transport and handler see it. A _meta
  // that is not an object does not fit the SDK's JSON-RPC message schema: refused before dispatch, with no id.
  const badMeta = await call(12, { name: 'whoami', arguments: {}, _meta: 5 })
  t.equal(badMeta.status, 400)
  t.match(await badMeta.json(),
    { jsonrpc: '2.0', id: null, error: { code: -32700, message: /Invalid JSON-RPC message/ } })
  const plain = await answer(await call(13, { name: 'whoami', arguments: {} }))
  const withMeta = await answer(await call(14, { name: 'whoami', arguments: {}, _meta: { progressToken: 'p' } }))
  t.same(withMeta, { ...plain, id: 14 }, 'the fast path and the SDK answer a call alike')
})

t.test('rate limits: 60 a minute per session, 120 a minute per IP', async t => {
  // From an address of its own (inject's remoteAddress): the other tests' requests do not count here.
  const post = (body: object, headers: Record<string, string> = {}) => app.inject({
    method: 'POST',
    url: '/mcp',
    remoteAddress: '192.0.2.10',
    headers: { ...ACCEPT, ...headers },
    payload: JSON.stringify(body)
  })
  const open = async () => {
    const res = await post(initialize)
    if (res.statusCode !== 200) throw new Error(`initialize: ${res.statusCode} ${res.body}`)
    return String(res.headers['mcp-session-id'])
  }
  const ping = (session: string) =>
    post({ jsonrpc: '2.0', id: 2, method: 'ping' }, { 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' })
  const session = await open()
  // The initialize that opened the session was its first request; 59 more pass.
  for (let n = 2; n <= 60; n++) {
    const res = await ping(session)
    if (res.statusCode !== 200) t.fail(`request ${n} got ${res.statusCode}`)
  }
  const limited = await ping(session)
  t.equal(limited.statusCode, 429, 'the 61st request in a session')
  t.same(limited.json(), { jsonrpc: '2.0', error: { code: -32000, message: 'Rate limit exceeded.' }, id: 2 },
    'with the id of the request it refuses')
  t.ok(Number(limited.headers['retry-after']) > 0, 'with Retry-After')
  // Over the limit, whatever the body: the id when it is one request with an id, else null (JSON-RPC 2.0).
  const inSession = { 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' }
  const refused = [
    await post({ jsonrpc: '2.0', id: 'call-7', method: 'tools/list' }, inSession),
    await post({ jsonrpc: '2.0', method: 'notifications/initialized' }, inSession),
    await post([{ jsonrpc: '2.0', id: 3, method: 'ping' }], inSession),
    await post({ id: 4, method: 'ping' }, inSession),
    await app.inject({
      method: 'POST',
      url: '/mcp',
      remoteAddress: '192.0.2.10',
      headers: { ...ACCEPT, ...inSession },
      payload: '{"jsonrpc":"2.0","id":5,'
    }),
    await app.inject({
      method: 'POST',
      url: '/mcp',
      remoteAddress: '192.0.2.10',
      headers: { ...ACCEPT, ...inSession, 'content-type': 'text/plain' },
      payload: 'ping'
    })
  ]
  t.same(refused.map(r => [r.statusCode, r.json().id]), [
    [429, 'call-7'], [429, null], [429, null], [429, null], [429, null], [429, null]
  ], 'a string id; none for a notification, a batch, a message without "jsonrpc", a body that is not JSON, or of ' +
    'another media type')

  // 67 requests so far from this IP (1 initialize, 60 pings, 6 refused); more across new sessions reach 120.
  let used = 61 + refused.length
  while (used < 120) {
    const s = await open()
    used++
    for (let k = 0; k < 10 && used < 120; k++, used++) await ping(s)
  }
  const ipLimited = await post(initialize)
  t.equal(ipLimited.statusCode, 429, 'the 121st request from one IP, across sessions')
  t.same(ipLimited.json(), { jsonrpc: '2.0', error: { code: -32000, message: 'Rate limit exceeded.' }, id: 1 })
})

// Last: it closes the file's app.
t.test('the GET event stream opens, and closing the app ends it without waiting for the client', async t => {
  const session = await rawSession(base)
  await (
    await fetch(`${base}/mcp`, {
      method: 'POST',
      headers: { ...ACCEPT, 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' },
      body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })
    })
  ).text()
  const stream = await fetch(`${base}/mcp`, {
    headers: { accept: 'text/event-stream', 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' }
  })
  t.equal(stream.status, 200)
  t.match(stream.headers.get('content-type'), /^text\/event-stream/)
  // Read to its end; the client never cancels it, so only the server can end it.
  let settled = false
  const ended = stream.text().then(() => 'ended', (err: Error) => `reset: ${err.message}`)
    .finally(() => { settled = true })
  const pong = await ping(base, session)
  await pong.text()
  t.equal(pong.status, 200, 'the session answers while its stream is read')
  const second = await fetch(`${base}/mcp`, {
    headers: { accept: 'text/event-stream', 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' }
  })
  t.equal(second.status, 409, 'a second stream of the session is refused, as the SDK\'s transport refuses it')
  t.same(await second.json(), {
    jsonrpc: '2.0', id: null, error: { code: -32000, message: 'Conflict: Only one SSE stream is allowed per session' }
  })
  t.notOk(settled, 'and the stream is still open when the app starts closing')
  // A close that waited on the stream would never resolve (the tap time-out would end the test).
  await app.close()
  t.equal(await ended, 'ended', 'the server ended the stream: its end was read, not a reset')
})
