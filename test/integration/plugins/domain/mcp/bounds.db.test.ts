import t from 'tap'
import { bearer, build, install } from '../../../../support/helper.js'

// Every MCP request ends: a duplicate id in progress is refused at once, and a request stalled on the database is
// answered when MCP_REQUEST_TIMEOUT_SECONDS runs out, its transport and server freed. Over real HTTP.

// Long enough that each pair's second request reaches the service while its first is still stalled, even on a loaded
// machine (at 0.3 s, a first request sometimes timed out before its duplicate arrived, and both were answered so);
// short enough to run out before the Postgres pool's wait for a connection (1.5 s), which would answer 503 first.
const TIMEOUT_S = 1
const app = await build(t, {
  MCP_REQUEST_TIMEOUT_SECONDS: String(TIMEOUT_S),
  MCP_RATE_LIMIT_IP: '100000',
  MCP_RATE_LIMIT_SESSION: '100000'
})
await app.listen({ port: 0, host: '127.0.0.1' })
const base = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`
const i = await install(app)

const HEADERS = {
  ...bearer(i.accessToken),
  accept: 'application/json, text/event-stream',
  'content-type': 'application/json',
  'mcp-protocol-version': '2025-11-25'
}

async function openSession (): Promise<string> {
  const res = await fetch(`${base}/mcp`, {
    method: 'POST',
    headers: HEADERS,
    body: JSON.stringify({
      jsonrpc: '2.0',
      id: 0,
      method: 'initialize',
      params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bounds', version: '1' } }
    })
  })
  await res.text()
  return res.headers.get('mcp-session-id')!
}

/** The one JSON-RPC message of an answer, JSON or SSE. */
async function message (res: Response): Promise<any> {
  const text = await res.text()
  return JSON.parse(res.headers.get('content-type')?.startsWith('text/event-stream')
    ? text.split('\n').find(l => l.startsWith('data: '))!.slice(6)
    : text)
}

/**
 * `list_invoices`, which reads the invoices table. `sdk`: with a progress token in `_meta`, which only the SDK's
 * server handles (a plain call is answered beside it): both ways must be bounded.
 */
const call = (session: string, id: number, sdk: boolean) => fetch(`${base}/mcp`, {
  method: 'POST',
  headers: { ...HEADERS, 'mcp-session-id': session },
  body: JSON.stringify({
    jsonrpc: '2.0',
    id,
    method: 'tools/call',
    params: { name: 'list_invoices', arguments: { limit: 1 }, ...(sdk && { _meta: { progressToken: id } }) }
  })
})

t.test('hundreds of stalled requests, half of them duplicates: every one is answered, nothing is kept', async t => {
  const session = await openSession()
  t.ok(session)
  // Warm: the session and the token are known to this instance, so the stall below holds only the tool's query.
  t.match((await message(await call(session, 1, false))).result, { structuredContent: { invoices: [] } })

  // The invoices table locked by an open transaction: every read of it waits (on the embedded database, every query).
  let release!: () => void
  const held = new Promise<void>(resolve => { release = resolve })
  let locked!: () => void
  const isLocked = new Promise<void>(resolve => { locked = resolve })
  const stall = app.db.tx(async q => {
    await q.query('lock table invoices in access exclusive mode')
    locked()
    await held
  })
  await isLocked

  const PAIRS = 150
  const sent = []
  for (let n = 0; n < PAIRS; n++) {
    const id = 1000 + n
    const first = call(session, id, n % 2 === 0)
    // The same id again while the first is in progress (its request is on the wire first).
    await new Promise(resolve => setTimeout(resolve, 1))
    sent.push(first, call(session, id, n % 2 === 1))
  }
  const answers = await Promise.all(sent)
  const bodies = await Promise.all(answers.map(message))
  const refused = answers.filter(r => r.status === 409)
  t.equal(refused.length, PAIRS, 'one of each pair refused')
  const duplicates = bodies.filter(b => b.error?.code === -32600)
  t.equal(duplicates.length, PAIRS)
  t.match(duplicates[0].error.message, /^Invalid Request: id \d+ is already in use by a request in progress/)
  const timedOut = bodies.filter(b => b.error?.code === -32001)
  t.equal(timedOut.length, PAIRS, 'the others answered when the time-out ran out')
  t.equal(timedOut[0].error.message, `Request timed out after ${TIMEOUT_S} s.`)
  t.same(new Set(timedOut.map(b => b.id)).size, PAIRS, 'each with its own id')

  release()
  await stall
  t.equal(app.mcp.openTransports(), 0, 'no transport or server is left of them')
  // Their ids are free again, and the session works.
  const again = await message(await call(session, 1000, true))
  t.match(again.result, { structuredContent: { invoices: [] } }, 'an id used by a timed-out request may be used again')
  t.equal(app.mcp.openTransports(), 0)
})

t.test('a duplicate id is refused only while the first is in progress, and only in its own session', async t => {
  const [a, b] = [await openSession(), await openSession()]
  const together = await Promise.all([call(a, 7, true), call(b, 7, true)])
  t.same(together.map(r => r.status), [200, 200], 'the same id in two sessions')
  await Promise.all(together.map(r => r.text()))
  const after = await call(a, 7, false)
  t.equal(after.status, 200, 'the same id after the first was answered')
  await after.text()
})
