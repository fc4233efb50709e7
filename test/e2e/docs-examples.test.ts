// The documentation's examples, run as a reader pastes them: every fenced block of README.md and docs/ is either run
// here, as written, against a service started as the reader starts it (`npm start`, its own process), or says why
// not. What the test changes in a block is listed where it does it: BASE, set as the README tells a reader whose
// service listens elsewhere (every service here listens on a free port, never 3000, and the commands that call it
// find it only through BASE, as written), the database URL a reader fills in. A block added to the docs without a
// runner fails the first test. The walkthrough's PKCE steps run for every
// first character of a verifier in test/e2e/docs-pkce.test.ts.
import { existsSync, readFileSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { ROOT } from '../../lib/root.js'
import { RECORD_SAMPLES } from '../../schemas/records.js'
import {
  atBase, background, bash, block, BLOCKS, database, keyOf, service, steps, walkthrough, workDir
} from '../support/docs.js'
import { eventually, needsPostgres } from '../support/helper.js'
import { startReceiver } from '../support/receiver.js'

// Four services started with `npm start`, each walked through the README's steps: past tap's 120 s under load.
t.setTimeout(420_000)

/** The blocks this file runs, and why the others are not run. */
const RUN = 'run here'
const COVERAGE: Record<string, string> = {
  'README.md › marketplace-gateway #1': 'the run command: every service in this file starts with `npm start`',
  'README.md › marketplace-gateway #2': 'the test command: CI runs it (.ci/run), twice',
  'README.md › The whole journey by hand': RUN,
  'README.md › Layout': 'a folder map, not a command',
  'docs/architecture.md › Layout': 'a folder map, not a command',
  'README.md › Authorize on the reference page': 'needs a browser: test/e2e/reference-page.test.ts registers the ' +
    'same client and runs Authorize and Try it out in Chromium',
  'docs/mcp.md › With a token you already have': RUN,
  'docs/mcp.md › One token for the API and the MCP endpoint': 'the consent step of the README\'s journey, which ' +
    'this file runs with the same resource=$BASE/mcp (README.md › The whole journey by hand)',
  'docs/producers.md › Sending a change': RUN,
  'docs/producers.md › When a send is refused': 'a sample answer: the test sends the batch it describes and ' +
    'compares the answer with it, byte for byte',
  'docs/producers.md › Backfill': RUN,
  'docs/records.md › Routes and scopes': RUN,
  'docs/records.md › Invoice': 'a sample record: the test checks it is the schema\'s example (schemas/records.ts), ' +
    'which the service accepts as an event (test/integration)',
  'docs/records.md › Bill': 'a sample record: the test checks it is the schema\'s example (schemas/records.ts)',
  'docs/records.md › Customer': 'a sample record: the test checks it is the schema\'s example (schemas/records.ts)',
  'docs/records.md › Lists': RUN,
  'docs/records.md › Paging': RUN,
  'docs/records.md › Incremental sync': RUN,
  'docs/records.md › Single records and ETag': RUN,
  'docs/records.md › Money': RUN,
  'docs/records.md › Aged receivables and payables #1': RUN,
  'docs/records.md › Aged receivables and payables #2': 'a sample answer: test/integration/docs/aged-reports.test.ts ' +
    'seeds the same sandbox tenant and compares it with the service\'s answer',
  'docs/records.md › Aged receivables and payables #3': 'a tool call: test/integration/docs/aged-reports.test.ts ' +
    'sends it and compares its result with the answer shown',
  'docs/tooling.md › No import cycles: madge': RUN,
  'docs/webhook-delivery.md › Running workers apart from the API': RUN,
  'docs/webhooks.md › Subscribe': RUN,
  'docs/webhooks.md › What arrives': 'a sample body, not a command',
  'docs/webhooks.md › Verify, then acknowledge #1': 'docs/examples/webhook-receiver-standardwebhooks.mjs verbatim: ' +
    'test/integration/docs/webhook-receivers.test.ts runs it against real deliveries',
  'docs/webhooks.md › Verify, then acknowledge #2': 'docs/examples/webhook-receiver.mjs verbatim: ' +
    'test/integration/docs/webhook-receivers.test.ts runs it against real deliveries',
  'docs/webhooks.md › The local loop': RUN
}

/** POST /events as the accounting system does, with the development events token of the service's ./data. */
const publish = (base: string, dir: string, body: unknown): Promise<Response> => {
  const token = JSON.parse(readFileSync(join(dir, 'data', 'dev-secrets.json'), 'utf8')).EVENTS_TOKEN as string
  return fetch(`${base}/events`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify(body)
  })
}

t.test('every fenced block of the docs is run here, or says why not', async t => {
  t.same(BLOCKS.map(keyOf).filter(k => !(k in COVERAGE)), [], 'no block without a runner or a reason')
  t.same(Object.keys(COVERAGE).filter(k => !BLOCKS.some(b => keyOf(b) === k)), [], 'no runner without its block')
})

t.test('the README walkthrough, as written', async t => {
  const dir = workDir(t)
  const { base, port } = await service(t, dir, 'npm start')
  t.not(port, 3000, 'the service listens elsewhere than the default')
  // Only BASE changes: the commands that call the service get it from the walkthrough's own --url "$BASE".
  const ran = await bash(atBase(walkthrough, base), dir, {}, 180_000)
  t.equal(ran.code, 0, ran.stderr)
  const out = ran.stdout.split('\n')
  const json = (pattern: RegExp) => {
    const line = out.find(l => pattern.test(l))
    t.ok(line, `a line like ${pattern}`)
    return JSON.parse(line ?? '{}')
  }
  const app = json(/^\{"client_id":"app_/)
  t.match(app, { client_id: /^app_/, client_secret: /\S/, name: 'Demo App' }, '2. the app is registered')
  t.match(out.find(l => l.startsWith('https://example.com/callback?')), /[?&]code=[^&]+.*state=demo/, '3. consent')
  t.match(json(/^\{"access_token"/), { token_type: 'Bearer', refresh_token: /\S/, scope: 'invoices:read bills:read' },
    '4. tokens')
  t.match(json(/^\{"install_id"/), { client_id: app.client_id, org_ref_id: 'org_demo', entity_ref_id: 'ent_demo' },
    '5. /me')
  t.match(json(/"error":"insufficient_scope"/), { error: 'insufficient_scope' }, '5. customers:read not granted')
  t.match(json(/"error":"tenant_mismatch"/), { error: 'tenant_mismatch' }, '5. another tenant is refused')
  t.match(json(/^\{"jsonrpc":"2.0","id":1,"result"/),
    { result: { structuredContent: { client_id: app.client_id, org_ref_id: 'org_demo' } } },
    '5. the same token on the MCP endpoint (issued with resource=$BASE/mcp)')
  const page = json(/^\{"invoices":\[/) as { invoices: Array<{ id: string }>, next_cursor: string | null }
  t.equal(page.invoices.length, 5, '6. the first page of the sandbox\'s invoices')
  t.type(page.next_cursor, 'string', '6. with a cursor to the next page')
  t.match(json(/"signing_secret"/), { topics: ['invoice.paid'], signing_secret: /^whsec_/ }, '7. subscribed')
  t.match(json(/^\{"id":"evt_/), { id: /^evt_/, deliveries: 1 }, '7. the event is accepted, for the subscription')
  t.match(json(/^\{"id":"inv_demo_1"/), { status: 'paid', amount_due: '0.00' }, '7. the install reads the invoice')
  t.match(json(/^\{"subscriptions":\[/), { subscriptions: [{ Topics: ['invoice.paid'], IsActive: true }] },
    '7. the listing')
  t.equal(out.filter(l => l.startsWith('{"access_token"')).length, 2, '8. the refresh gave new tokens')
  const last = out.filter(l => l.startsWith('{')).slice(-4).map(l => JSON.parse(l))
  t.match(last, [
    { client_id: app.client_id, api_key_enabled: false },
    { error: 'invalid_client' },
    { client_id: app.client_id, api_key_enabled: true },
    { install_id: /\S/, client_id: app.client_id, org_ref_id: 'org_demo', entity_ref_id: 'ent_demo' }
  ], '9. the key off kills the token; on again, a new consent gives one that works, for the pages in docs/')
})

t.test('docs/records.md and docs/producers.md, as written, on the sandbox of the README', async t => {
  for (const kind of ['Invoice', 'Bill', 'Customer'] as const) {
    t.same(JSON.parse(block(`docs/records.md › ${kind}`)), RECORD_SAMPLES[kind.toLowerCase() as 'invoice'],
      `the ${kind.toLowerCase()} shown is the schema's example`)
  }

  const dir = workDir(t)
  const { base } = await service(t, dir, 'npm start')
  const auth = (token: string) => ({ headers: { authorization: `Bearer ${token}` } })
  const tenant = `${base}/public/v1/orgs/org_demo/entities/ent_demo`

  // The README's steps 1 to 4 for an install's token, and its step 6 for the sandbox's records; the records.md
  // blocks in order, in the same shell. Added by the test: the token, for the steps below.
  const readme = atBase(walkthrough.slice(0, walkthrough.indexOf('# 5.')), base) + steps(walkthrough, 6, 7)
  const reads = ['Routes and scopes', 'Lists', 'Paging', 'Single records and ETag', 'Aged receivables and payables #1']
    .map(section => `echo "--- ${section}"\n` + block(`docs/records.md › ${section}`)).join('')
  const ran = await bash(readme + reads + 'echo "$ACCESS_TOKEN" > access-token\n', dir, {}, 180_000)
  t.equal(ran.code, 0, ran.stderr.slice(-1000))
  const section = (name: string) => ran.stdout.split(`--- ${name}\n`)[1]!.split('\n--- ')[0]!.trim().split('\n')
  const accessToken = readFileSync(join(dir, 'access-token'), 'utf8').trim()

  const first = JSON.parse(section('Routes and scopes')[0]!) as { invoices: unknown[], next_cursor: string }
  t.equal(first.invoices.length, 2, 'Routes: two invoices')
  t.type(first.next_cursor, 'string', 'Routes: and a cursor')

  const [overdue, ofCustomer, bills] = section('Lists').map(l => JSON.parse(l))
  const today = new Date().toISOString().slice(0, 10)
  t.ok(overdue.invoices.length > 0, 'Lists: the sandbox has overdue invoices')
  t.ok(overdue.invoices.every((i: { status: string, due_date: string }) => i.status === 'authorised' &&
    i.due_date < today), 'Lists: each one authorised and due before today')
  t.ok(ofCustomer.invoices.length > 0, 'Lists: the customer of the first invoice has invoices')
  const changes = ofCustomer.invoices.map((i: { updated_at: string }) => i.updated_at)
  t.same(changes, [...changes].sort().reverse(), 'Lists: newest change first')
  t.ok(bills.bills.every((b: { updated_at: string }) => b.updated_at >= '2026-11-01T00:00:00.000Z'),
    'Lists: bills changed since 1 November')

  const listed = section('Paging')
  t.ok(listed.every(l => /^\S+ (draft|authorised|paid|voided) -?\d+(\.\d+)? [A-Z]{3}$/.test(l)),
    'Paging: a line per invoice')
  const ids = listed.map(l => l.split(' ')[0])
  t.equal(new Set(ids).size, ids.length, 'Paging: no invoice twice')
  t.ok(ids.length > 100, `Paging: past the first page of 100 (${ids.length} invoices)`)

  t.same(section('Single records and ETag'), ['304'], 'ETag: the second request is 304')

  const [receivables, payables] = section('Aged receivables and payables #1').map(l => JSON.parse(l))
  t.equal(receivables.as_of, today, 'Aged: as of today by default')
  t.ok(receivables.contacts.length === 3 && receivables.totals.length > 0, 'Aged: three customers, and the totals')
  t.ok(receivables.contacts.every((c: { customer: { id: string } }) => /^cus_/.test(c.customer.id)),
    'Aged: each a customer of the sandbox')
  t.ok(payables.contacts.length > 0 && [...payables.totals, ...payables.contacts]
    .every((c: { currency: string }) => c.currency === 'EUR'), 'Aged: what is owed to suppliers, in EUR')

  await t.test('the money example prints its exact sum', async t => {
    const snippet = block('docs/records.md › Money')
    const money = await bash('node --input-type=module -e "$SNIPPET"', dir, { SNIPPET: snippet })
    t.equal(money.code, 0, money.stderr)
    t.equal(money.stdout, '1303.35\n')
  })

  await t.test('the incremental sync fetches everything once, then only what changed', async t => {
    writeFileSync(join(dir, 'sync-invoices.mjs'), block('docs/records.md › Incremental sync'))
    const syncEnv = { BASE: base, ACCESS_TOKEN: accessToken, ORG_REF_ID: 'org_demo', ENTITY_REF_ID: 'ent_demo' }
    const sync = () => bash('node sync-invoices.mjs', dir, syncEnv)
    const once = await sync()
    t.equal(once.code, 0, once.stderr)
    t.match(once.stdout, new RegExp(`^${ids.length} changed, ${ids.length} invoices, up to \\S+Z\n$`), 'all of them')
    const again = await sync()
    t.match(again.stdout, new RegExp(`^0 changed, ${ids.length} invoices`), 'nothing changed since')
    // Added by the test: one invoice changes now, as the accounting system would send it.
    const invoice = { ...RECORD_SAMPLES.invoice, id: 'inv_docs_sync', updated_at: new Date().toISOString() }
    const sent = await publish(base, dir, {
      topic: 'invoice.created', org_ref_id: 'org_demo', entity_ref_id: 'ent_demo', data: invoice
    })
    t.equal(sent.status, 202)
    const after = await sync()
    t.match(after.stdout, new RegExp(`^1 changed, ${ids.length + 1} invoices, up to ${invoice.updated_at}\n$`),
      'the one invoice that changed')
  })

  await t.test('docs/producers.md: a change, a refused batch, and a backfill', async t => {
    // Added by the test: BASE, as the walkthrough sets it.
    const send = await bash(`BASE=${base}\n` + block('docs/producers.md › Sending a change'), dir)
    t.equal(send.code, 0, send.stderr)
    t.match(send.stdout, /^\{"id":"evt_[^"]+","deliveries":0\}\n$/, 'the change is accepted')
    const paid = await (await fetch(`${tenant}/invoices/inv_1042`, auth(accessToken))).json()
    t.match(paid, { id: 'inv_1042', status: 'paid', amount_due: '0.00' }, 'and the install reads it')

    // The batch the sample answer describes: its second invoice's total does not add up.
    const event = (data: object) =>
      ({ topic: 'invoice.updated', org_ref_id: 'org_demo', entity_ref_id: 'ent_demo', data })
    const refused = await publish(base, dir, [
      event(RECORD_SAMPLES.invoice),
      event({ ...RECORD_SAMPLES.invoice, id: 'inv_1043', total: '1303.50', amount_due: '1303.50' })
    ])
    t.equal(refused.status, 400)
    t.equal(await refused.text(), block('docs/producers.md › When a send is refused').trim(), 'the sample answer')

    // Added by the test: BASE, as the walkthrough sets it.
    const backfill = await bash(`BASE=${base}\n` + block('docs/producers.md › Backfill'), dir, {}, 60_000)
    t.equal(backfill.code, 0, backfill.stderr)
    t.match(backfill.stdout, /^imported 2 events from backfill\.ndjson \(lines 1–2\) in 1 batch, /, 'the import')
    t.ok(existsSync(join(dir, 'backfill.ndjson.position')), 'the position is kept beside the file')
    const bill = await (await fetch(`${tenant}/bills/bill_311`, auth(accessToken))).json()
    t.same(bill, RECORD_SAMPLES.bill, 'the backfilled bill is served as sent')
  })
})

t.test('docs/webhooks.md: subscribe, and the local loop with a real receiver', async t => {
  const dir = workDir(t)
  const loop = block('docs/webhooks.md › The local loop')
  const cert = await bash(steps(loop, 1, 2), dir)
  t.equal(cert.code, 0, `1. the certificate: ${cert.stderr.slice(-300)}`)
  const serviceLine = steps(loop, 2, 3).split('\n').filter(l => l && !l.startsWith('#')).join('\n')
  const { base } = await service(t, dir, serviceLine)

  const script = atBase(walkthrough.slice(0, walkthrough.indexOf('# 5.')), base) +
    block('docs/webhooks.md › Subscribe') +
    steps(loop, 3, 6) +
    // Added by the test: wait for the receiver to print the event, which the reader sees in the terminal.
    'for i in $(seq 1 300); do grep -q "^invoice.paid evt_" out.log && break; sleep 0.1; done\n' +
    steps(loop, 6) +
    // Added by the test: the install's access token, for the MCP snippet below on the same service.
    'echo "$ACCESS_TOKEN" > access-token\n'
  // The script's output (and the background receiver's, which inherits it) goes to out.log.
  const ran = await bash(`(\n${script}\n) > out.log 2>&1`, dir, {}, 120_000)
  const out = readFileSync(join(dir, 'out.log'), 'utf8')
  t.equal(ran.code, 0, out.slice(-1000))
  t.match(out, /"target_url":"https:\/\/hooks\.example\.com\/marketplace"/, 'Subscribe: the subscription is made')
  t.match(out, /"signing_secret":"whsec_/, 'Subscribe: with its secret')
  t.match(out, /^listening$/m, '4. the receiver listens')
  t.match(out, /^202 \{"id":"evt_/m, '5. the event is accepted')
  t.match(out, /^invoice\.paid evt_\S+ \{"id":"inv_1042",.*"status":"paid"/m, '5. the receiver verified and printed it')

  // The MCP client snippet on this service (no second service), with the install the walkthrough's steps made.
  await t.test('docs/mcp.md: the client snippet finds the stateless revision, calls whoami and exits', async t => {
    const accessToken = readFileSync(join(dir, 'access-token'), 'utf8').trim()
    const me = await fetch(`${base}/public/v1/me`, { headers: { authorization: `Bearer ${accessToken}` } })
    const i = (await me.json()) as { install_id: string, client_id: string }
    t.match(i, { install_id: /\S/, client_id: /^app_/ }, 'the install of the walkthrough\'s steps')
    const snippet = block('docs/mcp.md › With a token you already have')
    // As written: the service from BASE, as the walkthrough sets it.
    const ran = await bash('node --input-type=module -e "$SNIPPET"', ROOT, {
      SNIPPET: snippet,
      BASE: base,
      ACCESS_TOKEN: accessToken
    }, 30_000)
    t.equal(ran.code, 0, `exits by itself: ${ran.stderr.slice(-500)}`)
    const [era, json] = ran.stdout.trim().split('\n')
    t.equal(era, 'modern', 'the SDK 2.x client found the stateless revision')
    const result = JSON.parse(json ?? '') as { content: Array<{ text: string }> }
    t.match(JSON.parse(result.content[0]!.text), { install_id: i.install_id, client_id: i.client_id })
  })
})

t.test('docs/tooling.md: the import cycle check', async t => {
  const ran = await bash(block('docs/tooling.md › No import cycles: madge'), ROOT)
  t.equal(ran.code, 0, ran.stderr)
  t.match(ran.stdout + ran.stderr, 'No circular dependency found')
})

t.test('docs/webhook-delivery.md: an API without a worker and a worker apart, on one Postgres',
  { skip: needsPostgres }, async t => {
    const receiver = await startReceiver(t)
    const dir = workDir(t)
    const databaseUrl = await database(t, { postgres: true })
    const [apiLine, workerLine] = block('docs/webhook-delivery.md › Running workers apart from the API')
      .split('\n').filter(Boolean)
    // A reader's production settings: the database, and a receiver on this machine with its own certificate.
    const env = {
      DATABASE_URL: databaseUrl, WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true', WEBHOOK_CA_FILE: receiver.caFile
    }
    const { base } = await service(t, dir, apiLine!, env)
    t.ok(workerLine!.includes('postgres://…'), 'the worker line leaves the URL to the reader')
    const worker = background(t, workerLine!.replace('postgres://…', databaseUrl), dir, {
      ...env, DATA_DIR: join(dir, 'data'), LOG_LEVEL: 'info'
    })
    await eventually(() => worker.output().includes('webhook worker started'), {
      timeout: 60_000, what: 'the worker to start'
    })
    // Steps 1 to 4 of the walkthrough for a token, then a subscription to the receiver and an event.
    const script = atBase(walkthrough.slice(0, walkthrough.indexOf('# 5.')), base) + `
curl -s -w '\\n' $BASE/public/v1/orgs/org_demo/entities/ent_demo/webhooks -H "Authorization: Bearer $ACCESS_TOKEN" \\
  -H 'content-type: application/json' -d '{"topics":["invoice.paid"],"target_url":"${receiver.url}"}'
npx marketplace-gateway events trigger invoice.paid --org org_demo --entity ent_demo --url $BASE
`
    const ran = await bash(script, dir)
    t.equal(ran.code, 0, ran.stderr)
    await eventually(() => receiver.received.length, { timeout: 30_000, what: 'the worker to deliver the event' })
    t.match(JSON.parse(receiver.received[0]!.body.toString('utf8')), { topic: 'invoice.paid', org_ref_id: 'org_demo' },
      'the separate worker delivered what the API without a worker accepted')
  })
