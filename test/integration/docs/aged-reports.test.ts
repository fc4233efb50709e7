// docs/records.md shows an aged receivables answer and the MCP tool call that gives the same JSON, both for the
// README's sandbox tenant seeded as of 2026-11-27: this file seeds that tenant with the sandbox's own events (the
// events `sandbox seed` sends) and holds both samples to what the service answers.
import t from 'tap'
import { sandboxEvents } from '../../../cli/sandbox.js'
import { block } from '../../support/docs.js'
import { bearer, build, install } from '../../support/helper.js'
import { publishRaw } from '../../support/webhooks.js'

const AS_OF = '2026-11-27'
const app = await build(t, { WEBHOOK_WORKER: 'false' })
const i = await install(app, { orgRefId: 'org_demo', entityRefId: 'ent_demo', scopes: ['invoices:read', 'bills:read'] })

// `sandbox seed --org org_demo --entity ent_demo --as-of 2026-11-27`: its default sizes, in batches of 100.
const events = [...sandboxEvents({
  org: 'org_demo', entity: 'ent_demo', customers: 50, invoices: 300, bills: 150, asOf: AS_OF
})]
for (let k = 0; k < events.length; k += 100) {
  const res = await publishRaw(app, events.slice(k, k + 100))
  if (res.statusCode !== 202) throw new Error(`publish: ${res.statusCode} ${res.body}`)
}

/** The JSON blocks of the section, after its commands: the answer, and the tool call. */
const shown = (n: number) =>
  JSON.parse(block(`docs/records.md › Aged receivables and payables #${n}`)) as Record<string, any>
const answer = shown(2)
const call = shown(3)

/**
 * The answer without its cursor's text, which is signed with the service's key (another in every deployment, and in
 * every run of this file): the answer shown must have one where the service gives one.
 */
const withoutCursor = (a: Record<string, any>) => ({ ...a, next_cursor: typeof a.next_cursor })

t.test('the answer shown is the service\'s, for the sandbox as of 2026-11-27', async t => {
  const res = await app.inject({
    url: `/public/v1/orgs/org_demo/entities/ent_demo/reports/aged-receivables?as_of=${AS_OF}&currency=EUR&limit=3`,
    headers: bearer(i.accessToken)
  })
  t.equal(res.statusCode, 200)
  t.same(withoutCursor(res.json()), withoutCursor(answer), JSON.stringify(res.json(), null, 2))
})

t.test('the tool call shown gives the same JSON as structuredContent', async t => {
  const res = await app.inject({
    method: 'POST',
    url: '/mcp',
    headers: {
      ...bearer(i.accessToken),
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream',
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': 'tools/call',
      'mcp-name': call.params.name
    },
    payload: {
      ...call,
      params: {
        ...call.params,
        _meta: {
          'io.modelcontextprotocol/protocolVersion': '2026-07-28',
          'io.modelcontextprotocol/clientInfo': { name: 'docs', version: '1' },
          'io.modelcontextprotocol/clientCapabilities': {}
        }
      }
    }
  })
  t.equal(res.statusCode, 200, res.body)
  const got = res.json().result
  t.same(withoutCursor(got.structuredContent), withoutCursor(answer), 'the route\'s answer')
  t.same(got.content, [{ type: 'text', text: JSON.stringify(got.structuredContent) }], 'and as its one text content')
})
