// Webhooks as receivers' libraries see them: real HTTPS deliveries verified with the Standard Webhooks
// and Svix libraries' default constructors and by hand, through a secret rotation, plus test deliveries and replay.
import { createHmac } from 'node:crypto'
import type { ServerResponse } from 'node:http'
import t, { type Test } from 'tap'
import { Ajv } from 'ajv'
import addFormats from 'ajv-formats'
import { Webhook as StandardWebhook } from 'standardwebhooks'
import { Webhook as SvixWebhook } from 'svix'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { recordProblems } from '../../../../../plugins/domain/records/validate.js'
import { encryptSecret } from '../../../../../plugins/domain/webhooks/signing.js'
import { EMITTED_TOPICS, PLANNED_TOPICS } from '../../../../../lib/topics.js'
import { bearer, build, eventually, install, type Installed } from '../../../../support/helper.js'
import { cli } from '../../../../support/processes.js'
import { selfSigned, startReceiver, type Received } from '../../../../support/receiver.js'
import { bill, invoice, nth } from '../../../../support/records.js'
import { hooksUrl as hooks, publish, receiverEnv, subscribe } from '../../../../support/webhooks.js'
import { secretOverlapEnded } from '../../../../support/queue-time.js'

// One app for the file: a failed delivery is retried once at once and then has failed for good; a replay takes at
// most 3; four slots and two per tenant, so that fair delivery shows with a few endpoints.
const app = await build(t, receiverEnv(selfSigned().caFile, {
  WEBHOOK_RETRY_SCHEDULE: '0',
  WEBHOOK_REPLAY_LIMIT: '3',
  WEBHOOK_CONCURRENCY: '4',
  WEBHOOK_TENANT_MAX_IN_FLIGHT: '2'
}))

const headersOf = (r: Received): Record<string, string> =>
  Object.fromEntries(Object.entries(r.headers).map(([k, v]) => [k, String(v)]))

/** Which of these secrets verify the delivery, with each library and the spec header by hand. */
function verifiers (r: Received, secret: string) {
  const tryIt = (f: () => unknown): boolean => { try { f(); return true } catch { return false } }
  return {
    standardwebhooks: tryIt(() => new StandardWebhook(secret).verify(r.body, headersOf(r))),
    svix: tryIt(() => new SvixWebhook(secret).verify(r.body, headersOf(r))),
    spec: r.headers['x-service-signature'] === createHmac('sha256', secret).update(r.body).digest('hex')
  }
}
const ALL = { standardwebhooks: true, svix: true, spec: true }

t.test('Standard Webhooks and Svix verify deliveries with their default constructors, through a rotation',
  async t => {
    const receiver = await startReceiver(t)
    const i = await install(app)
    const sub = await subscribe(app, i, { target_url: receiver.url })
    t.match(sub.signing_secret, /^whsec_[A-Za-z0-9+/]{43}=$/, 'whsec_ and 32 bytes in standard base64')

    await publish(app, i)
    const [first] = await receiver.waitFor(1)
    t.same(verifiers(first!, sub.signing_secret), ALL, 'before a rotation')

    const rotate = (query: string) => app.inject({
      method: 'POST', url: `${hooks(i)}/${sub.id}/rotate-secret${query}`, headers: bearer(i.accessToken)
    })
    const rotated = await rotate('')
    t.equal(rotated.statusCode, 200, rotated.body)
    const { signing_secret: next, previous_secret_expires_at: until } = rotated.json()
    t.not(next, sub.signing_secret)
    const hours = (Date.parse(until) - Date.now()) / 3_600_000
    t.ok(hours > 23.9 && hours <= 24, 'the default overlap is 24 h')

    await publish(app, i)
    const during = (await receiver.waitFor(2))[1]!
    t.same(verifiers(during, sub.signing_secret), ALL, 'during the overlap a receiver with the old secret verifies')
    t.same(verifiers(during, next), { ...ALL, spec: false },
      '... and one with the new secret, through webhook-signature (X-Service-Signature keeps the old secret)')
    t.equal(String(during.headers['webhook-signature']).split(' ').length, 2, 'two signatures, space-separated')

    // A second rotation with a short overlap: after it, only the newest secret verifies.
    const short = await rotate('?overlap_hours=0.0005')
    const newest = short.json().signing_secret as string
    const left = Date.parse(short.json().previous_secret_expires_at) - Date.now()
    t.ok(left <= 2_000, `0.0005 h: an overlap of 1.8 s, in whole seconds 2 (${left} ms left)`)
    // The overlap runs out: its end moved into the past rather than waited for.
    await secretOverlapEnded(app.db, sub.id)
    await publish(app, i)
    const after = (await receiver.waitFor(3))[2]!
    t.same(verifiers(after, newest), ALL, 'after the overlap the new secret verifies everywhere')
    t.same(verifiers(after, next), { standardwebhooks: false, svix: false, spec: false }, 'and the old one nowhere')

    const none = await rotate('?overlap_hours=0')
    t.equal(none.json().previous_secret_expires_at, null, 'overlap 0: the old secret stops at once')
    t.equal((await rotate('?overlap_hours=169')).statusCode, 400, 'at most 168 hours')
    const other = await install(app)
    const foreign = await app.inject({
      method: 'POST', url: `${hooks(other)}/${sub.id}/rotate-secret`, headers: bearer(other.accessToken)
    })
    t.equal(foreign.statusCode, 404, "another app's subscription is not found")
  })

t.test('a subscription from before Standard Webhooks keeps verifying as it did', async t => {
  const receiver = await startReceiver(t)
  const i = await install(app)
  const sub = await subscribe(app, i, { target_url: receiver.url })
  // As migration 005 finds a row made earlier: a base64url secret, marked legacy.
  const legacy = 'whsec_' + 'Ab-_'.repeat(10) + 'xyz'
  await app.db.query("update webhook_subscriptions set secret_ciphertext = $2, signing_scheme = 'legacy' where id = $1",
    [sub.id, encryptSecret(app.config.webhookSecretKey, sub.id, legacy)])
  const event = await publish(app, i)
  const [r] = await receiver.waitFor(1)
  const ts = String(r!.headers['webhook-timestamp'])
  const keyedWithString = createHmac('sha256', legacy).update(`${event.id}.${ts}.`).update(r!.body).digest('base64')
  t.equal(r!.headers['webhook-signature'], `v1,${keyedWithString}`, 'webhook-signature keyed with the whole string')
  t.equal(verifiers(r!, legacy).spec, true, 'X-Service-Signature unchanged')
})

t.test('test deliveries, through REST and MCP', async t => {
  const receiver = await startReceiver(t)
  const i = await install(app)
  const sub = await subscribe(app, i, { target_url: receiver.url })
  const sent = await app.inject({ method: 'POST', url: `${hooks(i)}/${sub.id}/test`, headers: bearer(i.accessToken) })
  t.equal(sent.statusCode, 202, sent.body)
  t.match(sent.json(), { delivery_id: /^dlv_/, event_id: /^evt_/, status: 'pending' })
  const [r] = await receiver.waitFor(1)
  t.equal(r!.headers['x-service-topic'], 'webhook.test')
  t.same(verifiers(r!, sub.signing_secret), ALL, 'signed like any delivery')
  t.match(JSON.parse(r!.body.toString()), { topic: 'webhook.test', data: { subscription_id: sub.id } })
  const log = await eventually(async () => (await app.inject({
    method: 'GET', url: `${hooks(i)}/${sub.id}/deliveries`, headers: bearer(i.accessToken)
  })).json().attempts, { until: (a: unknown[]) => a.length === 1 })
  t.match(log[0], { delivery_id: sent.json().delivery_id, topic: 'webhook.test', response_status: 200 })

  const other = await install(app)
  const foreign = await app.inject({
    method: 'POST', url: `${hooks(other)}/${sub.id}/test`, headers: bearer(other.accessToken)
  })
  t.equal(foreign.statusCode, 404, "another app's subscription is not found")

  const client = await mcpClient(t, i)
  const viaMcp = await client.callTool({ name: 'send_test_webhook', arguments: { subscription_id: sub.id } })
  t.match(viaMcp.structuredContent, { delivery_id: /^dlv_/, status: 'pending' }, 'the MCP tool does the same')
  await receiver.waitFor(2)
  const refused = await client.callTool({ name: 'send_test_webhook', arguments: { subscription_id: 'whs_nope' } })
  t.equal(refused.isError, true, 'an unknown subscription is a tool error')
})

/** The app's port: it listens from the first test that needs a socket (MCP, the CLI) to the end of the file. */
let port: number | undefined
async function listening (): Promise<number> {
  if (port === undefined) {
    await app.listen({ port: 0, host: '127.0.0.1' })
    port = (app.server.address() as { port: number }).port
  }
  return port
}

async function mcpClient (t: Test, i: Installed) {
  const port = await listening()
  const client = new Client({ name: 'tap', version: '1.0.0' })
  await client.connect(new StreamableHTTPClientTransport(new URL(`http://127.0.0.1:${port}/mcp`),
    { requestInit: { headers: bearer(i.accessToken) } }))
  t.teardown(() => client.close())
  return client
}

t.test('replay: failed deliveries again, idempotent, bounded, through REST and MCP', async t => {
  const receiver = await startReceiver(t, (_r, res) => { res.statusCode = 500; res.end('down') })
  // One retry at once, then the delivery has failed for good; one replay takes at most 3 (the file's settings).
  const i = await install(app)
  const sub = await subscribe(app, i, { target_url: receiver.url })
  const since = new Date(Date.now() - 1000).toISOString()
  for (let n = 0; n < 4; n++) await publish(app, i, invoice(nth('inv', n)))
  await eventually(async () => (await app.db.query<{ n: number }>(
    "select count(*)::int as n from webhook_deliveries where subscription_id = $1 and status = 'failed'", [sub.id]
  ))[0]!.n, { until: n => n === 4, what: 'four deliveries failed for good' })
  receiver.respond = (_r, res) => res.end('ok')
  const before = receiver.received.length

  const replay = (body: object, key?: string) => app.inject({
    method: 'POST',
    url: `${hooks(i)}/${sub.id}/replay`,
    headers: { ...bearer(i.accessToken), ...(key ? { 'idempotency-key': key } : {}) },
    payload: body
  })
  const first = await replay({ since }, 'k1')
  t.equal(first.statusCode, 202, first.body)
  t.match(first.json(), { replayed: 3, truncated: true, status: 'failed', since }, 'bounded: 3 of the 4')
  t.same((await replay({ since }, 'k1')).json(), first.json(), 'the same key: the first answer, nothing more')
  t.equal((await replay({ since, status: 'all' }, 'k1')).statusCode, 409, 'the same key with other parameters')
  await receiver.waitFor(before + 3)

  const client = await mcpClient(t, i)
  const rest = await client.callTool({
    name: 'replay_webhook_deliveries', arguments: { subscription_id: sub.id, since }
  })
  t.match(rest.structuredContent, { replayed: 1, truncated: false }, `the MCP tool replays the one left ${
    JSON.stringify(rest.content)}`)
  await receiver.waitFor(before + 4)
  const bodies = receiver.received.slice(before).map(r => JSON.parse(r.body.toString()).data.id).sort()
  t.same(bodies, ['inv_00000', 'inv_00001', 'inv_00002', 'inv_00003'], 'each failed event arrived once more')
  t.equal((await replay({ since: new Date().toISOString(), until: since })).statusCode, 400, 'since after until')
  const other = await install(app)
  const foreign = await app.inject({
    method: 'POST', url: `${hooks(other)}/${sub.id}/replay`, headers: bearer(other.accessToken), payload: { since }
  })
  t.equal(foreign.statusCode, 404, "another app's subscription is not found")
})

t.test('the event catalog: every topic with its schema, and what is delivered validates against it', async t => {
  const receiver = await startReceiver(t)
  const catalog = await app.inject({ method: 'GET', url: '/public/v1/event-types' })
  t.equal(catalog.statusCode, 200, 'no token needed: it is documentation')
  const types = catalog.json().event_types as Array<{ name: string, status: string, payload_schema: object }>
  t.same(types.map(e => `${e.name}:${e.status}`), [
    ...EMITTED_TOPICS.map(name => `${name}:emitted`), 'webhook.test:emitted',
    ...PLANNED_TOPICS.map(name => `${name}:planned`)
  ])
  const doc = (await app.inject({ method: 'GET', url: '/public/v1/openapi.json' })).json()
  // The document keeps the example beside the schema (the media type's `example`), where the reference page shows it,
  // names the records as components, and writes a const as the single-value enum that OpenAPI tools read.
  const inlined = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(inlined)
    if (typeof node !== 'object' || node === null) return node
    const { $ref, ...rest } = node as Record<string, unknown>
    const named = typeof $ref === 'string' ? doc.components.schemas[$ref.replace('#/components/schemas/', '')] : {}
    return Object.fromEntries(Object.entries({ ...named, ...rest })
      .map(([k, v]) => [k, k === 'examples' ? v : inlined(v)]))
  }
  const asOpenApi = (node: unknown): unknown => {
    if (Array.isArray(node)) return node.map(asOpenApi)
    if (typeof node !== 'object' || node === null) return node
    return Object.fromEntries(Object.entries(node).map(([k, v]) =>
      k === 'const' ? ['enum', [v]] : [k, k === 'examples' ? v : asOpenApi(v)]))
  }
  for (const type of types.filter(e => e.status === 'emitted')) {
    const media = doc.webhooks[type.name].post.requestBody.content['application/json']
    t.same(inlined({ ...media.schema, examples: [media.example] }), asOpenApi(type.payload_schema),
      `${type.name}: the same schema and example as the OpenAPI webhooks section`)
  }

  const ajv = new Ajv({ strict: false })
  addFormats.default(ajv)
  const validators = Object.fromEntries(types.map(e => [e.name, ajv.compile(e.payload_schema)]))
  const i = await install(app)
  const sub = await subscribe(app, i, { topics: ['invoice.paid', 'bill.created'], target_url: receiver.url })
  await publish(app, i, invoice({ id: 'inv_9' }))
  await publish(app, i, bill({ id: 'b_1' }), 'bill.created')
  await app.inject({ method: 'POST', url: `${hooks(i)}/${sub.id}/test`, headers: bearer(i.accessToken) })
  for (const r of await receiver.waitFor(3)) {
    const body = JSON.parse(r.body.toString())
    const valid = validators[body.topic]!(body)
    t.ok(valid, `${body.topic} validates: ${JSON.stringify(validators[body.topic]!.errors)}`)
  }

  const client = await mcpClient(t, i)
  const viaMcp = await client.callTool({ name: 'list_event_types', arguments: {} })
  t.same(viaMcp.structuredContent, catalog.json(), 'the MCP tool answers the same catalog')
})

t.test('the delivery log: what was sent and what came back, a page at a time', async t => {
  const receiver = await startReceiver(t, (_r, res) => {
    res.writeHead(503, { 'x-receiver': 'busy', 'retry-after': '1' }).end('x'.repeat(5000))
  })
  const i = await install(app)
  const sub = await subscribe(app, i, { target_url: receiver.url })
  for (let n = 0; n < 3; n++) await publish(app, i, invoice(nth('inv', n)))
  const page = (query: string) => app.inject({
    method: 'GET', url: `${hooks(i)}/${sub.id}/deliveries${query}`, headers: bearer(i.accessToken)
  })
  await eventually(async () => (await page('?limit=200')).json().attempts.length, { until: n => n === 6 })
  const first = (await page('?limit=4')).json()
  t.equal(first.attempts.length, 4)
  t.type(first.next_cursor, 'string')
  const second = (await page(`?limit=4&cursor=${first.next_cursor}`)).json()
  t.equal(second.attempts.length, 2, 'the rest')
  t.equal(second.next_cursor, null, 'and no more')
  const ids = [...first.attempts, ...second.attempts].map((a: { id: string }) => a.id)
  t.equal(new Set(ids).size, 6, 'no attempt twice')

  const a = first.attempts[0]
  t.equal(a.response_status, 503)
  t.equal(a.error_class, 'http_status')
  t.equal(a.response_headers['x-receiver'], 'busy', 'the answer\'s headers')
  t.equal(a.response_body.length, 4096, 'the first 4 KiB of the answer')
  t.match(a.request_headers, {
    'x-service-topic': 'invoice.paid', 'webhook-id': a.event_id, 'content-type': 'application/json'
  })
  t.notMatch(JSON.stringify(a), sub.signing_secret.slice(6), 'never the secret')
  const refusal = {
    error: 'invalid_cursor',
    message: 'The cursor is not one this listing gave: pass next_cursor unchanged, with the same order.'
  }
  t.strictSame((await page('?cursor=nonsense')).json(), refusal, 'a cursor this API did not give')
  t.strictSame((await page(`?cursor=${first.next_cursor.slice(0, -2)}`)).json(), refusal, 'a truncated cursor')
  const other = await subscribe(app, i, { target_url: receiver.url })
  const ofOther = await app.inject({
    method: 'GET', url: `${hooks(i)}/${other.id}/deliveries?cursor=${first.next_cursor}`, headers: bearer(i.accessToken)
  })
  t.equal(ofOther.statusCode, 400, 'a cursor of another subscription\'s log')
  t.strictSame(ofOther.json(), refusal)
})

t.test('local development: the refusal names the variables, and events trigger publishes a sample', async t => {
  const receiver = await startReceiver(t)
  // A second app: the refusal needs private targets refused, the opposite of what the file's deliveries need. No
  // worker: on Postgres both apps share one database, and this one's worker would refuse the local target.
  const strict = await build(t, { WEBHOOK_WORKER: 'false' })
  const i = await install(strict)
  const refused = await strict.inject({
    method: 'POST',
    url: hooks(i),
    headers: bearer(i.accessToken),
    payload: { topics: ['invoice.paid'], target_url: receiver.url }
  })
  t.equal(refused.statusCode, 400)
  t.match(refused.json().message, /WEBHOOK_ALLOW_PRIVATE_TARGETS=true .*WEBHOOK_CA_FILE/, 'says how to allow it')

  const j = await install(app)
  await subscribe(app, j, { target_url: receiver.url })
  const port = await listening()
  // Not execFileSync: the service answering the command runs on this very event loop.
  const { execFile } = await import('node:child_process')
  const { promisify } = await import('node:util')
  const { stdout: out } = await promisify(execFile)(...cli('events',
    'trigger', 'invoice.paid', '--org', j.orgRefId, '--entity', j.entityRefId, '--url', `http://127.0.0.1:${port}`), {
    env: { ...process.env, DATA_DIR: app.config.dataDir, DATABASE_URL: '', NODE_ENV: 'development' },
    encoding: 'utf8'
  })
  t.match(out, /^202 \{"id":"evt_[\w-]+","deliveries":1\}/, 'published with the development events token')
  const [r] = await receiver.waitFor(1)
  const sample = JSON.parse(r!.body.toString())
  t.match(sample, { topic: 'invoice.paid', data: { id: String } })
  t.same(recordProblems('invoice', sample.data, '/data'), [], 'the sample of the topic: a valid invoice')
})

// Last: its black hole's attempts would otherwise hang until their 15 s time-out.
t.test('fair delivery: a tenant of endpoints that never answer does not hold back another tenant', async t => {
  const held: ServerResponse[] = []
  const hole = await startReceiver(t, (_r, res) => { held.push(res) })
  const healthy = await startReceiver(t)
  // Four slots and two per tenant (the file's settings): without the tenant cap the dark tenant's hanging attempts
  // would hold all four until their time-out.
  const dark = await install(app)
  const darkSubs = []
  for (let n = 0; n < 8; n++) darkSubs.push(await subscribe(app, dark, { target_url: `${hole.url}?sub=${n}` }))
  for (let n = 0; n < 3; n++) await publish(app, dark, invoice(nth('inv', n)))
  await hole.waitFor(2)
  const light = await install(app)
  await subscribe(app, light, { target_url: healthy.url })
  await publish(app, light)
  const [arrived] = await healthy.waitFor(1)
  t.ok(arrived, 'the other tenant\'s delivery arrived')
  // While the dark tenant's attempts still hang: in flight at the worker, their connections open, none recorded.
  const recorded = await app.db.query<{ n: number }>(
    'select count(*)::int as n from webhook_attempts where subscription_id = any($1::text[])',
    [darkSubs.map(s => s.id)])
  t.ok(held.length > 0 && held.every(res => !res.writableEnded && !res.req.socket.destroyed),
    'while the dark tenant\'s attempts still hang, their connections open')
  t.ok(app.webhooks.workerStatus()!.inFlight >= held.length, 'the worker still has them in flight')
  t.equal(recorded[0]!.n, 0, 'and no attempt of the dark tenant has ended')
  t.equal(hole.received.length, 2, 'the dark tenant held its cap, two slots of four, not all of them')
  // The dark tenant's other deliveries are cancelled, so that none is left to hang when the app closes.
  for (const sub of darkSubs) {
    await app.inject({ method: 'DELETE', url: `${hooks(dark)}/${sub.id}`, headers: bearer(dark.accessToken) })
  }
  for (const res of held) res.end()
})
