import type { FastifyRequest } from 'fastify'
import fc from 'fast-check'
import t, { type Test } from 'tap'
import {
  classifyInboundRequest,
  createMcpHandler,
  isJSONRPCRequest,
  Server,
  specTypeSchemas,
  SUPPORTED_PROTOCOL_VERSIONS
} from '@modelcontextprotocol/server'
import { plainSessionCall, plainStatelessCall, type PlainCall } from '../../../../../plugins/domain/mcp/fast-call.js'
import { SESSION_REVISION, STATELESS_REVISION } from '../../../../../plugins/domain/mcp/revisions.js'

/**
 * The fast path answers a `tools/call` itself only when the SDK would have done the same: parsed the same id, name
 * and arguments, and called the tool with nothing else. The SDK is the oracle here: its JSON-RPC and tools/call
 * schemas, its classifier and, on the stateless revision, its own request handler with a tool that echoes what it
 * was given.
 */

type Headers = Record<string, string>
type Req = { method: string, headers: Headers, body: unknown }
const asRequest = (r: Req) => r as unknown as FastifyRequest

const ENVELOPE = {
  'io.modelcontextprotocol/protocolVersion': STATELESS_REVISION,
  'io.modelcontextprotocol/clientInfo': { name: 'unit', version: '1' },
  'io.modelcontextprotocol/clientCapabilities': {}
}
const STATELESS_HEADERS: Headers = {
  accept: 'application/json, text/event-stream',
  'content-type': 'application/json',
  'mcp-protocol-version': STATELESS_REVISION,
  'mcp-method': 'tools/call'
}
const SESSION_HEADERS: Headers = {
  accept: 'application/json, text/event-stream',
  'content-type': 'application/json',
  'mcp-protocol-version': SESSION_REVISION
}

// The SDK's stateless handler, serving one tool that returns what it received.
let received: unknown[] = []
const sdk = createMcpHandler(() => {
  const server = new Server({ name: 'oracle', version: '1' }, { capabilities: { tools: {} } })
  server.setRequestHandler('tools/call', async req => {
    received.push(req.params)
    return { content: [{ type: 'text', text: 'echo' }] }
  })
  return server
}, { legacy: 'reject' })
t.teardown(() => sdk.close())

/** What the SDK's stateless handler makes of a request: its status and body, and what the tool was handed. */
async function askSdk (r: Req): Promise<{ status: number, body: Record<string, unknown>, params: unknown[] }> {
  received = []
  const res = await sdk.fetch(new Request('http://unit.test/mcp', {
    method: r.method,
    headers: r.headers,
    body: JSON.stringify(r.body)
  }), { parsedBody: r.body })
  return { status: res.status, body: await res.json() as Record<string, unknown>, params: received }
}

/** The SDK calls the tool once, with exactly the fast path's name and arguments, and answers a result to its id. */
async function sdkAgrees (t: Test, r: Req, call: PlainCall, what: string): Promise<boolean> {
  const { status, body, params } = await askSdk(r)
  const same = status === 200 && 'result' in body && body.id === call.id && params.length === 1 &&
    JSON.stringify(params[0]) === JSON.stringify(call.args === undefined
      ? { name: call.name }
      : { name: call.name, arguments: call.args })
  if (!same) t.fail(`${what}: the SDK answers otherwise`, { call, status, body, params })
  return same
}

const stateless = (body: Record<string, unknown>, headers: Headers = {}): Req => ({
  method: 'POST',
  headers: { ...STATELESS_HEADERS, 'mcp-name': String((body.params as { name?: unknown })?.name), ...headers },
  body: { jsonrpc: '2.0', id: 1, method: 'tools/call', ...body }
})

t.test('stateless revision: the table', async t => {
  const call = (params: Record<string, unknown>) => ({ params: { _meta: ENVELOPE, ...params } })
  const plain: Array<[string, Req]> = [
    ['name and arguments', stateless(call({ name: 'whoami', arguments: {} }))],
    ['no arguments', stateless(call({ name: 'list_webhook_topics' }))],
    ['nested arguments', stateless(call({ name: 't', arguments: { a: [1, { b: null }], c: 'ü' } }))],
    ['a string id', stateless({ id: 'abc', ...call({ name: 't' }) })],
    ['an empty string id', stateless({ id: '', ...call({ name: 't' }) })],
    ['id 0', stateless({ id: 0, ...call({ name: 't' }) })],
    ['a negative id', stateless({ id: -5, ...call({ name: 't' }) })],
    ['the largest safe id', stateless({ id: Number.MAX_SAFE_INTEGER, ...call({ name: 't' }) })],
    ['an unknown tool (the dispatcher answers it)', stateless(call({ name: 'no_such_tool' }))],
    ['a name with spaces inside', stateless(call({ name: 'a b' }))],
    ['content-type with a charset',
      stateless(call({ name: 't' }), { 'content-type': 'application/json; charset=utf-8' })],
    ['envelope keys in another order', stateless(call({
      name: 't',
      _meta: Object.fromEntries(Object.entries(ENVELOPE).reverse())
    }))]
  ]
  for (const [what, r] of plain) {
    const fast = plainStatelessCall(asRequest(r))
    if (!t.ok(fast, `${what}: the fast path answers`)) continue
    t.ok(await sdkAgrees(t, r, fast!, what), `${what}: as the SDK would`)
  }

  // Each of these the SDK answers otherwise (an error, another id, or a tool handed more): they go to it.
  const toSdk: Array<[string, Req]> = [
    ['a progress token', stateless(call({ name: 't', _meta: { ...ENVELOPE, progressToken: 'p' } }))],
    ['a log level',
      stateless(call({ name: 't', _meta: { ...ENVELOPE, 'io.modelcontextprotocol/logLevel': 'debug' } }))],
    ['a task', stateless(call({ name: 't', task: { ttl: 1000 } }))],
    ['another params member', stateless(call({ name: 't', cursor: 'x' }))],
    ['a member beside the four', stateless({ ...call({ name: 't' }), extra: 1 })],
    ['no envelope', stateless({ params: { name: 't' } })],
    ['an envelope with the protocol version alone', stateless(call({
      name: 't',
      _meta: { 'io.modelcontextprotocol/protocolVersion': STATELESS_REVISION }
    }))],
    ['an envelope naming the session revision', stateless(call({
      name: 't',
      _meta: { ...ENVELOPE, 'io.modelcontextprotocol/protocolVersion': SESSION_REVISION }
    }))],
    ['a malformed clientInfo', stateless(call({
      name: 't',
      _meta: { ...ENVELOPE, 'io.modelcontextprotocol/clientInfo': 'me' }
    }))],
    ['_meta that is an array', stateless(call({ name: 't', _meta: [] }))],
    ['a fractional id', stateless({ id: 1.5, ...call({ name: 't' }) })],
    ['an id past 2^53', stateless({ id: 2 ** 53, ...call({ name: 't' }) })],
    ['a null id', stateless({ id: null, ...call({ name: 't' }) })],
    ['no id (a notification)', stateless({ id: undefined, ...call({ name: 't' }) })],
    ['jsonrpc 1.0', stateless({ jsonrpc: '1.0', ...call({ name: 't' }) })],
    ['another method', stateless({ method: 'tools/list', ...call({ name: 't' }) })],
    ['a name that is not a string', stateless(call({ name: 42 }))],
    ['no name', stateless(call({}))],
    ['arguments that are an array', stateless(call({ name: 't', arguments: [] }))],
    ['arguments that are null', stateless(call({ name: 't', arguments: null }))],
    ['arguments that are a string', stateless(call({ name: 't', arguments: 'x' }))],
    ['Mcp-Name naming another tool', stateless(call({ name: 't' }), { 'mcp-name': 'u' })],
    ['no Mcp-Name', stateless(call({ name: 't' }), { 'mcp-name': undefined as unknown as string })],
    ['Mcp-Name with spaces around it', stateless(call({ name: 't' }), { 'mcp-name': ' t ' })],
    ['Mcp-Name base64-encoded', stateless(call({ name: 't' }), { 'mcp-name': '=?base64?dA==?=' })],
    ['a name that looks encoded', stateless(call({ name: '=?base64?dA==?=' }))],
    ['Mcp-Method naming another method', stateless(call({ name: 't' }), { 'mcp-method': 'tools/list' })],
    ['MCP-Protocol-Version of the session revision', stateless(call({ name: 't' }),
      { 'mcp-protocol-version': SESSION_REVISION })],
    ['MCP-Protocol-Version with a space', stateless(call({ name: 't' }),
      { 'mcp-protocol-version': ` ${STATELESS_REVISION}` })],
    ['no MCP-Protocol-Version', stateless(call({ name: 't' }),
      { 'mcp-protocol-version': undefined as unknown as string })],
    ['a text/plain body', stateless(call({ name: 't' }), { 'content-type': 'text/plain' })]
  ]
  for (const [what, r] of toSdk) {
    r.headers = Object.fromEntries(Object.entries(r.headers).filter(([, v]) => v !== undefined))
    t.equal(plainStatelessCall(asRequest(r)), undefined, `${what}: left to the SDK`)
  }
  // Some of them the SDK refuses outright: had the fast path taken them, it would have answered what the SDK does not.
  for (const what of ['no envelope', 'an envelope with the protocol version alone', 'an id past 2^53',
    'arguments that are an array', 'Mcp-Name naming another tool', 'Mcp-Method naming another method',
    'an envelope naming the session revision', 'a malformed clientInfo']) {
    const r = toSdk.find(([w]) => w === what)![1]
    const { body } = await askSdk(r)
    t.ok('error' in body && !('result' in body), `${what}: the SDK answers an error`)
  }
  t.equal(plainStatelessCall(asRequest({ ...stateless(call({ name: 't' })), method: 'GET' })), undefined,
    'a GET: left to the SDK')
})

// Generated requests: mostly of the accepted shape, each part now and then off in a way the SDK cares about. Headers
// are as Node hands them over: trimmed, and one value each.
const usually = <T, U>(good: fc.Arbitrary<T>, ...others: Array<fc.Arbitrary<U>>) =>
  fc.oneof({ weight: 12, arbitrary: good as fc.Arbitrary<T | U> }, ...others)
const rarely = <T>(arb: fc.Arbitrary<T>) => usually(fc.constant(undefined), arb)
const defined = <T extends object>(o: T): T =>
  Object.fromEntries(Object.entries(o).filter(([, v]) => v !== undefined)) as T
const jsonValue = fc.jsonValue({ maxDepth: 3 }).filter(v => !JSON.stringify(v).includes('__proto__'))
const name = fc.oneof(fc.constantFrom('whoami', 't', 'a b', '=?base64?dA==?=', ''), fc.string({ maxLength: 8 }))
const envelope = usually(
  fc.constant(ENVELOPE as Record<string, unknown>),
  fc.record({
    'io.modelcontextprotocol/protocolVersion': fc.constantFrom(STATELESS_REVISION, SESSION_REVISION, '2027-01-01', 7),
    'io.modelcontextprotocol/clientInfo': fc.oneof(fc.constant({ name: 'u', version: '1' }), jsonValue),
    'io.modelcontextprotocol/clientCapabilities': fc.oneof(fc.constant({}), jsonValue)
  }, { requiredKeys: [] }),
  fc.record({ progressToken: fc.oneof(fc.string(), fc.integer()) }).map(p => ({ ...ENVELOPE, ...p })),
  jsonValue
)
const params = fc.record({
  name: usually(name, jsonValue),
  arguments: fc.oneof(fc.constant(undefined), fc.dictionary(fc.string({ maxLength: 5 }), jsonValue), rarely(jsonValue)),
  _meta: usually(envelope, fc.constant(undefined)),
  task: rarely(fc.constant({ ttl: 1 })),
  cursor: rarely(fc.string())
}).map(defined)
const id = usually(fc.oneof(fc.string({ maxLength: 6 }), fc.integer()),
  fc.constantFrom(2 ** 53, -(2 ** 53), 1.5, null, true, -0), jsonValue)
const body = fc.record({
  jsonrpc: usually(fc.constant('2.0'), fc.constantFrom('1.0', 2, undefined)),
  id: usually(id, fc.constant(undefined)),
  method: usually(fc.constant('tools/call'), fc.constantFrom('tools/list', 'Tools/call')),
  params: usually(params, jsonValue),
  extra: rarely(jsonValue)
}).map(defined)
const header = (good: fc.Arbitrary<string>, ...others: string[]) =>
  usually(good, fc.constantFrom<string | undefined>(undefined, ...others))

const statelessRequest = body.chain(b => {
  const named = (b.params as { name?: unknown } | undefined)?.name
  const bodyName = typeof named === 'string' ? named : 'x'
  return fc.record({
    method: usually(fc.constant('POST'), fc.constant('GET')),
    body: fc.constant(b),
    headers: fc.record({
      accept: fc.constant('application/json, text/event-stream'),
      'content-type': header(fc.constantFrom('application/json', 'application/json; charset=utf-8'), 'text/plain'),
      'mcp-protocol-version': header(fc.constant(STATELESS_REVISION), SESSION_REVISION, '2027-01-01'),
      'mcp-method': header(fc.constant('tools/call'), 'tools/list'),
      'mcp-name': header(fc.constant(bodyName), 'other', '=?base64?dA==?=')
    }).map(h => defined(Object.fromEntries(Object.entries(h).map(([k, v]) => [k, v?.trim()]))))
  })
}) as fc.Arbitrary<Req>

t.test('stateless revision, generated: every call the fast path takes, the SDK answers alike', async t => {
  let taken = 0
  let left = 0
  await fc.assert(fc.asyncProperty(statelessRequest, async r => {
    const fast = plainStatelessCall(asRequest(r))
    if (!fast) {
      left++
      return true
    }
    taken++
    return sdkAgrees(t, r, fast, JSON.stringify(r))
  }), { numRuns: 400 })
  t.ok(taken >= 25 && left >= 25, `the generator reaches both paths (${taken} taken, ${left} left to the SDK)`)
})

t.test('stateless revision, generated: a call the SDK refuses or hands on with more never takes the fast path',
  async t => {
    // The other direction, for the changes the SDK treats differently, made to calls the fast path takes.
    const base = stateless({ params: { name: 'whoami', arguments: { a: 1 }, _meta: ENVELOPE } })
    t.ok(plainStatelessCall(asRequest(base)), 'the base call is taken')
    const change = fc.oneof(
      fc.record({ progressToken: fc.oneof(fc.string(), fc.integer()) }).map(m => ({ meta: m })),
      fc.record({ task: fc.record({ ttl: fc.nat() }) }).map(p => ({ params: p })),
      fc.string({ minLength: 1, maxLength: 6 })
        .filter(k => !['name', 'arguments', '_meta'].includes(k))
        .map(k => ({ params: { [k]: 1 } })),
      fc.string({ minLength: 1, maxLength: 6 })
        .filter(k => !['jsonrpc', 'id', 'method', 'params'].includes(k))
        .map(k => ({ top: { [k]: 1 } })),
      fc.oneof(fc.double().filter(d => !Number.isSafeInteger(d)), fc.constantFrom(2 ** 53, -(2 ** 53)))
        .map(v => ({ top: { id: v } }))
    )
    await fc.assert(fc.asyncProperty(change, async c => {
      const b = base.body as { params: { _meta: object } }
      const r: Req = {
        ...base,
        body: {
          ...b,
          ...('top' in c ? c.top : {}),
          params: {
            ...b.params,
            ...('params' in c ? c.params : {}),
            _meta: { ...b.params._meta, ...('meta' in c ? c.meta : {}) }
          }
        }
      }
      return plainStatelessCall(asRequest(r)) === undefined
    }), { numRuns: 300 })
    t.pass('progress tokens, tasks, other params or members, ids the schema refuses: all left to the SDK')
  })

/** The SDK's verdict on a session call: a valid JSON-RPC request, a 2025-era one, and the tools/call it parses. */
function sdkSessionView (r: Req): { name: string, args: unknown } | undefined {
  if (!isJSONRPCRequest(r.body)) return undefined
  const route = classifyInboundRequest({
    httpMethod: r.method,
    body: r.body,
    protocolVersionHeader: r.headers['mcp-protocol-version']
  })
  if (route.kind !== 'legacy') return undefined
  const version = r.headers['mcp-protocol-version']
  if (version !== undefined && !SUPPORTED_PROTOCOL_VERSIONS.includes(version)) return undefined
  const { method, params } = r.body as { method: string, params: unknown }
  const parsed = specTypeSchemas.CallToolRequest['~standard'].validate({ method, params })
  if (parsed instanceof Promise || parsed.issues) return undefined
  const p = parsed.value.params
  return { name: p.name, args: p.arguments }
}

const session = (b: Record<string, unknown>, headers: Headers = {}): Req => ({
  method: 'POST',
  headers: { ...SESSION_HEADERS, ...headers },
  body: { jsonrpc: '2.0', id: 1, method: 'tools/call', ...b }
})

t.test('session revision: the table', async t => {
  for (const [what, r] of [
    ['name and arguments', session({ params: { name: 'whoami', arguments: { a: 1 } } })],
    ['no arguments', session({ params: { name: 'whoami' } })],
    ['no MCP-Protocol-Version (the transport assumes its default)',
      session({ params: { name: 't' } }, { 'mcp-protocol-version': undefined as unknown as string })],
    ['an older supported revision', session({ params: { name: 't' } }, { 'mcp-protocol-version': '2025-06-18' })]
  ] as Array<[string, Req]>) {
    r.headers = Object.fromEntries(Object.entries(r.headers).filter(([, v]) => v !== undefined))
    const fast = plainSessionCall(asRequest(r))
    const view = sdkSessionView(r)
    t.ok(fast, `${what}: the fast path answers`)
    t.same(view && { name: view.name, args: view.args }, fast && { name: fast.name, args: fast.args },
      `${what}: the SDK parses the same call`)
  }
  for (const [what, r] of [
    ['any _meta', session({ params: { name: 't', _meta: {} } })],
    ['a task', session({ params: { name: 't', task: { ttl: 1 } } })],
    ['an Accept without event streams', session({ params: { name: 't' } }, { accept: 'application/json' })],
    ['an Accept without JSON', session({ params: { name: 't' } }, { accept: 'text/event-stream' })],
    ['no Accept', session({ params: { name: 't' } }, { accept: undefined as unknown as string })],
    ['an unsupported revision', session({ params: { name: 't' } }, { 'mcp-protocol-version': '2024-01-01' })],
    ['the stateless revision', session({ params: { name: 't' } }, { 'mcp-protocol-version': STATELESS_REVISION })],
    ['an id past 2^53', session({ id: 2 ** 53, params: { name: 't' } })],
    ['a member beside the four', session({ params: { name: 't' }, x: 1 })],
    ['arguments that are an array', session({ params: { name: 't', arguments: [1] } })],
    ['a GET', { ...session({ params: { name: 't' } }), method: 'GET' }]
  ] as Array<[string, Req]>) {
    r.headers = Object.fromEntries(Object.entries(r.headers).filter(([, v]) => v !== undefined))
    t.equal(plainSessionCall(asRequest(r)), undefined, `${what}: left to the SDK's transport`)
  }
})

t.test('session revision, generated: every call the fast path takes, the SDK parses alike', async t => {
  const request = body.chain(b => fc.record({
    method: usually(fc.constant('POST'), fc.constant('GET')),
    // On a session, a call carries no envelope: mostly none here.
    body: fc.constant(b).map(x => {
      const p = x.params as { _meta?: unknown } | undefined
      return typeof p === 'object' && p !== null && !Array.isArray(p) && p._meta === ENVELOPE
        ? { ...x, params: { ...p, _meta: undefined } }
        : x
    }).map(x => JSON.parse(JSON.stringify(x)) as typeof x),
    headers: fc.record({
      accept: header(fc.constant('application/json, text/event-stream'), 'application/json'),
      'mcp-protocol-version': header(fc.constantFrom(...SUPPORTED_PROTOCOL_VERSIONS), STATELESS_REVISION, '1999-01-01')
    }).map(defined)
  }))
  let taken = 0
  fc.assert(fc.property(request as fc.Arbitrary<Req>, r => {
    const fast = plainSessionCall(asRequest(r))
    if (!fast) return true
    taken++
    const view = sdkSessionView(r)
    return view !== undefined && view.name === fast.name && JSON.stringify(view.args) === JSON.stringify(fast.args) &&
      (r.body as { id: unknown }).id === fast.id &&
      Object.keys((r.body as { params: object }).params).every(k => k === 'name' || k === 'arguments')
  }), { numRuns: 1_000 })
  t.ok(taken >= 25, `the generator reaches the fast path (${taken} taken)`)
})
