import fc from 'fast-check'
import t from 'tap'
import { classifyInboundRequest } from '@modelcontextprotocol/server'
import {
  plainCallSpeaksStateless,
  PROTOCOL_REVISIONS,
  SESSION_REVISION,
  speaksStateless,
  STATELESS_REVISION
} from '../../../../../plugins/domain/mcp/revisions.js'

const ENVELOPE = {
  'io.modelcontextprotocol/protocolVersion': STATELESS_REVISION,
  'io.modelcontextprotocol/clientInfo': { name: 'unit', version: '1' },
  'io.modelcontextprotocol/clientCapabilities': {}
}
const call = (meta?: unknown, method = 'tools/call') =>
  ({ jsonrpc: '2.0', id: 1, method, params: { name: 't', ...(meta === undefined ? {} : { _meta: meta }) } })

t.test('the revisions, oldest first', async t => {
  t.same([...PROTOCOL_REVISIONS], ['2025-11-25', '2026-07-28'])
  t.same([SESSION_REVISION, STATELESS_REVISION], PROTOCOL_REVISIONS)
})

t.test('speaksStateless: which requests the stateless handler answers', async t => {
  const modern = { 'mcp-protocol-version': STATELESS_REVISION, 'mcp-method': 'tools/call', 'mcp-name': 't' }
  const rows: Array<[string, string, unknown, Record<string, string | string[]>, boolean]> = [
    ['a well-formed stateless call', 'POST', call(ENVELOPE), modern, true],
    ['an envelope the SDK refuses (it answers the error)', 'POST',
      call({ ...ENVELOPE, 'io.modelcontextprotocol/clientInfo': 1 }), modern, true],
    ['headers that disagree with the body (the SDK answers that too)', 'POST', call(ENVELOPE),
      { ...modern, 'mcp-method': 'tools/list' }, true],
    ['a modern header without an envelope', 'POST', call(), modern, true],
    ['a later revision in the header', 'POST', call(), { 'mcp-protocol-version': '2027-01-01' }, true],
    ['a session call', 'POST', call(), { 'mcp-protocol-version': SESSION_REVISION }, false],
    ['a session call without headers', 'POST', call(), {}, false],
    ['initialize', 'POST',
      { jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: SESSION_REVISION } }, {}, false],
    ['a GET (the session event stream)', 'GET', undefined, modern, false],
    ['a DELETE', 'DELETE', undefined, modern, false],
    ['a notification of the session revision', 'POST', { jsonrpc: '2.0', method: 'notifications/initialized' }, {},
      false],
    ['a batch', 'POST', [call(), call()], {}, false],
    ['a repeated version header, with no envelope', 'POST', call(),
      { 'mcp-protocol-version': [STATELESS_REVISION, STATELESS_REVISION] }, false],
    ['an envelope claim alone decides, whatever the header', 'POST', call(ENVELOPE), {}, true]
  ]
  for (const [what, method, body, headers, expected] of rows) {
    t.equal(speaksStateless(method, body, headers), expected, what)
  }
})

t.test('plainCallSpeaksStateless agrees with the SDK\'s classifier, cached or not', async t => {
  const meta = fc.oneof(
    fc.constant(ENVELOPE as Record<string, unknown>),
    fc.record({
      'io.modelcontextprotocol/protocolVersion': fc.constantFrom(STATELESS_REVISION, SESSION_REVISION, '2027-01-01'),
      'io.modelcontextprotocol/clientInfo': fc.oneof(fc.constant({ name: 'u', version: '1' }), fc.jsonValue()),
      'io.modelcontextprotocol/clientCapabilities': fc.oneof(fc.constant({}), fc.jsonValue())
    }, { requiredKeys: [] }),
    fc.dictionary(fc.string({ maxLength: 6 }), fc.jsonValue({ maxDepth: 2 }))
  )
  const name = fc.oneof(fc.constantFrom('t', 'whoami'), fc.string({ maxLength: 6 }))
  const sdk = (n: string, m: Record<string, unknown>) => {
    const route = classifyInboundRequest({
      httpMethod: 'POST',
      body: { jsonrpc: '2.0', id: 0, method: 'tools/call', params: { name: n, arguments: {}, _meta: m } },
      protocolVersionHeader: STATELESS_REVISION,
      mcpMethodHeader: 'tools/call',
      mcpNameHeader: n
    })
    return route.kind === 'modern' && route.messageKind === 'request' &&
      route.classification.revision === STATELESS_REVISION
  }
  fc.assert(fc.property(name, meta, (n, m) => {
    const expected = sdk(n, m)
    // Twice: the second answer comes from the cache.
    return plainCallSpeaksStateless(n, m) === expected && plainCallSpeaksStateless(n, m) === expected
  }), { numRuns: 200 })
  t.pass('the same verdict as the classifier, first and second time')
  t.ok(plainCallSpeaksStateless('t', ENVELOPE))
  const long = { ...ENVELOPE, 'io.modelcontextprotocol/clientInfo': { name: 'x'.repeat(2_000), version: '1' } }
  t.equal(plainCallSpeaksStateless('t', long), sdk('t', long), 'an envelope too long to remember is classified anew')
  t.equal(plainCallSpeaksStateless('t', long), sdk('t', long))
})
