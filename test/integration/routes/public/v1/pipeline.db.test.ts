import t from 'tap'
import { ManualClock } from '../../../../support/clock.js'
import { SIGNING_KEY, bearer, build, install, ISSUER } from '../../../../support/helper.js'
import { decode, forge, hs256With, OTHER_KEY, PUBLIC_KEY_PEM, rs256With } from '../../../../support/jwt-forge.js'

const challenge = (message: string, error = 'invalid_token'): string =>
  `Bearer realm="public", error="${error}", error_description="${message}"`

// One app for the file, on a clock that starts at the real time (tokens are issued on the database's clock) and
// that a test moves forward to see a token expire.
const clock = new ManualClock(Date.now())
const app = await build(t, {}, { clock })
// A limit small enough to reach in a few requests: the tests of the limit only.
const smallLimit = await build(t, { PUBLIC_RATE_LIMIT: '3' })

// Rows are the numbered steps of docs/rules.md#public-request-pipeline.
t.test('the request pipeline (docs/rules.md), row by row', async t => {
  const i = await install(app, { scopes: ['invoices:read'] })
  const tenant = `/public/v1/orgs/${i.orgRefId}/entities/${i.entityRefId}`
  const { header, payload } = decode(i.accessToken)
  const now = Math.floor(Date.now() / 1000)
  const resign = (changes: Record<string, unknown>, headerChanges: Record<string, unknown> = {}) =>
    forge({ ...header, ...headerChanges }, { ...payload, ...changes }, rs256With(SIGNING_KEY))

  const get = (url: string, headers: Record<string, string> = {}) => app.inject({ method: 'GET', url, headers })

  await t.test('row 1: no bearer token', async t => {
    const variants: Array<Record<string, string>> = [
      {},
      { authorization: 'Basic Zm9vOmJhcg==' },
      { authorization: 'Bearer' },
      { authorization: 'Bearer ' }
    ]
    for (const headers of variants) {
      const res = await get('/public/v1/me', headers)
      t.equal(res.statusCode, 401)
      t.same(res.json(), { error: 'invalid_token', message: 'Missing bearer token.' })
      t.equal(
        res.headers['www-authenticate'],
        'Bearer realm="public"',
        'no error attribute when the header was missing'
      )
    }
  })

  await t.test('row 2: signature, algorithm, aud, iss wrong or unreadable', async t => {
    const cases: Record<string, string> = {
      garbage: 'not-a-jwt',
      'three dots of nothing': 'a.b.c',
      'signed by another key': forge(header, payload, rs256With(OTHER_KEY)),
      'alg none': forge({ ...header, alg: 'none' }, payload, () => ''),
      'alg none with a signature': forge({ ...header, alg: 'none' }, payload, rs256With(SIGNING_KEY)),
      'HS256 keyed with the public key': forge({ ...header, alg: 'HS256' }, payload, hs256With(PUBLIC_KEY_PEM)),
      'wrong aud': resign({ aud: 'user_session' }),
      'wrong iss': resign({ iss: 'https://evil.example' }),
      'wrong typ': resign({}, { typ: 'JWT' }),
      'unknown kid': resign({}, { kid: 'other-key' }),
      'payload tampered': (() => {
        const [h, , s] = i.accessToken.split('.')
        return `${h}.${Buffer.from(JSON.stringify({ ...payload, scope: 'bills:read' })).toString('base64url')}.${s}`
      })(),
      'expired and wrong aud (row 2 wins)': resign({ aud: 'other', exp: now - 10 }),
      'a malformed bearer value': 'abc def',
      'non-ASCII bearer value': 'ä.b.c',
      'issued in the future': resign({ iat: now + 3600, exp: now + 7200 }),
      'living longer than ACCESS_TOKEN_MAX_LIFETIME (1 h)': resign({ exp: (payload.iat as number) + 3601 }),
      'living a year': resign({ exp: (payload.iat as number) + 365 * 86_400 }),
      'user session token': app.userSessions.sign({ sub: 'u', orgRefId: i.orgRefId, entityRefIds: [i.entityRefId] })
    }
    for (const [name, token] of Object.entries(cases)) {
      const res = await get('/public/v1/me', bearer(token))
      t.equal(res.statusCode, 401, name)
      t.same(res.json(), { error: 'invalid_token', message: 'Invalid access token.' }, name)
      t.equal(res.headers['www-authenticate'], challenge('Invalid access token.'), name)
    }
  })

  await t.test('row 3: expired', async t => {
    const res = await get('/public/v1/me', bearer(resign({ iat: now - 7200, exp: now - 3600 })))
    t.equal(res.statusCode, 401)
    t.same(res.json(), { error: 'invalid_token', message: 'Access token expired.' })
    t.equal(res.headers['www-authenticate'], challenge('Access token expired.'))
  })

  await t.test('a token once accepted is remembered, but its expiry and audience are checked on every use', async t => {
    const exp = Math.floor(clock.now() / 1000) + 60
    const soon = resign({ exp })
    t.equal((await get('/public/v1/me', bearer(soon))).statusCode, 200, 'accepted while valid')
    clock.advance(exp * 1000 - clock.now() - 1)
    t.equal((await get('/public/v1/me', bearer(soon))).statusCode, 200, 'still accepted 1 ms before exp')
    clock.advance(1)
    const late = await get('/public/v1/me', bearer(soon))
    t.equal(late.statusCode, 401, 'the same token, once past exp')
    t.same(late.json(), { error: 'invalid_token', message: 'Access token expired.' })

    // Only for the MCP endpoint (RFC 8707): accepted there, and remembered there, still refused here.
    const mcpOnly = resign({ aud: `${ISSUER}/mcp` })
    const mcp = await app.inject({
      method: 'POST',
      url: '/mcp',
      headers: {
        ...bearer(mcpOnly), accept: 'application/json, text/event-stream', 'content-type': 'application/json'
      },
      payload: {
        jsonrpc: '2.0',
        id: 1,
        method: 'initialize',
        params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'tap', version: '1' } }
      }
    })
    t.equal(mcp.statusCode, 200, 'the MCP endpoint takes it')
    const here = await get('/public/v1/me', bearer(mcpOnly))
    t.equal(here.statusCode, 401)
    t.same(here.json(), { error: 'invalid_token', message: 'Invalid access token.' })
  })

  await t.test('row 6: tenant mismatch, decided before scopes and without lookups', async t => {
    for (const url of [
      `/public/v1/orgs/other-org/entities/${i.entityRefId}/invoices`,
      `/public/v1/orgs/${i.orgRefId}/entities/other-entity/invoices`,
      `/public/v1/orgs/${i.orgRefId}/entities/other-entity/bills`,
      '/public/v1/orgs/nope/entities/nope/customers'
    ]) {
      const res = await get(url, bearer(i.accessToken))
      t.equal(res.statusCode, 403, url)
      t.same(res.json(), { error: 'tenant_mismatch', message: "Path tenant does not match the token's tenant." }, url)
    }
  })

  await t.test('row 7: missing scope, even where the handler would answer 200', async t => {
    for (const path of ['/bills', '/customers']) {
      const res = await get(tenant + path, bearer(i.accessToken))
      const scope = path === '/bills' ? 'bills:read' : 'customers:read'
      t.equal(res.statusCode, 403)
      t.same(res.json(), { error: 'insufficient_scope', message: `Missing scope: ${scope}`, required: [scope] })
      t.equal(res.headers['www-authenticate'], `Bearer error="insufficient_scope", scope="${scope}"`)
    }
  })

  await t.test('all rows pass: the route answers', async t => {
    const list = await get(tenant + '/invoices', bearer(i.accessToken))
    t.equal(list.statusCode, 200)
    t.equal(list.body, '{"invoices":[],"next_cursor":null}', 'the tenant has no invoices yet')
    const one = await get(tenant + '/invoices/inv_1', bearer(i.accessToken))
    t.equal(one.statusCode, 404)
    t.same(one.json(), { error: 'not_found', message: 'Invoice not found.' })
  })

  await t.test('every answer carries x-request-id, and an incoming one is kept', async t => {
    const mine = await get('/public/v1/me', { ...bearer(i.accessToken), 'x-request-id': 'trace-123' })
    t.equal(mine.headers['x-request-id'], 'trace-123')
    const hostile = await get('/public/v1/me', { 'x-request-id': 'bad id\twith spaces' })
    t.not(hostile.headers['x-request-id'], 'bad id\twith spaces')
    t.match(hostile.headers['x-request-id'], /^[0-9a-f-]{36}$/)
    const notFound = await get('/public/v1/nothing-here', bearer(i.accessToken))
    t.equal(notFound.statusCode, 404)
    t.equal(notFound.json().error, 'not_found')
    t.ok(notFound.headers['x-request-id'])
  })

  t.equal(payload.iss, ISSUER)
  t.equal(header.alg, 'RS256')
  t.equal(header.typ, 'at+jwt')
  t.type(header.kid, 'string')
})

t.test('rows 4 and 5: key disabled, install not active; key state wins', async t => {
  const i = await install(app)
  const me = () => app.inject({ method: 'GET', url: '/public/v1/me', headers: bearer(i.accessToken) })
  const owner = { authorization: `Bearer ${i.ownerToken}` }

  const disabled = await app.inject({ method: 'POST', url: `/apps/${i.clientId}/api-key/disable`, headers: owner })
  t.same(disabled.json(), { client_id: i.clientId, api_key_enabled: false })
  let res = await me()
  t.equal(res.statusCode, 401)
  t.same(res.json(), { error: 'invalid_client', message: "The app's API key is disabled." })
  t.equal(res.headers['www-authenticate'], challenge("The app's API key is disabled."))

  const uninstalled = await app.inject({
    method: 'DELETE',
    url: `/installs/${i.installId}`,
    headers: bearer(i.userToken)
  })
  t.equal(uninstalled.statusCode, 200)
  res = await me()
  t.same(res.json().error, 'invalid_client', 'row 4 answers before row 5')

  await app.inject({ method: 'POST', url: `/apps/${i.clientId}/api-key/enable`, headers: owner })
  res = await me()
  t.equal(res.statusCode, 401)
  t.same(
    res.json(),
    { error: 'invalid_client', message: "The app's API key is disabled." },
    'a token issued before the disable stays dead'
  )

  const fresh = await install(app, { app: i })
  t.not(fresh.installId, i.installId, 'installing again creates a new install')
  res = await app.inject({ method: 'GET', url: '/public/v1/me', headers: bearer(fresh.accessToken) })
  t.equal(res.statusCode, 200)
})

t.test('uninstall gives invalid_token on the very next request', async t => {
  const i = await install(app)
  t.equal((await app.inject({ method: 'GET', url: '/public/v1/me', headers: bearer(i.accessToken) })).statusCode, 200)
  const res = await app.inject({ method: 'DELETE', url: `/installs/${i.installId}`, headers: bearer(i.userToken) })
  t.equal(res.statusCode, 200)
  t.equal(res.json().Status, 'uninstalled')
  const after = await app.inject({ method: 'GET', url: '/public/v1/me', headers: bearer(i.accessToken) })
  t.equal(after.statusCode, 401)
  t.same(after.json(), { error: 'invalid_token', message: 'Install is not active.' })
  t.equal(after.headers['www-authenticate'], challenge('Install is not active.'))
})

t.test('a re-authorisation that changes scopes is enforced on the next request', async t => {
  const i = await install(app, { scopes: ['invoices:read'] })
  const tenant = `/public/v1/orgs/${i.orgRefId}/entities/${i.entityRefId}`
  t.equal((await app.inject({ method: 'GET', url: tenant + '/bills', headers: bearer(i.accessToken) })).statusCode, 403)
  const again = await install(app, { app: i, scopes: ['bills:read'], orgRefId: i.orgRefId, entityRefId: i.entityRefId })
  t.equal(again.installId, i.installId, 're-authorising the active install keeps it')
  const old = await app.inject({ method: 'GET', url: tenant + '/bills', headers: bearer(i.accessToken) })
  t.equal(old.statusCode, 200, 'the old token now has bills:read, as the database says')
  t.same(old.json(), { bills: [], next_cursor: null })
  const lost = await app.inject({ method: 'GET', url: tenant + '/invoices', headers: bearer(i.accessToken) })
  t.equal(lost.statusCode, 403)
  t.same(lost.json().required, ['invoices:read'])
})

t.test('per-install rate limit', async t => {
  const app = smallLimit
  const a = await install(app)
  const b = await install(app)
  for (let n = 1; n <= 3; n++) {
    const res = await app.inject({ method: 'GET', url: '/public/v1/me', headers: bearer(a.accessToken) })
    t.equal(res.statusCode, 200)
    t.equal(res.headers['x-ratelimit-limit'], '3')
    t.equal(res.headers['x-ratelimit-remaining'], String(3 - n))
  }
  const limited = await app.inject({ method: 'GET', url: '/public/v1/me', headers: bearer(a.accessToken) })
  t.equal(limited.statusCode, 429)
  t.same(limited.json(), { error: 'rate_limited', message: 'Rate limit exceeded.' })
  t.ok(Number(limited.headers['retry-after']) > 0)
  t.equal(limited.headers['x-ratelimit-remaining'], '0')
  const other = await app.inject({ method: 'GET', url: '/public/v1/me', headers: bearer(b.accessToken) })
  t.equal(other.statusCode, 200, 'counted per install')
})

t.test('the rate limit counts right after authentication: refusals count and carry its headers', async t => {
  const app = smallLimit
  const i = await install(app)
  const other = `/public/v1/orgs/not-mine/entities/${i.entityRefId}/invoices`
  const first = await app.inject({ method: 'GET', url: other, headers: bearer(i.accessToken) })
  t.equal(first.statusCode, 403)
  t.equal(first.headers['x-ratelimit-remaining'], '2')
  const scope = await app.inject({
    method: 'GET',
    url: `/public/v1/orgs/${i.orgRefId}/entities/${i.entityRefId}/bills`,
    headers: bearer(i.accessToken)
  })
  t.equal(scope.statusCode, 200)
  t.same(scope.json(), { bills: [], next_cursor: null })
  t.equal(scope.headers['x-ratelimit-remaining'], '1')
  const third = await app.inject({ method: 'GET', url: other, headers: bearer(i.accessToken) })
  t.equal(third.statusCode, 403, 'the last request the limit allows')
  t.equal(third.headers['x-ratelimit-remaining'], '0')
  const fourth = await app.inject({ method: 'GET', url: other, headers: bearer(i.accessToken) })
  t.equal(fourth.statusCode, 429)
  const anonymous = await app.inject({ method: 'GET', url: '/public/v1/me' })
  t.equal(anonymous.statusCode, 401, 'authentication answers before the limit')
  t.notOk(anonymous.headers['x-ratelimit-limit'])
})
