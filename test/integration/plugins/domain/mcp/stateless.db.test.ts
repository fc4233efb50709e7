import t, { type Test } from 'tap'
import { Client, StreamableHTTPClientTransport, type FetchLike } from '@modelcontextprotocol/client'
import type { AppInstance } from '../../../../../app.js'
import { bearer, build, install, type Installed } from '../../../../support/helper.js'
import { hooksUrl, subscribe } from '../../../../support/webhooks.js'

// MCP revision 2026-07-28 (stateless) next to 2025-11-25 on /mcp, through the official SDK 2.x client
// and raw HTTP.

const REVISION = '2026-07-28'
const postgres = process.env.DATABASE_URL ? false : 'two instances need one shared Postgres: set DATABASE_URL (CI does)'

async function serve (t: Test, env: Record<string, string> = {}): Promise<{ app: AppInstance, base: string }> {
  const app = await build(t, env)
  await app.listen({ port: 0, host: '127.0.0.1' })
  return { app, base: `http://127.0.0.1:${(app.server.address() as { port: number }).port}` }
}

// One app for the file, over real HTTP (the SDK client needs it), tokens required. The tests' requests come from
// 127.0.0.1, together under the 120 a minute of one address; the rate limits' tests send theirs from addresses of
// their own.
const { app, base } = await serve(t)
// A second app: anonymous callers allowed; on Postgres, also the second instance beside the first.
const anonymous = await serve(t, { MCP_ALLOW_ANONYMOUS: 'true' })

/** An SDK 2.x client pinned to the stateless revision; `fetch` may send each request elsewhere. */
async function statelessClient (t: Test, url: string, token: string, fetch?: FetchLike): Promise<Client> {
  const client = new Client({ name: 'tap', version: '1.0.0' }, { versionNegotiation: { mode: { pin: REVISION } } })
  await client.connect(new StreamableHTTPClientTransport(new URL(url), {
    requestInit: { headers: bearer(token) },
    ...(fetch && { fetch })
  }))
  t.teardown(() => client.close())
  return client
}

const ENVELOPE = {
  'io.modelcontextprotocol/protocolVersion': REVISION,
  'io.modelcontextprotocol/clientInfo': { name: 'raw', version: '1' },
  'io.modelcontextprotocol/clientCapabilities': {}
}

/** Where a raw request goes: an app's port, or `app.inject` from an address of the test's own (its own budgets). */
type Target = string | { app: AppInstance, from: string }

/** POST /mcp to `target`; an injected answer is made a fetch Response, so that every test reads answers alike. */
async function post (target: Target, init: { headers: Record<string, string>, body: string }): Promise<Response> {
  if (typeof target === 'string') return fetch(`${target}/mcp`, { method: 'POST', ...init })
  const res = await target.app.inject({
    method: 'POST',
    url: '/mcp',
    remoteAddress: target.from,
    headers: init.headers,
    payload: init.body
  })
  const headers = new Headers()
  for (const [name, value] of Object.entries(res.headers)) if (value !== undefined) headers.set(name, String(value))
  return new Response(res.body === '' ? null : res.body, { status: res.statusCode, headers })
}

/** One stateless JSON-RPC request over raw HTTP, with the headers the revision requires. */
function rawCall (
  base: Target,
  token: string | undefined,
  method: string,
  params: Record<string, unknown> = {},
  opts: { revision?: string, headers?: Record<string, string>, id?: number } = {}
): Promise<Response> {
  const revision = opts.revision ?? REVISION
  const name = typeof params.name === 'string' ? params.name : typeof params.uri === 'string' ? params.uri : undefined
  return post(base, {
    headers: {
      accept: 'application/json, text/event-stream',
      'content-type': 'application/json',
      'mcp-protocol-version': revision,
      'mcp-method': method,
      ...(name !== undefined && { 'mcp-name': name }),
      ...(token && bearer(token)),
      ...opts.headers
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: opts.id ?? 1,
      method,
      params: { ...params, _meta: { ...ENVELOPE, 'io.modelcontextprotocol/protocolVersion': revision } }
    })
  })
}

/** The 2025 handshake over raw HTTP, asking for `revision`. */
const initialize = (base: Target, token: string, revision: string) => post(base, {
  headers: { accept: 'application/json, text/event-stream', 'content-type': 'application/json', ...bearer(token) },
  body: JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: revision, capabilities: {}, clientInfo: { name: 'raw', version: '1' } }
  })
})

const structured = (result: unknown) => (result as { structuredContent: Record<string, unknown> }).structuredContent

t.test('the SDK 2.x client, pinned to 2026-07-28: discover, tools = catalog, whoami = /me, webhook tools', async t => {
  const i = await install(app)
  const client = await statelessClient(t, `${base}/mcp`, i.accessToken)

  t.equal(client.getProtocolEra(), 'modern')
  const discovered = client.getDiscoverResult()
  t.same(discovered?.supportedVersions, [REVISION], 'server/discover names the stateless revision')
  t.match(discovered?.capabilities, { tools: {}, resources: {} })
  t.match(client.getServerVersion(), { name: 'marketplace-gateway', version: '0.7.0' })

  const catalog = (await (await fetch(`${base}/catalog.json`)).json()) as any
  t.same(catalog.protocol, { name: 'mcp', revision: '2025-11-25', revisions: ['2025-11-25', REVISION] })
  const { tools } = await client.listTools()
  t.same(tools, catalog.tools.map(({ requiredScopes: _r, ...tool }: Record<string, unknown>) => tool),
    'tools/list on the stateless revision is the catalog, exactly')

  const me = await app.inject({ method: 'GET', url: '/public/v1/me', headers: bearer(i.accessToken) })
  const whoami = await client.callTool({ name: 'whoami', arguments: {} })
  t.same(structured(whoami), me.json(), 'whoami equals /me')
  t.same(JSON.parse((whoami.content as Array<{ text: string }>)[0]!.text), me.json())

  const created = structured(await client.callTool({
    name: 'create_webhook_subscription',
    arguments: { topics: ['invoice.paid'], target_url: 'https://hooks.example.com/mcp-stateless' }
  }))
  t.match(created, { id: /^whs_/, topics: ['invoice.paid'], signing_secret: /^whsec_/ })
  const listed = structured(await client.callTool({ name: 'list_webhook_subscriptions', arguments: {} }))
  t.same((listed.subscriptions as Array<{ _id: string }>).map(s => s._id), [created.id], 'the same store as REST')
  const rest = await app.inject({
    method: 'GET',
    url: hooksUrl(i),
    headers: bearer(i.accessToken)
  })
  t.same(rest.json().subscriptions.map((s: { _id: string }) => s._id), [created.id])
  t.same(structured(await client.callTool({
    name: 'delete_webhook_subscription',
    arguments: { subscription_id: created.id }
  })), { ok: true, modified: 1 })

  const { resources } = await client.listResources()
  t.same(resources, catalog.resources, 'resources/list is the catalog too')
  const openapi = await client.readResource({ uri: 'marketplace://openapi.json' })
  t.equal(JSON.parse((openapi.contents[0] as { text: string }).text).openapi, '3.1.0')
  await t.rejects(client.readResource({ uri: 'marketplace://nope' }), { code: -32602, data: { uri: 'marketplace://nope' } })

  const health = (await (await fetch(`${base}/health`)).json()) as { active_sessions: number }
  t.equal(health.active_sessions, 0, 'stateless requests open no session')

  const card = (await (await fetch(`${base}/.well-known/agent-card.json`)).json()) as any
  t.same(card.capabilities.extensions.map((e: { uri: string }) => e.uri), [
    'https://modelcontextprotocol.io/specification/2025-11-25',
    `https://modelcontextprotocol.io/specification/${REVISION}`
  ], 'the agent card names both revisions')
  t.same(card.skills.map((s: { id: string }) => s.id), tools.map(tool => tool.name), 'and the same tools')

  // Nothing here ever changes, so a subscription stream acknowledges and ends at once instead of staying open.
  const listen = await rawCall(base, i.accessToken, 'subscriptions/listen', {
    notifications: { toolsListChanged: true, resourcesListChanged: true }
  })
  t.equal(listen.status, 200)
  const frames = (await listen.text()).split('\n').filter(l => l.startsWith('data: ')).map(l => JSON.parse(l.slice(6)))
  t.match(frames, [
    { method: 'notifications/subscriptions/acknowledged', params: { notifications: {} } },
    { id: 1, result: { resultType: 'complete' } }
  ], 'subscriptions/listen: acknowledged with nothing to send, then complete')
})

t.test('the same checks as 2025-11-25: scopes, tenant, no token, a bad token, anonymous', async t => {
  const narrow = await install(app, { scopes: ['invoices:read'] })
  const client = await statelessClient(t, `${base}/mcp`, narrow.accessToken)
  const bills = await client.callTool({ name: 'list_bills', arguments: {} })
  t.equal(bills.isError, true)
  t.match(JSON.parse((bills.content as Array<{ text: string }>)[0]!.text), { error: 'insufficient_scope' })
  const invoices = await client.callTool({ name: 'list_invoices', arguments: {} })
  t.notOk(invoices.isError, 'the scope it has lets it through')
  t.same(structured(invoices), { invoices: [], next_cursor: null })
  const badArgs = await client.callTool({ name: 'delete_webhook_subscription', arguments: { nope: 1 } })
  t.equal(badArgs.isError, true, 'arguments are checked against the input schema')

  const none = await rawCall(base, undefined, 'tools/list')
  t.equal(none.status, 401, 'no token: 401, so that the client signs in')
  t.match(none.headers.get('www-authenticate'),
    /^Bearer resource_metadata="http:\/\/gateway\.test\/\.well-known\/oauth-protected-resource\/mcp", scope="/)
  const bad = await rawCall(base, 'not.a.token', 'tools/list')
  t.equal(bad.status, 401)
  t.match(bad.headers.get('www-authenticate'), /error="invalid_token"/)

  // Another install's subscription is out of reach, as on REST.
  const owner = await install(app)
  const theirs = await subscribe(app, owner, { target_url: 'https://hooks.example.com/theirs' })
  const other = await client.callTool({
    name: 'delete_webhook_subscription',
    arguments: { subscription_id: theirs.id }
  })
  t.same(structured(other), { ok: true, modified: 0 }, "another install's subscription is out of reach")
  const still = await app.inject({
    method: 'GET',
    url: hooksUrl(owner),
    headers: bearer(owner.accessToken)
  })
  t.same(still.json().subscriptions.map((s: { _id: string }) => s._id), [theirs.id], 'and stays active')

  const topics = await rawCall(anonymous.base, undefined, 'tools/call', { name: 'list_webhook_topics', arguments: {} })
  t.equal(topics.status, 200, 'anonymous, where allowed: public tools answer')
  t.match(await topics.json(), { result: { structuredContent: { topics: Array }, resultType: 'complete' } })
  const tenantCall = await rawCall(anonymous.base, undefined, 'tools/call', { name: 'whoami', arguments: {} })
  const tenant = (await tenantCall.json()) as { result: { isError?: boolean } }
  t.equal(tenant.result.isError, true, 'a tenant tool names the missing token')
})

t.test('version negotiation: what each kind of client gets', async t => {
  const i = await install(app)

  const unknown = await rawCall(base, i.accessToken, 'tools/list', {}, { revision: '2027-01-01' })
  t.equal(unknown.status, 400, 'a revision the server does not know: 400')
  t.same(await unknown.json(), {
    jsonrpc: '2.0',
    id: 1,
    error: {
      code: -32022,
      message: 'Unsupported protocol version: 2027-01-01',
      data: { supported: [REVISION], requested: '2027-01-01' }
    }
  }, 'UnsupportedProtocolVersionError naming what the stateless path supports')

  const noEnvelope = await fetch(`${base}/mcp`, {
    method: 'POST',
    headers: {
      accept: 'application/json, text/event-stream',
      'content-type': 'application/json',
      'mcp-protocol-version': REVISION,
      ...bearer(i.accessToken)
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' })
  })
  t.equal(noEnvelope.status, 400, 'a stateless header without the _meta envelope')
  t.match(await noEnvelope.json(),
    { id: 2, error: { code: -32602, message: /missing the required per-request envelope/ } })

  const mismatch = await rawCall(base, i.accessToken, 'tools/call', { name: 'whoami', arguments: {} },
    { headers: { 'mcp-name': 'list_bills' } })
  t.equal(mismatch.status, 400, 'Mcp-Name disagreeing with the body')
  t.match(await mismatch.json(), { error: { code: -32020 } })

  const removed = await rawCall(base, i.accessToken, 'ping')
  t.equal(removed.status, 404, 'ping is gone from the stateless revision')
  t.match(await removed.json(), { error: { code: -32601 } })

  const badParams = await rawCall(base, i.accessToken, 'tools/list', { cursor: 1 })
  t.equal(badParams.status, 200)
  t.match(await badParams.json(), { id: 1, error: { code: -32602, message: /^Invalid params: params\.cursor: / } },
    "params the SDK's schema refuses: -32602 in band, as on 2025-11-25")

  // initialize is the 2025 handshake, whatever revision it asks for: a session on the newest session revision.
  for (const asked of [REVISION, '2099-01-01', '2025-06-18']) {
    const res = await initialize(base, i.accessToken, asked)
    t.equal(res.status, 200)
    t.ok(res.headers.get('mcp-session-id'), `initialize asking for ${asked} opens a session`)
    const text = await res.text()
    const result = JSON.parse(text.split('\n').find(l => l.startsWith('data: '))!.slice(6)).result
    t.equal(result.protocolVersion, asked === '2025-06-18' ? '2025-06-18' : '2025-11-25',
      `initialize asking for ${asked}: a session revision`)
  }

  // A client that negotiates finds the stateless revision; one that does not gets a session, as before.
  const auto = new Client({ name: 'auto', version: '1' }, { versionNegotiation: { mode: 'auto' } })
  await auto.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`), {
    requestInit: { headers: bearer(i.accessToken) }
  }))
  t.teardown(() => auto.close())
  t.equal(auto.getProtocolEra(), 'modern', "mode 'auto' probes with server/discover and stays stateless")
  const legacy = new Client({ name: 'legacy', version: '1' })
  await legacy.connect(new StreamableHTTPClientTransport(new URL(`${base}/mcp`), {
    requestInit: { headers: bearer(i.accessToken) }
  }))
  t.teardown(() => legacy.close())
  t.equal(legacy.getProtocolEra(), 'legacy', 'the default handshake opens a 2025-11-25 session')
  const both = await Promise.all([auto, legacy].map(c => c.callTool({ name: 'whoami', arguments: {} })))
  t.same(structured(both[0]), structured(both[1]), 'and both eras answer alike')
})

t.test('rate limit: 60 stateless requests a minute per install, then 429; other installs are not affected', async t => {
  const target = { app, from: '192.0.2.20' }
  const [i, j] = await Promise.all([install(app), install(app)])
  for (let n = 1; n <= 60; n++) {
    const res = await rawCall(target, i.accessToken, 'tools/list', {}, { id: n })
    if (res.status !== 200) t.fail(`request ${n} got ${res.status}`)
    await res.text()
  }
  const limited = await rawCall(target, i.accessToken, 'tools/list', {}, { id: 61 })
  t.equal(limited.status, 429, 'the 61st request of one install in a minute')
  t.same(await limited.json(), { jsonrpc: '2.0', error: { code: -32000, message: 'Rate limit exceeded.' }, id: 61 },
    'with the id of the request it refuses')
  t.ok(Number(limited.headers.get('retry-after')) > 0, 'with Retry-After')
  const other = await rawCall(target, j.accessToken, 'tools/list')
  t.equal(other.status, 200, 'another install has its own budget')
  await other.text()
  const badToken = await rawCall(target, 'not.a.token', 'tools/list')
  t.equal(badToken.status, 401, 'a bad token is refused as such, not counted against anyone')
  await badToken.text()

  // The install's 2025-11-25 sessions keep their own budget.
  const init = await initialize(target, i.accessToken, '2025-11-25')
  t.equal(init.status, 200, 'a session opens for the same install')
  await init.text()
  const ping = await post(target, {
    headers: {
      accept: 'application/json, text/event-stream',
      'content-type': 'application/json',
      'mcp-session-id': init.headers.get('mcp-session-id')!,
      'mcp-protocol-version': '2025-11-25',
      ...bearer(i.accessToken)
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'ping' })
  })
  t.equal(ping.status, 200, 'and is served: the stateless budget is not the session budget')
  await ping.text()
})

t.test('rate limit: stateless requests without a token count per client IP', async t => {
  const target = { app: anonymous.app, from: '192.0.2.21' }
  const i = await install(anonymous.app)
  const statuses = []
  for (let n = 0; n <= 60; n++) {
    const res = await rawCall(target, undefined, 'tools/list')
    statuses.push(res.status)
    await res.text()
  }
  t.same(statuses, [...Array(60).fill(200), 429], 'sixty a minute from one IP, then 429')
  const withToken = await rawCall(target, i.accessToken, 'tools/list')
  t.equal(withToken.status, 200, 'an install from the same IP has its own budget')
  await withToken.text()
})

t.test('two instances on one Postgres: the SDK 2.x client alternating between them', { skip: postgres }, async t => {
  // The file's two apps, on the one database of this file (anonymous callers allowed on one: no matter here).
  const a = { app, base }
  const b = anonymous
  const i: Installed = await install(a.app)
  const hits: string[] = []
  // Every request of the client goes to the other instance than the one before.
  const alternate: FetchLike = async (url, init) => {
    const target = hits.length % 2 === 0 ? a.base : b.base
    hits.push(target)
    const u = new URL(url)
    return fetch(`${target}${u.pathname}${u.search}`, init)
  }
  const client = await statelessClient(t, `${a.base}/mcp`, i.accessToken, alternate)
  t.same(client.getDiscoverResult()?.supportedVersions, [REVISION], 'discovered through one instance')
  const { tools } = await client.listTools()
  t.ok(tools.some(tool => tool.name === 'whoami'))
  const me = await a.app.inject({ method: 'GET', url: '/public/v1/me', headers: bearer(i.accessToken) })
  for (let n = 0; n < 2; n++) {
    t.same(structured(await client.callTool({ name: 'whoami', arguments: {} })), me.json(), `whoami ${n + 1} = /me`)
  }
  const created = structured(await client.callTool({
    name: 'create_webhook_subscription',
    arguments: { topics: ['bill.created'], target_url: 'https://hooks.example.com/two-instances' }
  }))
  const listed = structured(await client.callTool({ name: 'list_webhook_subscriptions', arguments: {} }))
  t.same((listed.subscriptions as Array<{ _id: string }>).map(s => s._id), [created.id],
    'a subscription made through one instance is listed by the other')
  t.ok(hits.filter(h => h === a.base).length >= 3 && hits.filter(h => h === b.base).length >= 3,
    `both instances answered (${hits.length} requests, alternating)`)
})

t.test('a plain stateless tools/call and the SDK answer alike', async t => {
  const i = await install(app)
  // Only the envelope in _meta: the plain path. A progress token beside it: the SDK's server.
  type Params = Record<string, unknown>
  const call = (params: Params, meta: Params, extra: Params = {}) =>
    fetch(`${base}/mcp`, {
      method: 'POST',
      headers: {
        accept: 'application/json, text/event-stream',
        'content-type': 'application/json',
        'mcp-protocol-version': REVISION,
        'mcp-method': 'tools/call',
        'mcp-name': String(params.name),
        ...bearer(i.accessToken)
      },
      body: JSON.stringify({
        jsonrpc: '2.0', id: 7, method: 'tools/call', params: { ...params, _meta: meta }, ...extra
      })
    })
  const essence = (res: Response) => res.headers.get('content-type')?.split(';')[0]
  // Which path answered shows in one byte-level detail: Fastify's JSON says its charset, the SDK's Response does not.
  const answeredBy = (res: Response) => res.headers.get('content-type') === 'application/json' ? 'sdk' : 'plain'
  const subscriptions = async () => (await app.inject({
    method: 'GET',
    url: hooksUrl(i),
    headers: bearer(i.accessToken)
  })).json().subscriptions.length
  const target = { topics: ['invoice.paid'], target_url: 'https://hooks.example.com/plain' }
  for (const params of [
    { name: 'whoami', arguments: {} },
    { name: 'list_webhook_topics' },
    { name: 'no_such_tool', arguments: {} },
    { name: 'create_webhook_subscription', arguments: { ...target, target_url: 'https://x.example/\u0000' } },
    { name: 'delete_webhook_subscription', arguments: { nope: 1 } }
  ]) {
    const plain = await call(params, ENVELOPE)
    t.equal(answeredBy(plain), 'plain', `${params.name}: the plain path answered`)
    const viaSdk = await call(params, { ...ENVELOPE, progressToken: 'p' })
    t.equal(answeredBy(viaSdk), 'sdk', `${params.name}: the SDK answered`)
    t.equal(plain.status, viaSdk.status, `${params.name}: the same status`)
    t.equal(essence(plain), essence(viaSdk), `${params.name}: the same media type`)
    t.strictSame(await plain.json(), await viaSdk.json(), `${params.name}: the same answer`)
  }

  // What the SDK's JSON-RPC schema refuses never runs a tool: a fractional or unsafe id, a member beside the four.
  for (const [what, extra] of [
    ['a fractional id', { id: 1.5 }],
    ['an id past 2^53', { id: 2 ** 53 }],
    ['a member beside jsonrpc, id, method and params', { foo: 1 }],
    ['a result beside the call', { result: {} }]
  ] as const) {
    const res = await call({ name: 'create_webhook_subscription', arguments: target }, ENVELOPE, extra)
    t.equal(res.status, 400, `${what}: 400`)
    t.match(await res.json(), { error: { code: -32600 } }, `${what}: invalid request`)
  }
  // An Mcp-Name of the encoded form is the SDK's to decode and compare.
  const encoded = await fetch(`${base}/mcp`, {
    method: 'POST',
    headers: {
      'content-type': 'application/json',
      'mcp-protocol-version': REVISION,
      'mcp-method': 'tools/call',
      'mcp-name': '=?base64?d2hvYW1p?=',
      ...bearer(i.accessToken)
    },
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 8,
      method: 'tools/call',
      params: { name: '=?base64?d2hvYW1p?=', _meta: ENVELOPE }
    })
  })
  t.equal(encoded.status, 400, 'an encoded name that decodes to another: the SDK refuses it')
  t.match(await encoded.json(), { error: { code: -32020 } })
  t.equal(await subscriptions(), 0, 'no subscription was made by a refused call')
})
