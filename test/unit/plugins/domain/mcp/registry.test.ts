import { Type } from '@sinclair/typebox'
import t from 'tap'
import type { Principal } from '../../../../../plugins/domain/auth/access-state.js'
import { DatabaseUnavailableError } from '../../../../../plugins/infrastructure/db/types.js'
import { errors } from '../../../../../plugins/infrastructure/errors.js'
import { createRegistry, describeTool } from '../../../../../plugins/domain/mcp/registry.js'
import { READ_ONLY } from '../../../../../plugins/domain/common/tool-annotations.js'

const principal: Principal = Object.freeze({
  installId: 'ins_1',
  clientId: 'mga_1',
  appSlug: 'app',
  orgRefId: 'org_1',
  entityRefId: 'ent_1',
  scopes: Object.freeze(['invoices:read'])
})
const Input = Type.Object({ n: Type.Integer({ minimum: 1 }), at: Type.Optional(Type.String({ format: 'date-time' })) },
  { additionalProperties: false })
const Output = Type.Object({ doubled: Type.Integer() })
const definition = (name: string, extra: { public?: boolean, requiredScopes?: string[] } = {}) => ({
  name,
  title: name,
  description: `The ${name} tool.`,
  inputSchema: Input,
  outputSchema: Output,
  annotations: READ_ONLY,
  requiredScopes: [],
  public: false,
  tags: [],
  ...extra
})
const text = (r: { content: Array<{ text: string }> } | undefined) => JSON.parse(r!.content[0]!.text)

const registry = createRegistry()
let failure: unknown
registry.addTool(definition('double'), async ({ n }) => {
  if (failure) throw failure
  return { doubled: n * 2 }
})
registry.addTool(definition('open', { public: true }), async ({ n }) => ({ doubled: n }))
registry.addTool(definition('scoped', { requiredScopes: ['invoices:read', 'bills:read'] }),
  async () => ({ doubled: 0 }))

t.test('a call: the token, then the scopes, then the arguments (the REST order), then the handler', async t => {
  t.same(await registry.dispatch('double', { n: 2 }, principal),
    { content: [{ type: 'text', text: '{"doubled":4}' }], structuredContent: { doubled: 4 } })
  t.equal(await registry.dispatch('nope', {}, principal), undefined, 'no such tool: undefined, for the caller')

  const invalid = await registry.dispatch('double', { n: 0, x: 1 }, principal)
  t.equal(invalid!.isError, true)
  t.notOk('structuredContent' in invalid!, 'a tool error carries its body as text only')
  t.match(text(invalid), { error: 'validation_error', message: 'Invalid arguments for double.' })
  t.ok(text(invalid).details.every((d: { location: string }) => d.location === 'arguments'))
  t.match(text(await registry.dispatch('double', { n: 1, at: 'yesterday' }, principal)), { error: 'validation_error' },
    'date-time is a format the registry knows')
  t.same(text(await registry.dispatch('double', { n: 1, at: '2026-01-01T00:00:00Z' }, principal)), { doubled: 2 })
  t.match(text(await registry.dispatch('double', undefined, principal)), { error: 'validation_error' },
    'no arguments are an empty object, checked as one')

  t.same(text(await registry.dispatch('double', { n: 1 }, null)), errors.missingToolToken('double').body(),
    'a tenant tool without a token')
  t.same(text(await registry.dispatch('double', { n: 0, x: 1 }, null)), errors.missingToolToken('double').body(),
    'without a token, bad arguments are not looked at')
  t.same(text(await registry.dispatch('scoped', { x: 1 }, principal)),
    errors.insufficientScope(['invoices:read', 'bills:read'], ['bills:read']).body(),
    'without the scopes, bad arguments are not looked at (as a route answers 403 before validating its query)')
  t.same(text(await registry.dispatch('open', { n: 3 }, null)), { doubled: 3 }, 'a public tool without one')
  t.same(text(await registry.dispatch('scoped', { n: 1 }, principal)),
    errors.insufficientScope(['invoices:read', 'bills:read'], ['bills:read']).body())
})

t.test('what a handler throws', async t => {
  failure = errors.subscriptionNotFound()
  t.same(text(await registry.dispatch('double', { n: 1 }, principal)), errors.subscriptionNotFound().body())
  failure = new DatabaseUnavailableError('timeout', { cause: new Error('x') })
  t.same(text(await registry.dispatch('double', { n: 1 }, principal)), errors.serviceUnavailable().body())
  failure = new Error('a bug')
  await t.rejects(registry.dispatch('double', { n: 1 }, principal), { message: 'a bug' },
    'anything else is for the caller to turn into a protocol error')
  failure = undefined
})

t.test('registration rules', async t => {
  t.throws(() => registry.addTool(definition('double'), async () => ({ doubled: 0 })),
    { message: 'MCP tool double is already registered' })
  t.throws(() => registry.addTool({ ...definition('bad'), inputSchema: Type.String() } as never, async () => ({})),
    { message: 'MCP tool bad: its input and output schemas must be objects' })
  const before = registry.described()
  t.equal(registry.described(), before, 'tools/list is made once')
  registry.addTool(definition('later'), async () => ({ doubled: 0 }))
  t.not(registry.described(), before, 'and again when a tool is added')
  t.same(registry.described().map(d => d.name), ['double', 'open', 'scoped', 'later'])
})

t.test('what tools/list says of a tool: wire schemas, annotations with the title', async t => {
  const d = describeTool(definition('double'))
  t.same(d.annotations, { title: 'double', ...READ_ONLY })
  t.equal(d.inputSchema.type, 'object')
  t.same(Object.getOwnPropertySymbols(d.inputSchema), [], 'no TypeBox symbols on the wire')
  t.same(JSON.parse(JSON.stringify(d)), d, 'plain JSON')
})
