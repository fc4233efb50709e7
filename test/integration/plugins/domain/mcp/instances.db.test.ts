import t, { type Test } from 'tap'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type { AppInstance } from '../../../../../app.js'
import { bearer, build, eventually, install, type Installed } from '../../../../support/helper.js'
import { roundRobin } from '../../../../support/round-robin.js'

// 2025-11-25 sessions on any instance: the SDK's own client, with its default settings, through a plain round-robin
// balancer over two instances of one Postgres database; then a rolling restart under the same session.

const skip = process.env.DATABASE_URL ? false : 'instances share sessions through one Postgres: set DATABASE_URL'

async function instance (t: Test): Promise<{ app: AppInstance, base: string }> {
  const app = await build(t)
  await app.listen({ port: 0, host: '127.0.0.1' })
  return { app, base: `http://127.0.0.1:${(app.server.address() as { port: number }).port}` }
}

async function connect (t: Test, url: string, i: Installed) {
  const client = new Client({ name: 'round-robin', version: '1.0.0' })
  const transport = new StreamableHTTPClientTransport(new URL(`${url}/mcp`), {
    requestInit: { headers: bearer(i.accessToken) }
  })
  await client.connect(transport)
  t.teardown(() => client.close())
  return { client, transport }
}

/** A raw ping in a session, straight to one instance. */
const ping = (base: string, session: string, token: string) => fetch(`${base}/mcp`, {
  method: 'POST',
  headers: {
    ...bearer(token),
    accept: 'application/json, text/event-stream',
    'content-type': 'application/json',
    'mcp-session-id': session,
    'mcp-protocol-version': '2025-11-25'
  },
  body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' })
})

const structured = (result: unknown) => (result as { structuredContent: Record<string, unknown> }).structuredContent

t.test('the SDK client through a round-robin balancer over two instances, and a rolling restart', { skip }, async t => {
  const a = await instance(t)
  const b = await instance(t)
  const balancer = await roundRobin(t, [a.base, b.base])
  const i = await install(a.app)
  const me = (await a.app.inject({ method: 'GET', url: '/public/v1/me', headers: bearer(i.accessToken) })).json()

  const { client, transport } = await connect(t, balancer.url, i)
  const session = transport.sessionId!
  t.match(session, /^[0-9a-f-]{36}$/, 'a session was opened')
  t.match(client.getServerVersion(), { name: 'marketplace-gateway' })
  for (let n = 0; n < 6; n++) {
    t.same(structured(await client.callTool({ name: 'whoami', arguments: {} })), me, `whoami ${n + 1} = /me`)
  }
  t.ok((await client.listTools()).tools.some(tool => tool.name === 'list_invoices'))
  t.same(structured(await client.callTool({ name: 'list_invoices', arguments: { limit: 5 } })),
    { invoices: [], next_cursor: null })
  // With a progress token: served by an SDK server made for the request, told what the session negotiated.
  for (let n = 0; n < 2; n++) {
    const viaSdk = await client.callTool({ name: 'whoami', arguments: {} }, undefined, { onprogress: () => {} })
    t.same(structured(viaSdk), me, `whoami through the SDK's server ${n + 1}`)
  }
  await client.ping()
  t.ok((balancer.hits.get(a.base) ?? 0) >= 4 && (balancer.hits.get(b.base) ?? 0) >= 4,
    `both instances served the session (${[...balancer.hits.values()].join(' and ')} requests)`)
  t.equal(a.app.mcp.activeSessions() + b.app.mcp.activeSessions() >= 2, true, 'each instance knows it')

  // A rolling restart: the first instance goes, a new one comes; the session carries on.
  await a.app.close()
  const c = await instance(t)
  balancer.targets = [c.base, b.base]
  for (let n = 0; n < 4; n++) {
    t.same(structured(await client.callTool({ name: 'whoami', arguments: {} })), me, `after the restart: ${n + 1}`)
  }
  t.ok((balancer.hits.get(c.base) ?? 0) >= 2, 'the new instance served the session it never opened')
  t.equal(transport.sessionId, session, 'the same session throughout')

  // Another install's token does not open it on any instance.
  const other = await install(b.app)
  for (const base of [b.base, c.base]) {
    const res = await ping(base, session, other.accessToken)
    t.equal(res.status, 404, `another install's token, ${base === b.base ? 'b' : 'c'}`)
    await res.text()
  }

  // Ended through one instance, it is gone on every one as soon as the database's notification reaches it.
  await transport.terminateSession()
  for (const base of [b.base, c.base]) {
    const res = await eventually(() => ping(base, session, i.accessToken),
      { until: res => res.status !== 200, what: 'the ended session to be refused' })
    t.equal(res.status, 404, `ended: ${base === b.base ? 'b' : 'c'} no longer serves it`)
    t.same(await res.json(), { jsonrpc: '2.0', error: { code: -32001, message: 'Session not found.' }, id: null })
  }
})

t.test('the SDK 2.x client, default settings (a 2025-11-25 session), through the same kind of balancer', { skip },
  async t => {
    const { Client: Client2, StreamableHTTPClientTransport: Transport2 } = await import('@modelcontextprotocol/client')
    const a = await instance(t)
    const b = await instance(t)
    const balancer = await roundRobin(t, [a.base, b.base])
    const i = await install(a.app)
    const me = (await a.app.inject({ method: 'GET', url: '/public/v1/me', headers: bearer(i.accessToken) })).json()
    const client = new Client2({ name: 'round-robin-2', version: '1.0.0' })
    const transport = new Transport2(new URL(`${balancer.url}/mcp`), {
      requestInit: { headers: bearer(i.accessToken) }
    })
    await client.connect(transport)
    t.teardown(() => client.close())
    t.match(transport.sessionId, /^[0-9a-f-]{36}$/, 'it opened a session')
    for (let n = 0; n < 4; n++) {
      t.same(structured(await client.callTool({ name: 'whoami', arguments: {} })), me, `whoami ${n + 1} = /me`)
    }
    t.ok((await client.listTools()).tools.length > 10)
    t.ok((balancer.hits.get(a.base) ?? 0) >= 2 && (balancer.hits.get(b.base) ?? 0) >= 2,
      `both instances served it (${[...balancer.hits.values()].join(' and ')} requests)`)
  })
