import { Validator } from '@seriousme/openapi-schema-validator'
import type { InjectOptions } from 'fastify'
import t from 'tap'
import { EMITTED_TOPICS } from '../../../../lib/topics.js'
import { bearer, build, install } from '../../../support/helper.js'
import { invoice } from '../../../support/records.js'
import { sandboxRecords } from '../../../../cli/sandbox.js'

type Json = Record<string, any>
type Example = { summary?: string, value: unknown }

/** Every operation of the document, with its method and path (and the webhooks, as `webhook <topic>`). */
function operations (doc: Json): Array<{ key: string, path: string, method: string, op: Json }> {
  const all = []
  for (const [path, item] of Object.entries<Json>(doc.paths)) {
    for (const [method, op] of Object.entries<Json>(item)) all.push({ key: `${method} ${path}`, path, method, op })
  }
  for (const [topic, item] of Object.entries<Json>(doc.webhooks)) {
    all.push({ key: `webhook ${topic}`, path: topic, method: 'post', op: item.post })
  }
  return all
}

const examplesOf = (media: Json): Example[] =>
  media.examples
    ? Object.values<Example>(media.examples)
    : media.example === undefined ? [] : [{ value: media.example }]

/**
 * Parameters without an example, since none works but the reader's own: cursors, the ids the service gives
 * subscriptions, deliveries, apps and installs, and an app's values in its authorization request.
 */
const NO_EXAMPLE = new Set([
  'cursor', 'subscriptionId', 'deliveryId', 'clientId', 'installId', 'client_id', 'redirect_uri', 'resource'
])

const app = await build(t)

t.test('the OpenAPI document is valid 3.1 and complete', async t => {
  const res = await app.inject({ method: 'GET', url: '/public/v1/openapi.json' })
  t.equal(res.statusCode, 200)
  const doc = res.json()
  t.equal(doc.openapi, '3.1.0')

  const result = await new Validator().validate(doc)
  t.same(result.errors, undefined, 'no validation errors')
  t.equal(result.valid, true)

  const T = '/public/v1/orgs/{orgId}/entities/{entityId}'
  const W = `${T}/webhooks`
  const TENANT = ['401', '403', '429', '500', '503']
  // Each operation's status codes: the documented ones, plus 400 wherever input is validated (docs/rules.md).
  const codes: Record<string, string[]> = {
    'get /public/v1/me': ['200', '401', '429', '500', '503'],
    [`get ${T}/invoices`]: ['200', '400', ...TENANT],
    [`get ${T}/invoices/{id}`]: ['200', '304', ...TENANT, '404'],
    [`get ${T}/bills`]: ['200', '400', ...TENANT],
    [`get ${T}/bills/{id}`]: ['200', '304', ...TENANT, '404'],
    [`get ${T}/customers`]: ['200', '400', ...TENANT],
    [`get ${T}/customers/{id}`]: ['200', '304', ...TENANT, '404'],
    [`get ${T}/reports/aged-receivables`]: ['200', '400', ...TENANT],
    [`get ${T}/reports/aged-payables`]: ['200', '400', ...TENANT],
    [`post ${W}`]: ['201', '400', ...TENANT, '413', '415', '422'],
    [`get ${W}`]: ['200', '400', ...TENANT],
    [`delete ${W}/{subscriptionId}`]: ['200', ...TENANT],
    [`get ${W}/{subscriptionId}/deliveries`]: ['200', '400', ...TENANT, '404'],
    [`post ${W}/{subscriptionId}/deliveries/{deliveryId}/retry`]: ['202', ...TENANT, '404', '409'],
    [`post ${W}/{subscriptionId}/rotate-secret`]: ['200', '400', ...TENANT, '404', '409'],
    [`post ${W}/{subscriptionId}/test`]: ['202', ...TENANT, '404', '409'],
    [`post ${W}/{subscriptionId}/replay`]: ['202', '400', ...TENANT, '404', '409', '413', '415'],
    'get /public/v1/event-types': ['200'],
    'get /oauth/authorize': ['200', '302', '400', '401', '403', '500', '503'],
    'post /oauth/authorize': ['302', '400', '401', '403', '413', '415', '500', '503'],
    'post /oauth/token': ['200', '400', '401', '413', '415', '500', '503'],
    'post /oauth/revoke': ['200', '400', '401', '413', '415', '500', '503'],
    'post /oauth/register': ['201', '400', '413', '415', '429', '500', '503'],
    'get /.well-known/jwks.json': ['200'],
    'post /apps': ['201', '400', '401', '409', '413', '415', '500', '503'],
    'get /apps': ['200', '401', '500', '503'],
    'post /apps/{clientId}/api-key/disable': ['200', '401', '404', '500', '503'],
    'post /apps/{clientId}/api-key/enable': ['200', '401', '404', '500', '503'],
    'get /orgs/{orgId}/entities/{entityId}/installs': ['200', '401', '403', '500', '503'],
    'delete /installs/{installId}': ['200', '401', '404', '500', '503'],
    'post /events': ['202', '400', '401', '409', '413', '415', '422', '500', '503'],
    'get /health': ['200'],
    'get /health/ready': ['200', '503'],
    ...Object.fromEntries([...EMITTED_TOPICS, 'webhook.test'].map(topic => [`webhook ${topic}`, ['2XX', '401', '410']]))
  }
  const ops = operations(doc)
  t.same(ops.map(o => o.key).sort(), Object.keys(codes).sort(), 'every route and delivery, and only those')
  t.notOk(Object.keys(doc.paths).some(p => p.startsWith('/mcp') || p.startsWith('/docs')), 'not MCP, not the docs')

  const tags = new Map(doc.tags.map((tag: Json) => [tag.name, tag.description]))
  const ids = new Set<string>()
  for (const { key, op } of ops) {
    t.same(Object.keys(op.responses).sort(), codes[key]!.sort(), `${key}: its responses`)
    t.match(op.operationId, /^[a-z][A-Za-z]+$/, `${key}: an operationId`)
    t.notOk(ids.has(op.operationId), `${key}: its operationId is unique`)
    ids.add(op.operationId)
    t.ok(op.summary && op.description, `${key}: a summary and a description`)
    t.ok(Array.isArray(op.security), `${key}: its security, even when none`)
    if (!key.startsWith('webhook')) {
      t.ok(op.tags?.length && op.tags.every((tag: string) => tags.get(tag)), `${key}: described tags`)
    }

    // What the linters' 2xx and 4xx rules would check, less the operations that are switched off there (redocly.yaml).
    const noInput = /^get \/(health|\.well-known\/jwks\.json|public\/v1\/event-types)/.test(key)
    t.ok(Object.keys(op.responses).some(c => /^[23]/.test(c)), `${key}: a success response`)
    if (!noInput) t.ok(Object.keys(op.responses).some(c => /^4/.test(c)), `${key}: a 4xx response`)

    for (const param of op.parameters ?? []) {
      const example = param.schema?.examples?.length || param.example !== undefined
      if (NO_EXAMPLE.has(param.name)) {
        // "Try it out" sends a parameter's example: one that no reader's data can answer is an error waiting.
        t.notOk(example, `${key}: ${param.name} has no example: none works but the reader's own`)
        t.ok(param.description ?? param.schema?.description, `${key}: ${param.name} says where to get one`)
      } else {
        t.ok(example, `${key}: ${param.name} has an example`)
      }
    }
    for (const [type, media] of Object.entries<Json>(op.requestBody?.content ?? {})) {
      t.ok(examplesOf(media).length, `${key}: ${type} request body has an example`)
    }
    for (const [status, response] of Object.entries<Json>(op.responses)) {
      for (const [type, media] of Object.entries<Json>(response.content ?? {})) {
        t.ok(examplesOf(media).length, `${key} ${status}: ${type} example`)
        // The readiness probe's 503 is its own body, for orchestrators; every other error is the catalog's.
        if (!/^[45]/.test(status) || key === 'get /health/ready') continue
        // Each error response names the codes it can carry, with an example of each, in the one Error shape.
        t.same(media.schema, { $ref: '#/components/schemas/Error' }, `${key} ${status}: the Error schema`)
        const shown = examplesOf(media).map(e => (e.value as Json).error)
        const listed = [...response.description.matchAll(/`(\w+)`/g)].map(m => m[1])
        t.same([...new Set(shown)].sort(), [...listed].sort(), `${key} ${status}: the codes listed are the codes shown`)
      }
    }
  }

  t.notOk(Object.keys(doc.components.schemas).some(n => /^def-/.test(n)), 'components are named by their titles')
  for (const name of ['Identity', 'Error', 'Subscription', 'SubscriptionListing', 'TokenResponse', 'DeliveryAttempt',
    'Invoice', 'Bill', 'Customer', 'LineItem', 'Address', 'InvoicePage', 'BillPage', 'CustomerPage']) {
    t.ok(doc.components.schemas[name], `component ${name}`)
  }
  const listing = doc.paths[W].get.responses['200'].content['application/json']
  t.same(listing.schema, { $ref: '#/components/schemas/SubscriptionListing' })
  t.same(doc.components.schemas.SubscriptionListing.properties.subscriptions.items,
    { $ref: '#/components/schemas/Subscription' }, 'the list item is a named type')

  // Security: the access token on every authenticated /public/v1 route, with its scopes on the oauth2 scheme.
  const schemes = doc.components.securitySchemes
  t.same(Object.keys(schemes).sort(),
    ['accessToken', 'clientCredentials', 'eventsToken', 'oauth2', 'sessionCookie', 'userSession'])
  t.same(schemes.oauth2.flows.authorizationCode, {
    authorizationUrl: 'http://gateway.test/oauth/authorize',
    tokenUrl: 'http://gateway.test/oauth/token',
    refreshUrl: 'http://gateway.test/oauth/token',
    scopes: {
      'invoices:read': 'Read your invoices',
      'bills:read': 'Read your bills',
      'customers:read': 'Read your customers'
    }
  })
  t.same(doc.paths[`${T}/invoices`].get.security, [{ accessToken: [] }, { oauth2: ['invoices:read'] }])
  t.same(doc.paths['/public/v1/me'].get.security, [{ accessToken: [] }, { oauth2: [] }])
  t.same(doc.paths[W].post.security, [{ accessToken: [] }, { oauth2: [] }])
  for (const open of ['/public/v1/event-types', '/.well-known/jwks.json', '/health']) {
    t.same(doc.paths[open].get.security, [], `${open} needs no credentials`)
  }
  t.same(doc.paths['/oauth/register'].post.security, [])
  t.same(doc.paths['/oauth/token'].post.security, [{ clientCredentials: [] }, {}], 'Basic, or none for public clients')
  t.same(doc.paths['/apps'].post.security, [{ userSession: [] }])
  t.same(doc.paths['/events'].post.security, [{ eventsToken: [] }])

  // The OAuth endpoints take forms; the consent page is HTML.
  t.same(Object.keys(doc.paths['/oauth/token'].post.requestBody.content),
    ['application/x-www-form-urlencoded', 'application/json'])
  t.same(Object.keys(doc.paths['/oauth/token'].post.requestBody.content['application/x-www-form-urlencoded'].examples),
    ['authorization_code', 'refresh_token'])
  t.same(Object.keys(doc.paths['/oauth/authorize'].get.responses['200'].content), ['text/html'])
  t.ok(doc.paths['/oauth/authorize'].get.responses['302'].headers.location, 'the redirect names its Location')

  t.same(Object.keys(doc.webhooks).sort(), [...EMITTED_TOPICS, 'webhook.test'].sort(),
    'the delivery payload, per emitted topic and the test topic')
  const paid = doc.webhooks['invoice.paid'].post.requestBody.content['application/json'].schema
  t.match(paid.required, ['id', 'topic', 'created_at', 'org_ref_id', 'entity_ref_id', 'data'])
  t.same(paid.properties.data, { $ref: '#/components/schemas/Invoice' }, 'a record topic carries the record')
  t.same(doc.paths[`${T}/invoices/{id}`].get.responses['200'].content['application/json'].schema,
    { $ref: '#/components/schemas/Invoice' }, 'the same Invoice as the route answers')
  t.same(doc.components.schemas.InvoicePage.properties.invoices.items, { $ref: '#/components/schemas/Invoice' })
  t.equal(doc.paths['/public/v1/me'].get.responses['401'].description,
    'Credentials are missing, invalid, expired or revoked. Codes: `invalid_token`, `invalid_client`.')
})

t.test('the documented errors are the ones the routes answer', async t => {
  const doc = (await app.inject({ method: 'GET', url: '/public/v1/openapi.json' })).json()
  const inst = await install(app, { scopes: ['invoices:read'] })
  const T = `/public/v1/orgs/${inst.orgRefId}/entities/${inst.entityRefId}`
  const json = { 'content-type': 'application/json' }
  const cases: Array<{ op: [string, string], request: InjectOptions }> = [
    { op: ['get', '/public/v1/me'], request: { method: 'GET', url: '/public/v1/me' } },
    { op: ['get', '/public/v1/me'], request: { method: 'GET', url: '/public/v1/me', headers: bearer('x.y.z') } },
    {
      op: ['get', '/public/v1/orgs/{orgId}/entities/{entityId}/customers'],
      request: { method: 'GET', url: `${T}/customers`, headers: bearer(inst.accessToken) }
    },
    {
      op: ['get', '/public/v1/orgs/{orgId}/entities/{entityId}/invoices'],
      request: { method: 'GET', url: `${T}/invoices?cursor=nonsense`, headers: bearer(inst.accessToken) }
    },
    {
      op: ['get', '/public/v1/orgs/{orgId}/entities/{entityId}/invoices/{id}'],
      request: { method: 'GET', url: `${T}/invoices/inv_nope`, headers: bearer(inst.accessToken) }
    },
    {
      op: ['post', '/public/v1/orgs/{orgId}/entities/{entityId}/webhooks'],
      request: {
        method: 'POST',
        url: `${T}/webhooks`,
        headers: { ...bearer(inst.accessToken), ...json },
        payload: { topics: ['invoice.deleted'], target_url: 'https://hooks.example.com/x' }
      }
    },
    {
      op: ['post', '/public/v1/orgs/{orgId}/entities/{entityId}/webhooks'],
      request: {
        method: 'POST',
        url: `${T}/webhooks`,
        headers: { ...bearer(inst.accessToken), ...json },
        payload: { topics: ['invoice.paid'], target_url: 'http://hooks.example.com/x' }
      }
    },
    {
      op: ['post', '/public/v1/orgs/{orgId}/entities/{entityId}/webhooks/{subscriptionId}/test'],
      request: { method: 'POST', url: `${T}/webhooks/whs_nope/test`, headers: bearer(inst.accessToken) }
    },
    {
      op: ['post', '/oauth/token'],
      request: {
        method: 'POST',
        url: '/oauth/token',
        payload: 'grant_type=password',
        headers: {
          'content-type': 'application/x-www-form-urlencoded',
          authorization: `Basic ${Buffer.from(`${inst.clientId}:${inst.clientSecret}`).toString('base64')}`
        }
      }
    },
    { op: ['get', '/apps'], request: { method: 'GET', url: '/apps' } },
    { op: ['post', '/events'], request: { method: 'POST', url: '/events', headers: json, payload: {} } },
    {
      op: ['post', '/events'],
      request: {
        method: 'POST',
        url: '/events',
        headers: { ...bearer(app.config.eventsToken), ...json },
        payload: {
          topic: 'invoice.paid',
          org_ref_id: inst.orgRefId,
          entity_ref_id: inst.entityRefId,
          data: { ...invoice(), total: '1303.06', amount_due: '1303.06' }
        }
      }
    }
  ]
  for (const { op: [method, path], request } of cases) {
    const res = await app.inject(request)
    const documented = doc.paths[path][method].responses[String(res.statusCode)]
    t.ok(documented, `${method} ${path} documents ${res.statusCode}`)
    const bodies = examplesOf(documented?.content?.['application/json'] ?? {}).map(e => e.value)
    t.ok(bodies.some(b => JSON.stringify(b) === JSON.stringify(res.json())),
      `${method} ${path}: ${res.body} is one of its documented examples`)
  }
})

t.test('the reference page\'s prefilled values work: every GET of /public/v1 answers 200 in the sandbox tenant',
  async t => {
    const doc = (await app.inject({ method: 'GET', url: '/public/v1/openapi.json' })).json()
    // The tenant of the examples, with the sandbox's first records (what `sandbox seed` sends there).
    const tenant = { org: 'org_demo', entity: 'ent_demo' }
    const events = [...sandboxRecords({ ...tenant, customers: 1, invoices: 1, bills: 1, asOf: '2026-11-27' })]
      .flatMap(r => r.events)
    const sent = await app.inject({
      method: 'POST',
      url: '/events',
      headers: { ...bearer(app.config.eventsToken), 'content-type': 'application/json' },
      payload: JSON.stringify(events)
    })
    t.equal(sent.statusCode, 202, 'the sandbox records are in')
    const inst = await install(app, { orgRefId: tenant.org, entityRefId: tenant.entity })

    const exampleOf = (p: Json): unknown => p.example ?? p.schema?.examples?.[0]
    let tried = 0
    for (const [path, item] of Object.entries<Json>(doc.paths)) {
      const op = item.get
      if (!path.startsWith('/public/v1/') || !op) continue
      const params: Json[] = op.parameters ?? []
      // A parameter without an example is one the reader fills in: Swagger UI sends nothing until they do.
      if (params.some(p => p.required && exampleOf(p) === undefined)) continue
      let url = path
      const query = new URLSearchParams()
      const headers: Record<string, string> = bearer(inst.accessToken)
      for (const p of params) {
        const value = exampleOf(p)
        if (value === undefined) continue
        if (p.in === 'path') url = url.replace(`{${p.name}}`, encodeURIComponent(String(value)))
        else if (p.in === 'query') query.set(p.name, String(value))
        else if (p.in === 'header') headers[p.name] = String(value)
      }
      const target = query.size > 0 ? `${url}?${query.toString()}` : url
      const res = await app.inject({ method: 'GET', url: target, headers })
      t.equal(res.statusCode, 200, `GET ${target}: ${res.statusCode === 200 ? 'ok' : res.body}`)
      tried++
    }
    t.ok(tried >= 10, `${tried} operations tried with their examples`)
  })
