import t from 'tap'
import { bearer, build, install, REDIRECT_URI, unique } from '../../support/helper.js'
import { forge, hs256With } from '../../support/jwt-forge.js'

// One app for the file: every test makes its own users, apps and installs.
const app = await build(t)

const json = (token: string) => ({ ...bearer(token), 'content-type': 'application/json' })

t.test('a marketplace token on internal user routes', async t => {
  const i = await install(app)
  const routes: Array<[string, string]> = [
    ['GET', '/apps'],
    ['POST', `/apps/${i.clientId}/api-key/disable`],
    ['GET', `/orgs/${i.orgRefId}/entities/${i.entityRefId}/installs`],
    ['DELETE', `/installs/${i.installId}`],
    ['GET', '/oauth/authorize?client_id=x']
  ]
  for (const [method, url] of routes) {
    const res = await app.inject({ method: method as 'GET', url, headers: bearer(i.accessToken) })
    t.equal(res.statusCode, 401, `${method} ${url}`)
    t.same(res.json(), { error: 'invalid_token', message: 'Marketplace app tokens cannot be used on user routes.' })
  }
  const still = await app.inject({ method: 'GET', url: '/public/v1/me', headers: bearer(i.accessToken) })
  t.equal(still.statusCode, 200, 'nothing was changed by those attempts')
})

t.test('a user session must expire: one without exp is refused', async t => {
  const claims = { sub: 'dev-user', org_ref_id: 'org_1', entity_ref_ids: ['ent_1'], aud: 'user_session' }
  const noExp = forge({ alg: 'HS256', typ: 'JWT' }, claims, hs256With(app.config.userSessionSecret))
  const refused = await app.inject({ method: 'GET', url: '/apps', headers: bearer(noExp) })
  t.equal(refused.statusCode, 401)
  t.same(refused.json(), { error: 'invalid_token', message: 'Invalid or expired user session.' })
  const exp = Math.floor(Date.now() / 1000) + 60
  const withExp = forge({ alg: 'HS256', typ: 'JWT' }, { ...claims, exp }, hs256With(app.config.userSessionSecret))
  t.equal((await app.inject({ method: 'GET', url: '/apps', headers: bearer(withExp) })).statusCode, 200)
})

t.test('app registration', async t => {
  const dev = app.userSessions.sign({ sub: unique('dev'), orgRefId: 'o', entityRefIds: [] })
  const slug = unique('ledger').replace('_', '-')
  const body = { slug, name: 'Ledger', redirect_uris: [REDIRECT_URI], scopes: ['invoices:read', 'bom:read'] }
  const post = (b: unknown, token = dev) =>
    app.inject({ method: 'POST', url: '/apps', headers: json(token), payload: JSON.stringify(b) })

  const created = await post(body)
  t.equal(created.statusCode, 201)
  const a = created.json()
  t.same(Object.keys(a).sort(), [
    'app_slug',
    'client_id',
    'client_secret',
    'created_at',
    'name',
    'redirect_uris',
    'scopes'
  ])
  t.equal(a.app_slug, slug)
  t.same(a.scopes, ['invoices:read', 'bom:read'], 'planned scopes may be registered')
  t.match(a.created_at, /^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z$/)

  t.equal((await post(body)).statusCode, 409)
  t.equal((await post(body)).json().error, 'conflict')

  const unknownScope = await post({
    ...body,
    slug: unique('x').replace('_', '-'),
    scopes: ['invoices:read', 'invoices:write', 'root:all']
  })
  t.equal(unknownScope.statusCode, 400)
  t.same(unknownScope.json(), {
    error: 'unknown_scope',
    message: 'Unknown scope: invoices:write, root:all',
    unknown: ['invoices:write', 'root:all']
  })

  const http = await post({
    ...body,
    slug: unique('y').replace('_', '-'),
    redirect_uris: ['http://app.example.com/cb']
  })
  t.equal(http.statusCode, 400)
  t.equal(http.json().error, 'invalid_redirect_uri')

  const extra = await post({ ...body, slug: unique('z').replace('_', '-'), owner: 'someone-else' })
  t.equal(extra.statusCode, 400)
  t.equal(extra.json().error, 'validation_error')
  t.match(extra.json().details, [{ location: 'body', message: 'unknown field "owner"' }])

  const list = await app.inject({ method: 'GET', url: '/apps', headers: bearer(dev) })
  t.equal(list.statusCode, 200)
  t.equal(list.json().apps.length, 1)
  t.notMatch(list.body, a.client_secret)
  t.notMatch(list.body, 'client_secret')
  t.equal(list.json().apps[0].api_key_enabled, true)

  const stranger = app.userSessions.sign({ sub: unique('other'), orgRefId: 'o', entityRefIds: [] })
  const theirs = await app.inject({
    method: 'POST',
    url: `/apps/${a.client_id}/api-key/disable`,
    headers: bearer(stranger)
  })
  t.equal(theirs.statusCode, 404)
  t.equal(theirs.json().error, 'not_found')
  t.same((await app.inject({ method: 'GET', url: '/apps', headers: bearer(stranger) })).json(), { apps: [] })
})

t.test('installs of an entity: the app\'s name, and its API key state beside the install\'s Status', async t => {
  const i = await install(app)
  const listed = async () => (await app.inject({
    method: 'GET',
    url: `/orgs/${i.orgRefId}/entities/${i.entityRefId}/installs`,
    headers: bearer(i.userToken)
  })).json().installs.map((r: Record<string, unknown>) => [r.appName, r.Status, r.apiKeyEnabled])
  const key = (state: 'disable' | 'enable') =>
    app.inject({ method: 'POST', url: `/apps/${i.clientId}/api-key/${state}`, headers: bearer(i.ownerToken) })
  t.same(await listed(), [['Test App', 'active', true]])
  t.equal((await key('disable')).statusCode, 200)
  t.same(await listed(), [['Test App', 'active', false]],
    'the key disabled: the install is still active, and the listing says its tokens are refused')
  const refused = await app.inject({ method: 'GET', url: '/public/v1/me', headers: bearer(i.accessToken) })
  t.equal(refused.json().error, 'invalid_client', 'as they are')
  t.equal((await key('enable')).statusCode, 200)
  t.same(await listed(), [['Test App', 'active', true]], 'enabled again')
})

t.test('installs of an entity, and uninstall by a user of that org only', async t => {
  const i = await install(app)
  const list = await app.inject({
    method: 'GET',
    url: `/orgs/${i.orgRefId}/entities/${i.entityRefId}/installs`,
    headers: bearer(i.userToken)
  })
  t.equal(list.statusCode, 200)
  t.match(list.json(), {
    installs: [
      {
        installId: i.installId,
        clientId: i.clientId,
        appSlug: i.appSlug,
        appName: 'Test App',
        apiKeyEnabled: true,
        orgRefId: i.orgRefId,
        entityRefId: i.entityRefId,
        Status: 'active',
        uninstalledAt: null
      }
    ]
  })

  const outsider = app.userSessions.sign({ sub: 'x', orgRefId: 'another-org', entityRefIds: [i.entityRefId] })
  t.equal(
    (
      await app.inject({
        method: 'GET',
        url: `/orgs/${i.orgRefId}/entities/${i.entityRefId}/installs`,
        headers: bearer(outsider)
      })
    ).statusCode,
    403
  )
  const del = await app.inject({ method: 'DELETE', url: `/installs/${i.installId}`, headers: bearer(outsider) })
  t.equal(del.statusCode, 404, 'another org cannot uninstall, nor learn the install exists')
  t.equal((await app.inject({ method: 'GET', url: '/public/v1/me', headers: bearer(i.accessToken) })).statusCode, 200)

  const ok = await app.inject({ method: 'DELETE', url: `/installs/${i.installId}`, headers: bearer(i.userToken) })
  t.equal(ok.statusCode, 200)
  t.match(ok.json(), { Status: 'uninstalled', appName: 'Test App', apiKeyEnabled: true }, 'the same record')
  t.equal(
    (await app.inject({ method: 'DELETE', url: `/installs/${i.installId}`, headers: bearer(i.userToken) })).statusCode,
    404,
    'twice'
  )
  const after = await app.inject({
    method: 'GET',
    url: `/orgs/${i.orgRefId}/entities/${i.entityRefId}/installs`,
    headers: bearer(i.userToken)
  })
  t.equal(after.json().installs[0].Status, 'uninstalled', 'the row is kept')
})

t.test('hostile bodies get clear errors, never a 500', async t => {
  const dev = app.userSessions.sign({ sub: unique('dev'), orgRefId: 'o', entityRefIds: [] })
  const send = (payload: string, contentType = 'application/json') =>
    app.inject({ method: 'POST', url: '/apps', headers: { ...bearer(dev), 'content-type': contentType }, payload })

  let res = await send('{"slug": "a",')
  t.equal(res.statusCode, 400)
  t.same(res.json().error, 'validation_error')
  t.equal(res.json().message, 'Request body is not valid JSON.')

  res = await send(JSON.stringify({ slug: 'x'.repeat(70 * 1024) }))
  t.equal(res.statusCode, 413)
  t.same(res.json(), { error: 'payload_too_large', message: 'Request body is larger than 65536 bytes.' })

  res = await send('slug=a', 'text/plain')
  t.equal(res.statusCode, 415)
  t.equal(res.json().error, 'unsupported_media_type')

  res = await send('')
  t.equal(res.statusCode, 400)
  t.equal(res.json().error, 'validation_error')

  res = await send('[]')
  t.equal(res.statusCode, 400)
  t.equal(res.json().error, 'validation_error')

  res = await send(
    JSON.stringify({ slug: 'ok-slug', name: 'n', redirect_uris: 'https://x', scopes: ['invoices:read'] })
  )
  t.equal(res.statusCode, 400, 'no type coercion of bodies')
  t.equal(res.json().error, 'validation_error')

  res = await send('{"__proto__": {"admin": true}, "slug": "p"}')
  t.equal(res.statusCode, 400)

  res = await app.inject({ method: 'GET', url: '/nothing' })
  t.equal(res.statusCode, 404)
  t.same(res.json(), { error: 'not_found', message: 'No route GET /nothing.' })

  const token = await app.inject({
    method: 'POST',
    url: '/oauth/token',
    headers: { 'content-type': 'application/json' },
    payload: '{{'
  })
  t.equal(token.statusCode, 400)
})

t.test('hostile input that reaches the database or the router still gets a catalog error', async t => {
  const i = await install(app)
  const nul = await app.inject({
    method: 'POST',
    url: '/apps',
    headers: { ...bearer(i.ownerToken), 'content-type': 'application/json' },
    payload: JSON.stringify({
      slug: 'nul-app',
      name: 'a\u0000b',
      redirect_uris: [REDIRECT_URI],
      scopes: ['invoices:read']
    })
  })
  t.equal(nul.statusCode, 400)
  t.equal(nul.json().error, 'validation_error')
  t.equal((await app.inject({ method: 'DELETE', url: '/installs/%00', headers: bearer(i.userToken) })).statusCode, 400)
  const token = await app.inject({
    method: 'POST',
    url: '/oauth/token',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    payload: 'grant_type=refresh_token&refresh_token=x&client_id=%00&client_secret=x'
  })
  t.equal(token.statusCode, 400)
  t.equal(token.json().error, 'invalid_request')

  const badUrl = await app.inject({
    method: 'GET',
    url: '/public/v1/me%zz?access_token=secret-ish',
    headers: { 'x-request-id': 'keep-me' }
  })
  t.equal(badUrl.statusCode, 400)
  t.same(badUrl.json().error, 'validation_error')
  t.notMatch(badUrl.body, 'secret-ish', 'the URL is not echoed')
  t.equal(badUrl.headers['x-request-id'], 'keep-me')
  const long = await app.inject({
    method: 'GET',
    url: `/public/v1/orgs/o/entities/e/invoices/${'x'.repeat(600)}`,
    headers: bearer(i.accessToken)
  })
  t.equal(long.statusCode, 414)
  t.equal(long.json().error, 'uri_too_long')
  t.ok(long.headers['x-request-id'])
})

t.test('oversized headers over real HTTP get a JSON body and a request id', async t => {
  await app.listen({ port: 0, host: '127.0.0.1' })
  const { port } = app.server.address() as { port: number }
  const res = await fetch(`http://127.0.0.1:${port}/health`, { headers: { 'x-filler': 'a'.repeat(20_000) } })
  t.equal(res.status, 431)
  t.same(await res.json(), { error: 'request_header_fields_too_large', message: 'Request headers are too large.' })
  t.ok(res.headers.get('x-request-id'))
})

t.test('a DELETE labelled JSON with an empty body is a DELETE without a body', async t => {
  const i = await install(app)
  const res = await app.inject({
    method: 'DELETE',
    url: `/installs/${i.installId}`,
    headers: { ...bearer(i.userToken), 'content-type': 'application/json' },
    payload: ''
  })
  t.equal(res.statusCode, 200)
  const poisoned = await app.inject({
    method: 'POST',
    url: '/apps',
    headers: { ...bearer(i.ownerToken), 'content-type': 'application/json' },
    payload:
      '{"slug":"p-app","name":"n","redirect_uris":["https://x.example/cb"],"scopes":["invoices:read"],"__proto__":{"x":1}}'
  })
  t.equal(poisoned.statusCode, 400, 'prototype poisoning is still refused')
})
