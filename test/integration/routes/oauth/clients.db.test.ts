// Sign-in as standard OAuth libraries and hostile clients try it: oauth4webapi with its strict checks over
// real HTTP, then each refusal with its exact RFC error.
import { createServer as createHttpsServer, type Server } from 'node:https'
import type { AddressInfo } from 'node:net'
import t from 'tap'
import * as oauth from 'oauth4webapi'
import type { AppInstance } from '../../../../app.js'
import { freePort } from '../../../support/browser.js'
import { ManualClock } from '../../../support/clock.js'
import { bearer, build, eventually, install, pkcePair, SIGNING_KEY, unique } from '../../../support/helper.js'
import { forge, rs256With } from '../../../support/jwt-forge.js'
import { selfSigned } from '../../../support/receiver.js'

type Test = Parameters<Parameters<typeof t.test>[0]>[0]
const insecure = { [oauth.allowInsecureRequests]: true }

// One app for the file, listening, so that the libraries reach it over real HTTP. It fetches metadata documents
// from the test's server on 127.0.0.1 (private targets allowed, its certificate trusted), gives up on one after
// 1 s instead of 3 (the slow document's case waits that long; a loaded machine's good fetches stay well within
// it). REGISTRATION_RATE_LIMIT is the default.
const port = await freePort()
const origin = `http://127.0.0.1:${port}`
const app = await build(t, {
  PUBLIC_BASE_URL: origin,
  MCP_BASE_URL: origin,
  WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
  WEBHOOK_CA_FILE: selfSigned().caFile,
  CLIENT_METADATA_TIMEOUT_SECONDS: '1'
})
await app.listen({ port, host: '127.0.0.1' })
// The outbound guard's refusal of private addresses needs an app that does not allow them.
const guarded = await build(t)

/** A signed-in user's Allow, as the consent form posts it; returns where the browser would go. */
async function allow (app: AppInstance, authorizationUrl: URL): Promise<URL> {
  const entity = unique('ent')
  const user = app.userSessions.sign({ sub: unique('user'), orgRefId: unique('org'), entityRefIds: [entity] })
  const res = await app.inject({
    method: 'POST',
    url: '/oauth/authorize',
    headers: bearer(user),
    payload: { ...Object.fromEntries(authorizationUrl.searchParams), entity_ref_id: entity, decision: 'allow' }
  })
  if (res.statusCode !== 302) throw new Error(`${res.statusCode} ${res.body}`)
  return new URL(res.headers.location as string)
}

t.test('oauth4webapi: discovery, registration, code + PKCE with resource, refresh and revoke', async t => {
  const resource = `${origin}/mcp`

  const rs = await oauth.processResourceDiscoveryResponse(new URL(resource),
    await oauth.resourceDiscoveryRequest(new URL(resource), insecure))
  t.equal(rs.resource, resource, 'protected resource metadata at the path form names the MCP endpoint')
  const issuer = new URL(rs.authorization_servers![0]!)
  const as = await oauth.processDiscoveryResponse(issuer, await oauth.discoveryRequest(issuer,
    { algorithm: 'oauth2', ...insecure }))
  t.ok(as.registration_endpoint, 'a registration endpoint')

  const redirectUri = 'http://127.0.0.1/callback'
  const registered = await oauth.processDynamicClientRegistrationResponse(await oauth.dynamicClientRegistrationRequest(
    as, { redirect_uris: [redirectUri], client_name: 'oauth4webapi', token_endpoint_auth_method: 'none' }, insecure))
  const client: oauth.Client = { client_id: registered.client_id }
  const auth = oauth.None()

  const verifier = oauth.generateRandomCodeVerifier()
  const state = oauth.generateRandomState()
  const url = new URL(as.authorization_endpoint!)
  const loopback = 'http://127.0.0.1:49152/callback'
  url.search = new URLSearchParams({
    client_id: client.client_id,
    redirect_uri: loopback,
    response_type: 'code',
    scope: 'invoices:read',
    state,
    code_challenge: await oauth.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    resource
  }).toString()
  const params = oauth.validateAuthResponse(as, client, await allow(app, url), state)
  const granted = await oauth.processAuthorizationCodeResponse(as, client,
    await oauth.authorizationCodeGrantRequest(as, client, auth, params, loopback, verifier,
      { additionalParameters: { resource }, ...insecure }))
  t.equal(granted.token_type, 'bearer', 'token_type (the library lower-cases it)')
  t.equal(granted.scope, 'invoices:read', 'the requested scope')

  // As a resource server would check it (RFC 9068), for the audience it was asked for.
  const claims = await oauth.validateJwtAccessToken(as,
    new Request(resource, { headers: { authorization: `Bearer ${granted.access_token}` } }), resource, insecure)
  t.equal(claims.client_id, client.client_id, 'an RFC 9068 access token for the MCP endpoint')

  const refreshed = await oauth.processRefreshTokenResponse(as, client,
    await oauth.refreshTokenGrantRequest(as, client, auth, granted.refresh_token!, insecure))
  await oauth.validateJwtAccessToken(as, new Request(resource,
    { headers: { authorization: `Bearer ${refreshed.access_token}` } }), resource, insecure)
  t.pass('a refresh without resource keeps the audience')

  await oauth.processRevocationResponse(await oauth.revocationRequest(as, client, auth, refreshed.refresh_token!,
    insecure))
  const again = oauth.processRefreshTokenResponse(as, client,
    await oauth.refreshTokenGrantRequest(as, client, auth, refreshed.refresh_token!, insecure))
  const refused = await again.then(() => undefined, (err: unknown) => err)
  t.match(refused, { name: 'ResponseBodyError', error: 'invalid_grant' }, 'a revoked refresh token is refused')
})

t.test('registration (RFC 7591)', async t => {
  // An address of its own: the limit counts what this test registers, not the other tests' registrations.
  const register = (body: unknown) =>
    app.inject({ method: 'POST', url: '/oauth/register', payload: body as object, remoteAddress: '192.0.2.10' })
  const cases: Array<[unknown, string]> = [
    [{ redirect_uris: ['http://example.com/cb'] }, 'invalid_redirect_uri'],
    [{ redirect_uris: ['javascript:alert(1)'] }, 'invalid_redirect_uri'],
    [{ redirect_uris: ['https://app.example.com/cb#frag'] }, 'invalid_redirect_uri'],
    [{ redirect_uris: ['https://app.example.com/cb'], scope: 'invoices:read nope:read' }, 'invalid_client_metadata'],
    [{ redirect_uris: ['https://app.example.com/cb'], grant_types: ['client_credentials'] }, 'invalid_client_metadata'],
    [{ client_name: 'no redirect' }, 'invalid_client_metadata']
  ]
  for (const [body, error] of cases) {
    const res = await register(body)
    t.equal(res.statusCode, 400, JSON.stringify(body))
    t.equal(res.json().error, error, res.body)
    t.type(res.json().error_description, 'string')
  }

  const body = {
    client_name: 'Same',
    redirect_uris: ['http://127.0.0.1/cb', 'http://[::1]/cb', 'http://localhost:6274/oauth/callback',
      'cursor://anysphere.cursor-mcp/oauth/callback'],
    token_endpoint_auth_method: 'none'
  }
  const first = await register(body)
  t.equal(first.statusCode, 201, first.body)
  t.notOk('client_secret' in first.json(), 'a public client has no secret')
  const again = await register({ ...body, redirect_uris: [...body.redirect_uris].reverse() })
  t.equal(again.statusCode, 201, 'an identical registration is 201 Created (RFC 7591 3.2.1)')
  t.not(again.json().client_id, first.json().client_id, 'with a client of its own')

  const confidential = await register({ redirect_uris: ['https://app.example.com/cb'] })
  t.equal(confidential.statusCode, 201)
  t.match(confidential.json(), { token_endpoint_auth_method: 'client_secret_basic', client_secret: /^mgs_/ })

  // Grant types this server does not support are dropped; the answer says what was registered.
  const vscode = await register({
    ...body,
    grant_types: ['authorization_code', 'refresh_token',
      'urn:ietf:params:oauth:grant-type:device_code']
  })
  t.equal(vscode.statusCode, 201, vscode.body)
  t.same(vscode.json().grant_types, ['authorization_code', 'refresh_token'])

  // Redirect URIs are stored normalised; private-use schemes must name one app.
  const written = await register({
    redirect_uris: ['HTTPS://App.Example.com:443/cb', 'COM.Example.App:/cb'],
    token_endpoint_auth_method: 'none'
  })
  t.same(written.json().redirect_uris, ['https://app.example.com/cb', 'com.example.app:/cb'])
  for (const uri of ['x-javascript:alert(1)', 'jar:https://app.example.com/a.jar!/', 'ms-settings:privacy',
    'chrome-extension://abc/cb']) {
    const refused = await register({ redirect_uris: [uri], token_endpoint_auth_method: 'none' })
    t.equal(refused.statusCode, 400, uri)
    t.match(refused.json(), { error: 'invalid_redirect_uri', error_description: /reverse domain name/ }, uri)
  }

  // REGISTRATION_RATE_LIMIT (120) a minute per address: hosted clients register every user from a few addresses.
  let sent = cases.length + 9 // the registrations above, refused ones included
  let limited
  do {
    sent++
    limited = await register(body)
  } while (limited.statusCode === 201 && sent < 130)
  t.equal(limited.statusCode, 429)
  t.equal(sent, 121, 'the 121st registration in a minute from one address')
  t.ok(limited.headers['retry-after'])
})

t.test('one client per registration: disabling one cuts off no other; unused ones are forgotten', async t => {
  // An app of its own, on a clock this test moves a day on (no other test's codes and tokens age): it starts at the
  // real time, since registrations are stamped on the database's clock.
  const clock = new ManualClock(Date.now())
  const timed = await build(t, {}, { clock })
  const register = () => timed.inject({
    method: 'POST',
    url: '/oauth/register',
    payload: { client_name: 'Shared software', redirect_uris: ['http://127.0.0.1/cb'], token_endpoint_auth_method: 'none' },
    remoteAddress: '192.0.2.11'
  })
  const [a, b, unused] = await Promise.all([register(), register(), register()])
  const [ida, idb, idu] = [a, b, unused].map(r => r.json().client_id as string)
  t.equal(new Set([ida, idb, idu]).size, 3, 'three registrations, three clients')
  const disabled = await timed.apps.setKeyEnabled(null, ida!, false)
  t.equal(disabled?.apiKeyEnabled, false)
  t.equal((await timed.apps.resolve(idb!))?.apiKeyEnabled, true, 'the other registration of the same software works')

  // Two registrations a day old: one used (an install), one never. A new registration sweeps the unused one.
  const user = timed.userSessions.sign({ sub: unique('user'), orgRefId: unique('org'), entityRefIds: ['ent_1'] })
  const consent = await timed.inject({
    method: 'POST',
    url: '/oauth/authorize',
    headers: bearer(user),
    payload: {
      client_id: idb,
      redirect_uri: 'http://127.0.0.1/cb',
      scope: 'invoices:read',
      state: 's',
      code_challenge: pkcePair().challenge,
      code_challenge_method: 'S256',
      entity_ref_id: 'ent_1',
      decision: 'allow'
    }
  })
  t.equal(consent.statusCode, 302, consent.body)
  t.match(consent.headers.location, /[?&]code=/, 'the second registration was granted an install')
  // A day passes, and more: 25 hours on this app's clock. Every registration sweeps a few unused ones, and the
  // database may hold more than a few (on Postgres, this file's other tests' registrations age with them).
  clock.advance(25 * 3600_000)
  const registerAndFind = async () => {
    await register()
    return timed.apps.resolve(idu!)
  }
  t.equal(await eventually(registerAndFind, { until: found => found === undefined, what: 'the sweep' }),
    undefined, 'the registration never used is gone')
  t.ok(await timed.apps.resolve(idb!), 'the one granted an install is kept')
})

t.test('loopback redirects match on any port, and only there', async t => {
  const reg = await app.inject({
    method: 'POST',
    url: '/oauth/register',
    payload: { redirect_uris: ['http://127.0.0.1/cb', 'https://app.example.com/cb'], token_endpoint_auth_method: 'none' }
  })
  const clientId = reg.json().client_id
  const user = app.userSessions.sign({ sub: 'u', orgRefId: 'o', entityRefIds: ['e'] })
  const authorize = (redirectUri: string) => app.inject({
    method: 'GET',
    url: '/oauth/authorize?' + new URLSearchParams({
      client_id: clientId,
      redirect_uri: redirectUri,
      code_challenge: pkcePair().challenge,
      code_challenge_method: 'S256'
    }).toString(),
    headers: bearer(user)
  })
  t.equal((await authorize('http://127.0.0.1:51000/cb')).statusCode, 200, 'another port')
  for (const uri of ['http://127.0.0.1:51000/other', 'http://localhost:51000/cb', 'https://app.example.com:8443/cb',
    'http://user@127.0.0.1:51000/cb']) {
    const res = await authorize(uri)
    t.equal(res.statusCode, 400, uri)
    t.equal(res.json().error, 'invalid_request')
  }
})

async function metadataServer (t: Test, respond: (clientId: string, res: import('node:http').ServerResponse) => void) {
  const { key, cert } = selfSigned()
  const server: Server = createHttpsServer({ key, cert }, (req, res) => {
    const port = (server.address() as AddressInfo).port
    respond(`https://127.0.0.1:${port}${req.url}`, res)
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => {
    server.closeAllConnections()
    return new Promise<void>(resolve => server.close(() => resolve()))
  })
  return `https://127.0.0.1:${(server.address() as AddressInfo).port}`
}

t.test('client metadata documents that are refused', async t => {
  const open = app
  const good = (clientId: string) => ({
    client_id: clientId, client_name: 'Doc', redirect_uris: ['http://127.0.0.1/cb'], token_endpoint_auth_method: 'none'
  })
  const base = await metadataServer(t, (clientId, res) => {
    const path = new URL(clientId).pathname
    if (path === '/token.json') t.fail('the token endpoint does not fetch documents it has not seen')
    if (path === '/slow.json') return // never answers
    if (path === '/large.json') {
      return res.end(JSON.stringify({ ...good(clientId), padding: 'x'.repeat(6 * 1024) }))
    }
    if (path === '/other.json') return res.end(JSON.stringify(good('https://evil.example/client.json')))
    if (path === '/moved.json') return res.writeHead(302, { location: '/good.json' }).end()
    if (path === '/secret.json') return res.end(JSON.stringify({ ...good(clientId), client_secret: 's' }))
    if (path === '/http.json') return res.end(JSON.stringify({ ...good(clientId), redirect_uris: ['http://evil.example/cb'] }))
    res.end(JSON.stringify(good(clientId)))
  })
  const authorize = (app: AppInstance, clientId: string) => app.inject({
    method: 'GET',
    url: '/oauth/authorize?' + new URLSearchParams({
      client_id: clientId,
      redirect_uri: 'http://127.0.0.1:5000/cb',
      code_challenge: pkcePair().challenge,
      code_challenge_method: 'S256'
    }).toString(),
    headers: bearer(app.userSessions.sign({ sub: 'u', orgRefId: 'o', entityRefIds: ['e'] }))
  })
  t.equal((await authorize(open, `${base}/good.json`)).statusCode, 200, 'a good document')
  const refused: Array<[AppInstance, string, RegExp]> = [
    [guarded, `${base}/private.json`, /private or reserved address/],
    [guarded, 'https://localhost:9/client.json', /private or reserved address/],
    [open, `${base}/slow.json`, /did not arrive within 1000 ms/],
    [open, `${base}/large.json`, /larger than 5120 bytes/],
    [open, `${base}/other.json`, /client_id .* is not its URL/],
    [open, `${base}/moved.json`, /redirects are not followed/],
    [open, `${base}/secret.json`, /must not carry a client secret/],
    [open, `${base}/http.json`, /http is allowed only on a loopback address/]
  ]
  for (const [app, clientId, message] of refused) {
    const res = await authorize(app, clientId)
    t.equal(res.statusCode, 400, `${clientId}: ${res.body}`)
    t.equal(res.json().error, 'invalid_client', clientId)
    t.match(res.json().error_description, message)
    t.notOk(res.headers.location, 'never redirected')
  }
  const token = await guarded.inject({
    method: 'POST',
    url: '/oauth/token',
    payload: { grant_type: 'refresh_token', refresh_token: 'x', client_id: `${base}/token.json` }
  })
  t.equal(token.statusCode, 401, 'at the token endpoint an unknown document is invalid_client, and not fetched')
  t.equal(token.json().error, 'invalid_client')
})

t.test('resource indicators (RFC 8707) and audiences', async t => {
  const installed = await install(app)
  const refresh = (resource: string) => app.inject({
    method: 'POST',
    url: '/oauth/token',
    payload: {
      grant_type: 'refresh_token',
      refresh_token: installed.refreshToken,
      resource,
      client_id: installed.clientId,
      client_secret: installed.clientSecret
    }
  })
  const other = await refresh('https://evil.example/other')
  t.equal(other.statusCode, 400)
  t.equal(other.json().error, 'invalid_target')

  const mcp = async (token: string) => fetch(`${origin}/mcp`, {
    method: 'POST',
    headers: {
      authorization: `Bearer ${token}`,
      'content-type': 'application/json',
      accept: 'application/json, text/event-stream'
    },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' })
  })
  const claims = JSON.parse(Buffer.from(installed.accessToken.split('.')[1]!, 'base64url').toString())
  const header = { alg: 'RS256', typ: 'at+jwt', kid: app.accessTokens.kid }
  const minted = (aud: unknown) => forge(header, { ...claims, aud }, rs256With(SIGNING_KEY))
  const foreign = await mcp(minted('https://other.example/api'))
  t.equal(foreign.status, 401, 'a token for another resource is refused at /mcp')
  t.match(foreign.headers.get('www-authenticate'), /error="invalid_token"/)
  t.match(foreign.headers.get('www-authenticate'),
    `resource_metadata="${origin}/.well-known/oauth-protected-resource/mcp"`)
  t.not((await mcp(minted(`${origin}/mcp`))).status, 401, 'a token for the MCP endpoint alone is accepted there')
  const onlyMcp = await app.inject({ method: 'GET', url: '/public/v1/me', headers: bearer(minted(`${origin}/mcp`)) })
  t.equal(onlyMcp.statusCode, 401, '... and not on the public API')

  // The MCP endpoint takes only tokens issued for it; one issued for it works on the public API too.
  const restOnly = await install(app, { resource: null })
  const refused = await mcp(restOnly.accessToken)
  t.equal(refused.status, 401, 'a token issued for the public API alone is refused at /mcp')
  t.equal(refused.headers.get('www-authenticate'),
    `Bearer resource_metadata="${origin}/.well-known/oauth-protected-resource/mcp", ` +
    'scope="bills:read customers:read invoices:read", ' +
    'error="invalid_token", error_description="The access token was not issued for this endpoint: ask for one with ' +
    `resource=${origin}/mcp."`)
  t.equal((await app.inject({ method: 'GET', url: '/public/v1/me', headers: bearer(restOnly.accessToken) })).statusCode,
    200, '... and works on the public API')
  const both = await install(app, { resource: `${origin}/mcp` })
  // (A ping without a session is a 400 of the protocol: the token itself was taken.)
  t.equal((await mcp(both.accessToken)).status, 400, 'a token issued for /mcp is taken there')
  t.equal((await app.inject({ method: 'GET', url: '/public/v1/me', headers: bearer(both.accessToken) })).statusCode,
    200, '... and on the public API')
  // One consent covers both resources: a refresh may name either, and its access token is bound to what it names.
  for (const [resource, status] of [[`${origin}/mcp`, 400], [`${origin}/public/v1`, 401]] as const) {
    const refreshed = await refresh(resource)
    t.equal(refreshed.statusCode, 200, `refresh for ${resource}`)
    t.equal((await mcp(refreshed.json().access_token)).status, status, '... whose token is taken at /mcp or not')
  }
})

t.test('browser-based clients may run discovery, registration and the token exchange from their own origin',
  async t => {
    const origin = { origin: 'http://localhost:6274' }
    const paths = ['/oauth/token', '/oauth/register', '/oauth/revoke', '/.well-known/oauth-authorization-server',
      '/.well-known/oauth-protected-resource/mcp', '/.well-known/jwks.json']
    for (const path of paths) {
      const pre = await app.inject({
        method: 'OPTIONS',
        url: path,
        headers: {
          ...origin,
          'access-control-request-method': 'POST',
          'access-control-request-headers': 'content-type'
        }
      })
      t.equal(pre.statusCode, 204, `preflight of ${path}`)
      t.equal(pre.headers['access-control-allow-origin'], '*')
    }
    const metadata = await app.inject({
      method: 'GET', url: '/.well-known/oauth-authorization-server', headers: origin
    })
    t.equal(metadata.headers['access-control-allow-origin'], '*', 'the metadata is readable cross-origin')
    const refused = await app.inject({
      method: 'POST', url: '/oauth/token', headers: origin, payload: { client_id: 'x' }
    })
    t.equal(refused.statusCode, 401)
    t.equal(refused.headers['access-control-allow-origin'], '*', 'so is an error, which the client must read')
    const page = await app.inject({ method: 'GET', url: '/oauth/authorize', headers: origin })
    t.equal(page.headers['access-control-allow-origin'], undefined, 'the consent page is not opened to other origins')
  })

t.test('a broken metadata document is fetched once for many authorizations, and not again for a while', async t => {
  let fetches = 0
  const base = await metadataServer(t, (_clientId, res) => {
    fetches++
    // Slow enough that the requests below all arrive while the first fetch is under way.
    setTimeout(() => res.writeHead(500).end(), 50)
  })
  const user = bearer(app.userSessions.sign({ sub: 'u', orgRefId: 'o', entityRefIds: ['e'] }))
  const authorize = () => app.inject({
    method: 'GET',
    url: '/oauth/authorize?' + new URLSearchParams({
      client_id: `${base}/broken.json`,
      redirect_uri: 'http://127.0.0.1:5000/cb',
      code_challenge: pkcePair().challenge,
      code_challenge_method: 'S256'
    }).toString(),
    headers: user
  })
  const answers = await Promise.all(Array.from({ length: 40 }, authorize))
  t.same(new Set(answers.map(a => a.statusCode)), new Set([400]), '40 authorizations, each refused')
  t.match(answers[0]!.body, /answered HTTP 500/)
  t.equal(fetches, 1, 'with one fetch between them')
  for (let n = 0; n < 5; n++) t.equal((await authorize()).statusCode, 400)
  t.equal(fetches, 1, 'and none for the next requests, within FAILURE_CACHE_MS')
})
