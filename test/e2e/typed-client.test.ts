import { execFile } from 'node:child_process'
import { writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { promisify } from 'node:util'
import openapiTS, { astToString } from 'openapi-typescript'
import t from 'tap'
import { ROOT } from '../../lib/root.js'
import { build, install, pkcePair, REDIRECT_URI } from '../support/helper.js'
import { untapped } from '../support/processes.js'
import { invoice, nth } from '../support/records.js'
import { publishRaw } from '../support/webhooks.js'

const run = promisify(execFile)
const DIR = join(ROOT, 'test', 'support', 'typed-client')

/**
 * What an app developer does with the document: generate TypeScript types (openapi-typescript), write a client
 * against them (test/support/typed-client/client.ts, openapi-fetch), compile it with `tsc --strict`, and call the
 * service over HTTP: the OAuth code exchange and a refresh as forms, /me, paging through invoices, and the webhook
 * routes.
 */
t.test('a client typed from the OpenAPI document compiles strictly and works', async t => {
  const app = await build(t, { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true', WEBHOOK_WORKER: 'false' })
  const base = await app.listen({ port: 0, host: '127.0.0.1' })
  const doc = app.swagger()

  const types = astToString(await openapiTS(doc as Parameters<typeof openapiTS>[0]))
  t.match(types, /\bgetMe: \{/, 'operations are named by their operationId')
  t.notMatch(types, /def-\d/, 'no def-N types')
  writeFileSync(join(DIR, 'api.d.ts'), types)
  const tsc = await run(...untapped(process.execPath, join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', DIR), {
    cwd: ROOT
  })
    .catch((err: { stdout: string }) => ({ stdout: err.stdout, failed: true }))
  t.same(tsc.stdout, '', 'tsc --strict: no error')
  t.notOk('failed' in tsc, 'tsc exits 0')

  // A second install's fresh code: the client makes the exchange itself.
  const first = await install(app, { scopes: ['invoices:read'] })
  const { verifier, challenge } = pkcePair()
  const decision = await app.inject({
    method: 'POST',
    url: '/oauth/authorize',
    headers: { authorization: `Bearer ${first.userToken}`, 'content-type': 'application/x-www-form-urlencoded' },
    payload: new URLSearchParams({
      client_id: first.clientId,
      redirect_uri: REDIRECT_URI,
      scope: 'invoices:read',
      state: 's',
      code_challenge: challenge,
      code_challenge_method: 'S256',
      org_ref_id: first.orgRefId,
      entity_ref_id: first.entityRefId,
      decision: 'allow'
    }).toString()
  })
  const code = new URL(decision.headers.location as string).searchParams.get('code')!

  // Seven invoices of the tenant, sent as the accounting system sends them: pages of 3, 3 and 1 for the client.
  const invoices = Array.from({ length: 7 }, (_, k) => invoice(nth('inv', k + 1)))
  const published = await publishRaw(app, invoices.map(data =>
    ({ topic: 'invoice.created', org_ref_id: first.orgRefId, entity_ref_id: first.entityRefId, data })))
  t.equal(published.statusCode, 202, published.body)

  const { stdout } = await run(...untapped(process.execPath, '--import', 'tsx', join(DIR, 'client.ts')), {
    cwd: ROOT,
    env: {
      ...process.env,
      BASE_URL: base,
      CODE: code,
      VERIFIER: verifier,
      REDIRECT_URI,
      CLIENT_ID: first.clientId,
      CLIENT_SECRET: first.clientSecret,
      TARGET_URL: 'https://127.0.0.1:9/hooks',
      PAGE_SIZE: '3'
    }
  })
  const out = JSON.parse(stdout)
  t.equal(out.token_type, 'Bearer')
  t.same(out.me, {
    install_id: out.install_id,
    client_id: first.clientId,
    app_slug: first.appSlug,
    org_ref_id: first.orgRefId,
    entity_ref_id: first.entityRefId,
    scopes: ['invoices:read']
  })
  const ids = invoices.map(r => r.id as string)
  t.strictSame(out.invoices.pages, [ids.slice(0, 3), ids.slice(3, 6), ids.slice(6)],
    'every invoice once, in order, over the pages next_cursor led to')
  t.strictSame(out.invoices.one, invoices[0], 'one invoice by id: the record sent')
  t.equal(out.invoices.total, '1303.05', 'money is a decimal string')
  t.match(out.invoices.etag, /^"[A-Za-z0-9_-]+"$/)
  t.equal(out.invoices.unchanged, 304, 'If-None-Match with the ETag: not modified')
  t.strictSame(out.invoices.bad_cursor, { status: 400, error: 'invalid_cursor' })
  t.match(out.created, { topics: ['invoice.paid'], secret_prefix: 'whsec_' })
  t.same(out.listed, [{ id: out.created.id, active: true, topics: ['invoice.paid'] }])
  t.equal(out.rotated, out.created.id)
  t.equal(out.attempts, 0)
  t.equal(out.next_cursor, null)
  t.same(out.removed, { ok: true, modified: 1 })
  t.same(out.refused, { status: 400, error: 'unknown_topic', unknown: ['invoice.deleted'] })
  t.equal(out.refreshed, 'Bearer', 'the refresh gave a new refresh token')
})
