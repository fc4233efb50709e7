import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Validator } from '@seriousme/openapi-schema-validator'
import t from 'tap'
import { build } from './helper.js'

type Operation = { responses: Record<string, unknown>, security?: Array<Record<string, string[]>> }

t.test('the OpenAPI document is valid 3.1 and complete for /public/v1', async t => {
  const app = await build(t)
  const res = await app.inject({ method: 'GET', url: '/public/v1/openapi.json' })
  t.equal(res.statusCode, 200)
  const doc = res.json()
  t.equal(doc.openapi, '3.1.0')

  const validator = new Validator()
  const result = await validator.validate(doc)
  t.same(result.errors, undefined, 'no validation errors')
  t.equal(result.valid, true)

  t.same(doc.components.securitySchemes.accessToken, {
    type: 'http',
    scheme: 'bearer',
    bearerFormat: 'JWT',
    description: doc.components.securitySchemes.accessToken.description
  })

  const T = '/public/v1/orgs/{orgId}/entities/{entityId}'
  // 503: every route reads the install's state from the database (docs/operations.md).
  const expected: Record<string, { codes: string[], scopes: string[] }> = {
    '/public/v1/me': { codes: ['200', '401', '429', '500', '503'], scopes: [] },
    [`${T}/invoices`]: { codes: ['401', '403', '429', '500', '501', '503'], scopes: ['invoices:read'] },
    [`${T}/invoices/{id}`]: { codes: ['401', '403', '429', '500', '501', '503'], scopes: ['invoices:read'] },
    [`${T}/bills`]: { codes: ['401', '403', '429', '500', '501', '503'], scopes: ['bills:read'] },
    [`${T}/customers`]: { codes: ['401', '403', '429', '500', '501', '503'], scopes: ['customers:read'] }
  }
  const W = `${T}/webhooks`
  const webhookRoutes: Record<string, Record<string, string[]>> = {
    [W]: {
      post: ['201', '400', '401', '403', '413', '415', '422', '429', '500', '503'],
      get: ['200', '400', '401', '403', '429', '500', '503']
    },
    [`${W}/{subscriptionId}`]: { delete: ['200', '401', '403', '429', '500', '503'] },
    [`${W}/{subscriptionId}/deliveries`]: { get: ['200', '400', '401', '403', '404', '429', '500', '503'] },
    [`${W}/{subscriptionId}/deliveries/{deliveryId}/retry`]: {
      post: ['202', '401', '403', '404', '409', '429', '500', '503']
    },
    [`${W}/{subscriptionId}/rotate-secret`]: { post: ['200', '400', '401', '403', '404', '409', '429', '500', '503'] },
    [`${W}/{subscriptionId}/test`]: { post: ['202', '401', '403', '404', '409', '429', '500', '503'] },
    [`${W}/{subscriptionId}/replay`]: {
      post: ['202', '400', '401', '403', '404', '409', '413', '415', '429', '500', '503']
    }
  }
  const publicPaths = Object.keys(doc.paths).filter(p => p.startsWith('/public/v1'))
  t.same(
    publicPaths.sort(),
    [...Object.keys(expected), ...Object.keys(webhookRoutes), '/public/v1/event-types'].sort(),
    'every /public/v1 route, and only routes'
  )
  for (const [path, methods] of Object.entries(webhookRoutes)) {
    for (const [method, codes] of Object.entries(methods)) {
      const op = doc.paths[path][method] as Operation
      t.same(Object.keys(op.responses).sort(), codes, `${method} ${path} responses`)
      t.same(op.security, [{ accessToken: [] }], `${method} ${path} security`)
    }
  }
  t.same(Object.keys(doc.webhooks).sort(), ['bill.created', 'invoice.paid', 'webhook.test'],
    'the delivery payload, per emitted topic and the test topic')
  t.same(doc.paths['/public/v1/event-types'].get.security, [], 'the event catalog needs no token')
  t.match(doc.webhooks['invoice.paid'].post.requestBody.content['application/json'].schema.required, [
    'id',
    'topic',
    'created_at',
    'org_ref_id',
    'entity_ref_id',
    'data'
  ])
  t.notOk(doc.paths['/events'], 'event ingestion is internal')
  t.equal(
    doc.paths['/public/v1/me'].get.responses['401'].description,
    'Credentials are missing, invalid, expired or revoked.'
  )
  for (const [path, want] of Object.entries(expected)) {
    const op = doc.paths[path].get as Operation
    t.same(Object.keys(op.responses).sort(), want.codes, `${path} responses`)
    t.same(op.security, [{ accessToken: want.scopes }], `${path} security`)
  }
  t.ok(doc.paths['/oauth/token'].post, 'the token endpoint is documented for app developers')
  t.notOk(doc.paths['/apps'], 'internal user routes are not in the developer document')
})

t.test('npm run openapi writes the document without a server', async t => {
  const dir = mkdtempSync(join(tmpdir(), 'mg-openapi-test-'))
  const out = join(dir, 'openapi.json')
  execFileSync(process.execPath, ['--import', 'tsx', 'cli.ts', 'openapi', '--out', out], {
    env: { ...process.env, DATABASE_URL: '', DATA_DIR: dir, LOG_LEVEL: 'silent' },
    stdio: 'pipe'
  })
  const doc = JSON.parse(readFileSync(out, 'utf8'))
  t.equal(doc.openapi, '3.1.0')
  t.ok(doc.paths['/public/v1/me'])
})
