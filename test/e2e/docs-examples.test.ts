// The documentation's examples, run as a reader pastes them: every fenced block of README.md and docs/ is either run
// here, as written, against a service started as the reader starts it (`npm start`, its own process), or says why
// not. What the test changes in a block is listed where it does it: the port (BASE), the database URL a reader fills
// in. A block added to the docs without a runner fails the first test. The walkthrough's PKCE steps run for every
// first character of a verifier in test/e2e/docs-pkce.test.ts.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { ROOT } from '../../lib/root.js'
import {
  atBase, background, bash, block, BLOCKS, database, keyOf, service, steps, walkthrough, workDir
} from '../support/docs.js'
import { eventually, needsPostgres } from '../support/helper.js'
import { startReceiver } from '../support/receiver.js'

// Three services started with `npm start`, each walked through the README's steps: past tap's 120 s under load.
t.setTimeout(300_000)

/** The blocks this file runs, and why the others are not run. */
const RUN = 'run here'
const COVERAGE: Record<string, string> = {
  'README.md › marketplace-gateway #1': 'the run command: every service in this file starts with `npm start`',
  'README.md › marketplace-gateway #2': 'the test command: CI runs it (.ci/run), twice',
  'README.md › The whole journey by hand': RUN,
  'README.md › Layout': 'a folder map, not a command',
  'docs/mcp.md › With a token you already have': RUN,
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

t.test('every fenced block of the docs is run here, or says why not', async t => {
  t.same(BLOCKS.map(keyOf).filter(k => !(k in COVERAGE)), [], 'no block without a runner or a reason')
  t.same(Object.keys(COVERAGE).filter(k => !BLOCKS.some(b => keyOf(b) === k)), [], 'no runner without its block')
})

t.test('the README walkthrough, as written', async t => {
  const dir = workDir(t)
  const { base } = await service(t, dir, 'npm start')
  const ran = await bash(atBase(walkthrough, base), dir)
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
  t.match(json(/"error":"not_implemented"/), { error: 'not_implemented' }, '5. the read route is not built')
  t.match(json(/"error":"insufficient_scope"/), { error: 'insufficient_scope' }, '5. customers:read not granted')
  t.match(json(/"error":"tenant_mismatch"/), { error: 'tenant_mismatch' }, '5. another tenant is refused')
  t.match(json(/"signing_secret"/), { topics: ['invoice.paid'], signing_secret: /^whsec_/ }, '6. subscribed')
  t.match(json(/^\{"id":"evt_/), { id: /^evt_/ }, '6. the event is accepted')
  t.match(json(/^\{"subscriptions":\[/), { subscriptions: [{ Topics: ['invoice.paid'], IsActive: true }] },
    '6. the listing')
  t.equal(out.filter(l => l.startsWith('{"access_token"')).length, 2, '7. the refresh gave new tokens')
  t.match(json(/"api_key_enabled":false/), { api_key_enabled: false }, '7. the key is disabled')
  t.match(JSON.parse(out.filter(l => l.startsWith('{')).at(-1)!), { error: 'invalid_client' }, '7. the token is dead')
})

t.test('docs/webhooks.md: subscribe, and the local loop with a real receiver', async t => {
  const dir = workDir(t)
  const loop = block('docs/webhooks.md › The local loop')
  const cert = await bash(steps(loop, 1, 2), dir)
  t.equal(cert.code, 0, `1. the certificate: ${cert.stderr.slice(-300)}`)
  const serviceLine = steps(loop, 2, 3).split('\n').filter(l => l && !l.startsWith('#')).join('\n')
  const { base, port } = await service(t, dir, serviceLine)

  const script = atBase(walkthrough.slice(0, walkthrough.indexOf('# 5.')), base) +
    block('docs/webhooks.md › Subscribe') +
    steps(loop, 3, 6) +
    // Added by the test: wait for the receiver to print the event, which the reader sees in the terminal.
    'for i in $(seq 1 300); do grep -q "^invoice.paid evt_" out.log && break; sleep 0.1; done\n' +
    steps(loop, 6) +
    // Added by the test: the install's access token, for the MCP snippet below on the same service.
    'echo "$ACCESS_TOKEN" > access-token\n'
  // The script's output (and the background receiver's, which inherits it) goes to out.log.
  const ran = await bash(`(\n${script}\n) > out.log 2>&1`, dir, { PORT: String(port) }, 120_000)
  const out = readFileSync(join(dir, 'out.log'), 'utf8')
  t.equal(ran.code, 0, out.slice(-1000))
  t.match(out, /"target_url":"https:\/\/hooks\.example\.com\/marketplace"/, 'Subscribe: the subscription is made')
  t.match(out, /"signing_secret":"whsec_/, 'Subscribe: with its secret')
  t.match(out, /^listening$/m, '4. the receiver listens')
  t.match(out, /^202 \{"id":"evt_/m, '5. the event is accepted')
  t.match(out, /^invoice\.paid evt_\S+ \{"invoice_id":"inv_sample"/m, '5. the receiver verified and printed it')

  // The MCP client snippet on this service (no second service), with the install the walkthrough's steps made.
  await t.test('docs/mcp.md: the client snippet finds the stateless revision, calls whoami and exits', async t => {
    const accessToken = readFileSync(join(dir, 'access-token'), 'utf8').trim()
    const me = await fetch(`${base}/public/v1/me`, { headers: { authorization: `Bearer ${accessToken}` } })
    const i = (await me.json()) as { install_id: string, client_id: string }
    t.match(i, { install_id: /\S/, client_id: /^app_/ }, 'the install of the walkthrough\'s steps')
    const snippet = block('docs/mcp.md › With a token you already have')
    t.ok(snippet.includes('http://127.0.0.1:3000/mcp'), 'the snippet names the local URL')
    const ran = await bash('node --input-type=module -e "$SNIPPET"', ROOT, {
      SNIPPET: snippet.replace('http://127.0.0.1:3000', base),
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
