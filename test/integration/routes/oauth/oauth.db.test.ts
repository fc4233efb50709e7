import t from 'tap'
import { ManualClock } from '../../../support/clock.js'
import { bearer, build, install, ISSUER, pkcePair, REDIRECT_URI, unique } from '../../../support/helper.js'
import type { AppInstance } from '../../../../app.js'

// One app for the file: every test registers its own clients and users.
const app = await build(t)

const jsonPost = (app: AppInstance, url: string, body: unknown, headers: Record<string, string> = {}) =>
  app.inject({
    method: 'POST',
    url,
    headers: { 'content-type': 'application/json', ...headers },
    payload: JSON.stringify(body)
  })

async function registerApp (app: AppInstance, scopes = ['invoices:read', 'bills:read']) {
  const ownerToken = app.userSessions.sign({ sub: unique('dev'), orgRefId: 'devorg', entityRefIds: [] })
  const res = await jsonPost(
    app,
    '/apps',
    { slug: unique('app').replace('_', '-'), name: 'Ledger Sync', redirect_uris: [REDIRECT_URI], scopes },
    bearer(ownerToken)
  )
  const body = res.json()
  return { clientId: body.client_id as string, clientSecret: body.client_secret as string, ownerToken }
}

function userFor (app: AppInstance) {
  const org = unique('org')
  const entity = unique('ent')
  return { org, entity, token: app.userSessions.sign({ sub: unique('user'), orgRefId: org, entityRefIds: [entity] }) }
}

/** The user's Allow for the client, with this PKCE challenge; the authorization code it redirects with. */
async function authorizationCode (
  app: AppInstance,
  client: { clientId: string },
  user: ReturnType<typeof userFor>,
  challenge: string
): Promise<string> {
  const res = await jsonPost(
    app,
    '/oauth/authorize',
    {
      client_id: client.clientId,
      redirect_uri: REDIRECT_URI,
      code_challenge: challenge,
      code_challenge_method: 'S256',
      org_ref_id: user.org,
      entity_ref_id: user.entity,
      decision: 'allow'
    },
    bearer(user.token)
  )
  return new URL(res.headers.location as string).searchParams.get('code')!
}

/**
 * An app of the test's own on a clock the test moves (it starts at the real time: codes and tokens are stamped on
 * the database's clock), so that no other test's codes and tokens age.
 */
async function timedApp (t: Parameters<typeof build>[0]) {
  const clock = new ManualClock(Date.now())
  return { app: await build(t, {}, { clock }), clock }
}

t.test('authorization request', async t => {
  const client = await registerApp(app)
  const user = userFor(app)
  const { challenge } = pkcePair()
  const query = (over: Record<string, string | undefined> = {}) => {
    const p = new URLSearchParams()
    const all: Record<string, string | undefined> = {
      client_id: client.clientId,
      redirect_uri: REDIRECT_URI,
      scope: 'invoices:read',
      state: 'st<1>',
      code_challenge: challenge,
      code_challenge_method: 'S256',
      org_ref_id: user.org,
      entity_ref_id: user.entity,
      ...over
    }
    for (const [k, v] of Object.entries(all)) if (v !== undefined) p.set(k, v)
    return '/oauth/authorize?' + p.toString()
  }
  const get = (url: string, headers: Record<string, string> = bearer(user.token)) =>
    app.inject({ method: 'GET', url, headers })

  await t.test('shows the consent page to a member, from the cookie or the header', async t => {
    for (const headers of [bearer(user.token), { cookie: `other=1; session=${user.token}` }]) {
      const res = await get(query(), headers)
      t.equal(res.statusCode, 200)
      t.match(res.headers['content-type'], /^text\/html/)
      t.equal(res.headers['x-frame-options'], 'DENY')
      t.match(res.headers['content-security-policy'], /frame-ancestors 'none'/)
      t.match(res.body, 'Ledger Sync')
      t.match(res.body, user.entity)
      t.match(res.body, 'Read your invoices')
      t.match(res.body, 'value="st&lt;1&gt;"', 'state is escaped')
      t.notMatch(res.body, 'st<1>')
      t.match(res.body, 'value="allow"')
      t.match(res.body, 'value="deny"')
    }
  })

  await t.test('errors that must not redirect', async t => {
    let res = await get(query({ client_id: 'app_nope' }))
    t.equal(res.statusCode, 400)
    t.same(res.json(), {
      error: 'invalid_request',
      message: 'Unknown client_id.',
      error_description: 'Unknown client_id.'
    })
    res = await get(query({ redirect_uri: 'https://evil.example/cb' }))
    t.equal(res.statusCode, 400)
    t.equal(res.json().error, 'invalid_request')
    t.notOk(res.headers.location)
    res = await get(query(), {})
    t.equal(res.statusCode, 401)
    t.same(res.json(), { error: 'invalid_token', message: 'Missing user session.' })
    res = await get(query(), bearer('garbage'))
    t.equal(res.statusCode, 401)
    const other = app.userSessions.sign({ sub: 'u2', orgRefId: user.org, entityRefIds: ['another-entity'] })
    res = await get(query(), bearer(other))
    t.equal(res.statusCode, 403)
    t.equal(res.json().error, 'forbidden')
  })

  await t.test('errors that redirect back with state', async t => {
    const cases: Array<[Record<string, string | undefined>, string]> = [
      [{ code_challenge: undefined }, 'invalid_request'],
      [{ code_challenge: 'short' }, 'invalid_request'],
      [{ code_challenge_method: 'plain' }, 'invalid_request'],
      [{ code_challenge_method: undefined }, 'invalid_request'],
      [{ resource: 'https://evil.example/other' }, 'invalid_target'],
      [{ response_type: 'token' }, 'unsupported_response_type'],
      [{ scope: 'customers:read' }, 'invalid_scope']
    ]
    for (const [over, error] of cases) {
      const res = await get(query(over))
      t.equal(res.statusCode, 302, JSON.stringify(over))
      const loc = new URL(res.headers.location as string)
      t.equal(loc.origin + loc.pathname, REDIRECT_URI)
      t.equal(loc.searchParams.get('error'), error, JSON.stringify(over))
      t.equal(loc.searchParams.get('state'), 'st<1>')
      t.equal(loc.searchParams.get('iss'), 'http://gateway.test')
    }
  })

  await t.test('deny redirects with access_denied and creates nothing', async t => {
    const res = await app.inject({
      method: 'POST',
      url: '/oauth/authorize',
      headers: { ...bearer(user.token), 'content-type': 'application/x-www-form-urlencoded' },
      payload: new URLSearchParams({
        ...Object.fromEntries(new URL('http://x' + query()).searchParams),
        decision: 'deny'
      }).toString()
    })
    t.equal(res.statusCode, 302)
    const loc = new URL(res.headers.location as string)
    t.equal(loc.searchParams.get('error'), 'access_denied')
    t.equal(loc.searchParams.get('state'), 'st<1>')
    const installs = await app.inject({
      method: 'GET',
      url: `/orgs/${user.org}/entities/${user.entity}/installs`,
      headers: bearer(user.token)
    })
    t.same(installs.json(), { installs: [] })
  })

  await t.test('a cross-site form post with the session cookie is refused', async t => {
    const params = { ...Object.fromEntries(new URL('http://x' + query()).searchParams), decision: 'allow' }
    for (const headers of [{ origin: 'https://evil.example' }, { 'sec-fetch-site': 'cross-site' }]) {
      const res = await app.inject({
        method: 'POST',
        url: '/oauth/authorize',
        headers: { cookie: `session=${user.token}`, 'content-type': 'application/x-www-form-urlencoded', ...headers },
        payload: new URLSearchParams(params).toString()
      })
      t.equal(res.statusCode, 403)
      t.equal(res.json().error, 'forbidden')
    }
    const same = await app.inject({
      method: 'POST',
      url: '/oauth/authorize',
      headers: {
        cookie: `session=${user.token}`,
        'content-type': 'application/x-www-form-urlencoded',
        origin: 'http://gateway.test',
        'sec-fetch-site': 'same-origin'
      },
      payload: new URLSearchParams(params).toString()
    })
    t.equal(same.statusCode, 302)
    t.ok(new URL(same.headers.location as string).searchParams.get('code'))
  })

  await t.test('the decision must be allow or deny', async t => {
    const res = await jsonPost(
      app,
      '/oauth/authorize',
      { client_id: client.clientId, decision: 'maybe' },
      bearer(user.token)
    )
    t.equal(res.statusCode, 400)
    t.equal(res.json().error, 'validation_error')
  })
})

t.test('token endpoint: authorization_code grant', async t => {
  const client = await registerApp(app)
  const user = userFor(app)

  const code = (challenge: string): Promise<string> => authorizationCode(app, client, user, challenge)
  const creds = { client_id: client.clientId, client_secret: client.clientSecret }
  const basic = 'Basic ' + Buffer.from(`${client.clientId}:${client.clientSecret}`).toString('base64')

  await t.test('client authentication errors', async t => {
    let res = await jsonPost(app, '/oauth/token', { grant_type: 'authorization_code' })
    t.equal(res.statusCode, 401)
    t.equal(res.json().error, 'invalid_client')
    t.equal(res.headers['cache-control'], 'no-store')
    res = await jsonPost(app, '/oauth/token', {
      grant_type: 'authorization_code',
      client_id: client.clientId,
      client_secret: 'wrong'
    })
    t.equal(res.statusCode, 401)
    t.same(res.json(), {
      error: 'invalid_client',
      message: 'Client authentication failed.',
      error_description: 'Client authentication failed.'
    })
    res = await jsonPost(
      app,
      '/oauth/token',
      { grant_type: 'authorization_code' },
      { authorization: 'Basic ' + Buffer.from(`${client.clientId}:nope`).toString('base64') }
    )
    t.equal(res.statusCode, 401)
    t.equal(res.headers['www-authenticate'], 'Basic realm="oauth"')
    res = await jsonPost(app, '/oauth/token', { grant_type: 'authorization_code', ...creds }, { authorization: basic })
    t.equal(res.statusCode, 400)
    t.equal(res.json().error, 'invalid_request', 'two authentication methods at once')
  })

  await t.test('request errors', async t => {
    const empty = await app.inject({
      method: 'POST',
      url: '/oauth/token',
      headers: { 'content-type': 'application/json' },
      payload: ''
    })
    t.equal(empty.statusCode, 400)
    t.equal(empty.json().error, 'invalid_request', 'an empty body')
    t.equal(empty.headers['cache-control'], 'no-store')
    const repeated = await app.inject({
      method: 'POST',
      url: '/oauth/token',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      payload: 'grant_type=refresh_token&grant_type=refresh_token&refresh_token=x' +
      `&client_id=${client.clientId}&client_secret=${client.clientSecret}`
    })
    t.equal(repeated.json().error, 'invalid_request', 'a repeated parameter (RFC 6749 3.2)')
    t.equal((await jsonPost(app, '/oauth/token', { grant_type: 5, ...creds })).json().error, 'invalid_request')
    t.equal(
      (await jsonPost(app, '/oauth/revoke', { ...creds })).json().error,
      'invalid_request',
      'revoke without token'
    )
    let res = await jsonPost(app, '/oauth/token', { ...creds })
    t.equal(res.statusCode, 400)
    t.equal(res.json().error, 'invalid_request')
    res = await jsonPost(app, '/oauth/token', { grant_type: 'password', ...creds })
    t.equal(res.statusCode, 400)
    t.equal(res.json().error, 'unsupported_grant_type')
    res = await jsonPost(app, '/oauth/token', { grant_type: 'authorization_code', ...creds })
    t.equal(res.statusCode, 400)
    t.equal(res.json().error, 'invalid_request')
    res = await jsonPost(app, '/oauth/token', {
      grant_type: 'authorization_code',
      code: 'x',
      redirect_uri: REDIRECT_URI,
      code_verifier: 'short',
      ...creds
    })
    t.equal(res.statusCode, 400)
    t.equal(res.json().error, 'invalid_request')
  })

  await t.test('grant errors', async t => {
    const { verifier, challenge } = pkcePair()
    const c = await code(challenge)
    const body = {
      grant_type: 'authorization_code',
      code: c,
      redirect_uri: REDIRECT_URI,
      code_verifier: verifier,
      ...creds
    }
    const bad = async (over: Record<string, string>, why: string) => {
      const res = await jsonPost(app, '/oauth/token', { ...body, ...over })
      t.equal(res.statusCode, 400, why)
      t.equal(res.json().error, 'invalid_grant', why)
    }
    await bad({ code_verifier: pkcePair().verifier }, 'PKCE verifier mismatch')
    await bad({ redirect_uri: 'https://app.example.com/other' }, 'redirect_uri mismatch')
    await bad({ code: 'mac_unknown' }, 'unknown code')
    const other = await registerApp(app)
    await bad({ client_id: other.clientId, client_secret: other.clientSecret }, "another client's code")

    const form = await app.inject({
      method: 'POST',
      url: '/oauth/token',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: basic },
      payload: new URLSearchParams({
        grant_type: 'authorization_code',
        code: c,
        redirect_uri: REDIRECT_URI,
        code_verifier: verifier
      }).toString()
    })
    t.equal(form.statusCode, 200, 'form-encoded with HTTP Basic')
    const tokens = form.json()
    t.same(Object.keys(tokens).sort(), [
      'access_token',
      'expires_in',
      'install_id',
      'refresh_token',
      'scope',
      'token_type'
    ])
    t.equal(tokens.token_type, 'Bearer')
    t.equal(tokens.expires_in, 3600)
    t.equal(tokens.scope, 'invoices:read bills:read')
    t.equal(form.headers['cache-control'], 'no-store')

    await bad({}, 'a code is single use')
    const refreshed = await jsonPost(app, '/oauth/token', {
      grant_type: 'refresh_token',
      refresh_token: tokens.refresh_token,
      ...creds
    })
    t.equal(refreshed.statusCode, 400, 'replaying the code revoked the tokens issued with it')
    t.equal(refreshed.json().error, 'invalid_grant')
  })

  await t.test('a code expires after 60 s', async t => {
    // Time travel on the app's clock rather than sleeping for a minute.
    const timed = await timedApp(t)
    const client = await registerApp(timed.app)
    const user = userFor(timed.app)
    const { verifier, challenge } = pkcePair()
    const before = Date.now()
    const c = await authorizationCode(timed.app, client, user, challenge)
    const exchange = (codeVerifier: string) => jsonPost(timed.app, '/oauth/token', {
      grant_type: 'authorization_code',
      code: c,
      redirect_uri: REDIRECT_URI,
      code_verifier: codeVerifier,
      client_id: client.clientId,
      client_secret: client.clientSecret
    })
    // Issued after `before`: 59 s after it the code still lives (a wrong verifier is what fails, and uses nothing).
    timed.clock.advance(before + 59_000 - timed.clock.now())
    const early = await exchange(pkcePair().verifier)
    t.equal(early.json().error_description, 'code_verifier does not match the code_challenge.', 'alive at 59 s')
    // Issued before now: 60 s after now its minute is over.
    timed.clock.advance(Date.now() + 60_000 - timed.clock.now())
    const res = await exchange(verifier)
    t.equal(res.statusCode, 400)
    t.same(res.json().error, 'invalid_grant')
    t.equal(res.json().error_description, 'The authorization code has expired.')
  })
})

t.test('refresh tokens rotate, with a grace window and reuse detection', async t => {
  const i = await install(app)
  const creds = { client_id: i.clientId, client_secret: i.clientSecret }
  const refresh = (token: string) =>
    jsonPost(app, '/oauth/token', { grant_type: 'refresh_token', refresh_token: token, ...creds })
  const me = (token: string) => app.inject({ method: 'GET', url: '/public/v1/me', headers: bearer(token) })

  const r0 = i.refreshToken
  const first = await refresh(r0)
  t.equal(first.statusCode, 200)
  const r1 = first.json().refresh_token
  t.not(r1, r0, 'rotated')
  t.equal((await me(first.json().access_token)).statusCode, 200)

  const retry = await refresh(r0)
  t.equal(retry.statusCode, 200, 'the token just replaced still works within 30 s (a lost response)')
  const r1b = retry.json().refresh_token
  t.equal(r1b, r1, 'with the same successor: whichever answer the client kept works (races.db.test.ts)')

  const second = await refresh(r1b)
  t.equal(second.statusCode, 200)
  const r2 = second.json().refresh_token

  const reuse = await refresh(r0)
  t.equal(reuse.statusCode, 400, 'an older token is reuse')
  t.same(reuse.json().error, 'invalid_grant')
  const after = await refresh(r2)
  t.equal(after.statusCode, 400, 'reuse revoked every refresh token of the install')
})

t.test('a retry whose successor was not derived from it (an earlier version\'s) is refused, nothing revoked',
  async t => {
    const i = await install(app)
    const creds = { client_id: i.clientId, client_secret: i.clientSecret }
    const refresh = (token: string) =>
      jsonPost(app, '/oauth/token', { grant_type: 'refresh_token', refresh_token: token, ...creds })
    const r1 = (await refresh(i.refreshToken)).json().refresh_token as string
    // As an earlier version left it: the presented token replaced by a drawn successor, unused. Written in the
    // table: no version of the service that still runs makes such a row.
    await app.db.query(
      `insert into refresh_tokens (token_hash, install_id, client_id, code_hash, resource, created_at, expires_at)
       select 'drawn-' || token_hash, install_id, client_id, code_hash, resource, created_at, expires_at
         from refresh_tokens
        where token_hash = (select replaced_by from refresh_tokens where install_id = $1 and replaced_by is not null)`,
      [i.installId])
    await app.db.query(`update refresh_tokens set replaced_by = 'drawn-' || replaced_by
      where install_id = $1 and replaced_by is not null`, [i.installId])
    const retry = await refresh(i.refreshToken)
    t.equal(retry.statusCode, 400, 'the retry is refused')
    t.equal(retry.json().error, 'invalid_grant')
    t.equal((await refresh(r1)).statusCode, 200, 'and nothing was revoked: the derived successor still rotates')
  })

t.test('the grace window closes after 30 s', async t => {
  const timed = await timedApp(t)
  const i = await install(timed.app)
  const creds = { client_id: i.clientId, client_secret: i.clientSecret }
  const refresh = (token: string) =>
    jsonPost(timed.app, '/oauth/token', { grant_type: 'refresh_token', refresh_token: token, ...creds })
  const r1 = (await refresh(i.refreshToken)).json().refresh_token
  // Rotated before now: 30 s after now the window has closed.
  timed.clock.advance(Date.now() + 30_000 - timed.clock.now())
  t.equal((await refresh(i.refreshToken)).statusCode, 400)
  t.equal((await refresh(r1)).statusCode, 400, 'reuse after the window revokes the current token too')
})

t.test('a code issued before a key disable is dead after the enable', async t => {
  const client = await registerApp(app)
  const user = userFor(app)
  const { verifier, challenge } = pkcePair()
  const code = await authorizationCode(app, client, user, challenge)
  await app.inject({
    method: 'POST',
    url: `/apps/${client.clientId}/api-key/disable`,
    headers: bearer(client.ownerToken)
  })
  await app.inject({
    method: 'POST',
    url: `/apps/${client.clientId}/api-key/enable`,
    headers: bearer(client.ownerToken)
  })
  const res = await jsonPost(app, '/oauth/token', {
    grant_type: 'authorization_code',
    code,
    redirect_uri: REDIRECT_URI,
    code_verifier: verifier,
    client_id: client.clientId,
    client_secret: client.clientSecret
  })
  t.equal(res.statusCode, 400)
  t.equal(res.json().error, 'invalid_grant')
})

t.test('refresh after key disable, uninstall and revoke', async t => {
  const i = await install(app)
  const creds = { client_id: i.clientId, client_secret: i.clientSecret }
  const refresh = (token: string) =>
    jsonPost(app, '/oauth/token', { grant_type: 'refresh_token', refresh_token: token, ...creds })
  const owner = bearer(i.ownerToken)

  await app.inject({ method: 'POST', url: `/apps/${i.clientId}/api-key/disable`, headers: owner })
  let res = await refresh(i.refreshToken)
  t.equal(res.statusCode, 401)
  t.same(res.json().error, 'invalid_client', 'the token endpoint refuses a disabled key')
  await app.inject({ method: 'POST', url: `/apps/${i.clientId}/api-key/enable`, headers: owner })
  res = await refresh(i.refreshToken)
  t.equal(res.statusCode, 400, 'a refresh token issued before the disable stays dead after enable')
  t.equal(res.json().error, 'invalid_grant')

  const j = await install(app, { app: i })
  const other = await install(app)
  res = await jsonPost(app, '/oauth/revoke', {
    token: j.refreshToken,
    client_id: other.clientId,
    client_secret: other.clientSecret
  })
  t.equal(res.statusCode, 200, "another client's token: 200, untouched")
  t.equal((await refresh(j.refreshToken)).statusCode, 200)
  const latest = await install(app, { app: i })
  res = await jsonPost(app, '/oauth/revoke', { token: latest.refreshToken, ...creds })
  t.equal(res.statusCode, 200)
  t.equal((await refresh(latest.refreshToken)).statusCode, 400, 'revoked')
  res = await jsonPost(app, '/oauth/revoke', { token: 'mrt_unknown', ...creds })
  t.equal(res.statusCode, 200, 'unknown tokens: 200')
  res = await jsonPost(app, '/oauth/revoke', { token: 'x' })
  t.equal(res.statusCode, 401, 'revocation needs client authentication')

  const k = await install(app)
  await app.inject({ method: 'DELETE', url: `/installs/${k.installId}`, headers: bearer(k.userToken) })
  res = await jsonPost(app, '/oauth/token', {
    grant_type: 'refresh_token',
    refresh_token: k.refreshToken,
    client_id: k.clientId,
    client_secret: k.clientSecret
  })
  t.equal(res.statusCode, 400)
  t.equal(res.json().error, 'invalid_grant', 'uninstalled')
})

t.test('one consent covers both resources: a token request may name either, and the access token follows it',
  async t => {
    const api = `${ISSUER}/public/v1`
    const mcp = `${ISSUER}/mcp`
    const audience = (token: string): unknown =>
      JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()).aud
    const token = (i: { clientId: string, clientSecret: string }, body: Record<string, string>) =>
      jsonPost(app, '/oauth/token', { ...body, client_id: i.clientId, client_secret: i.clientSecret })
    const refresh = (i: { clientId: string, clientSecret: string }, refreshToken: string, resource?: string) =>
      token(i, {
        grant_type: 'refresh_token',
        refresh_token: refreshToken,
        ...(resource !== undefined && { resource })
      })
    // Where the token is taken: an MCP session opens with it (200), and GET /public/v1/me answers (200).
    const surfaces = async (accessToken: string) => {
      const initialize = await app.inject({
        method: 'POST',
        url: '/mcp',
        headers: { ...bearer(accessToken), accept: 'application/json, text/event-stream' },
        payload: {
          jsonrpc: '2.0',
          id: 1,
          method: 'initialize',
          params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'tap', version: '1' } }
        }
      })
      const me = await app.inject({ method: 'GET', url: '/public/v1/me', headers: bearer(accessToken) })
      return { mcp: initialize.statusCode, api: me.statusCode }
    }

    await t.test('a grant made for the REST API refreshes for the MCP endpoint, no second consent', async t => {
      for (const resource of [api, null]) {
        const i = await install(app, { resource })
        t.same(await surfaces(i.accessToken), { mcp: 401, api: 200 }, `consent for ${resource}: the API alone`)
        const forMcp = await refresh(i, i.refreshToken, mcp)
        t.equal(forMcp.statusCode, 200)
        t.same(audience(forMcp.json().access_token), ['marketplace_app', mcp], 'bound to what the refresh named')
        t.same(await surfaces(forMcp.json().access_token), { mcp: 200, api: 200 }, 'taken on both surfaces')
        t.equal(forMcp.json().install_id, i.installId, 'the same install')
        t.equal(forMcp.json().scope, 'invoices:read bills:read customers:read', 'with the same scopes')

        // Without resource, the grant's: the consent named the API.
        const plain = await refresh(i, forMcp.json().refresh_token)
        t.equal(plain.statusCode, 200)
        t.equal(audience(plain.json().access_token), 'marketplace_app', 'no resource: the resource of the consent')
        const back = await refresh(i, plain.json().refresh_token, `${api}/`)
        t.equal(back.statusCode, 200, 'a trailing slash is forgiven')
        t.equal(audience(back.json().access_token), 'marketplace_app')
      }
    })

    await t.test('a grant made for the MCP endpoint refreshes for the REST API alone', async t => {
      const i = await install(app, { resource: mcp })
      const forApi = await refresh(i, i.refreshToken, api)
      t.equal(forApi.statusCode, 200)
      t.equal(audience(forApi.json().access_token), 'marketplace_app')
      t.same(await surfaces(forApi.json().access_token), { mcp: 401, api: 200 }, 'the API alone')
      const plain = await refresh(i, forApi.json().refresh_token)
      t.same(audience(plain.json().access_token), ['marketplace_app', mcp], 'no resource: the consent\'s')
    })

    await t.test('a resource of any other host or path is invalid_target, and uses up nothing', async t => {
      const i = await install(app, { resource: api })
      const body = {
        error: 'invalid_target',
        message: `resource must be ${mcp} or ${api}.`,
        error_description: `resource must be ${mcp} or ${api}.`
      }
      for (const resource of ['https://evil.example/mcp', 'https://evil.example/public/v1', `${ISSUER}/other`,
        `${ISSUER}/public/v2`, `${ISSUER}/mcp/tools`, `${ISSUER}/mcp?x=1`, `${ISSUER}:8443/mcp`, 'mcp', '']) {
        const res = await refresh(i, i.refreshToken, resource)
        t.equal(res.statusCode, 400, resource)
        t.same(res.json(), body, resource)
        t.equal(res.headers['cache-control'], 'no-store')
      }
      const after = await refresh(i, i.refreshToken, mcp)
      t.equal(after.statusCode, 200, 'the refresh token was neither rotated nor revoked by the refusals')
      const again = await refresh(i, after.json().refresh_token)
      t.equal(again.statusCode, 200, '... and its successor rotates: no reuse was detected')
    })

    await t.test('rotation and reuse detection are the same whichever resource is named', async t => {
      const i = await install(app, { resource: api })
      const r0 = i.refreshToken
      const first = await refresh(i, r0, mcp)
      const r1 = first.json().refresh_token
      const retry = await refresh(i, r0, api)
      t.equal(retry.statusCode, 200, 'the token just replaced, within 30 s, for the other resource')
      t.equal(retry.json().refresh_token, r1, 'the same successor')
      t.equal(audience(retry.json().access_token), 'marketplace_app', 'its access token bound to what it named')
      const second = await refresh(i, r1, mcp)
      t.equal(second.statusCode, 200)
      const reuse = await refresh(i, r0, mcp)
      t.equal(reuse.statusCode, 400, 'an older token is reuse')
      t.equal(reuse.json().error, 'invalid_grant')
      t.equal((await refresh(i, second.json().refresh_token, mcp)).statusCode, 400,
        'which revoked the install\'s tokens')
    })

    await t.test('the code exchange may name either resource too', async t => {
      const client = await registerApp(app)
      const user = userFor(app)
      for (const [consented, asked, aud] of [
        [api, mcp, ['marketplace_app', mcp]],
        [mcp, api, 'marketplace_app'],
        [api, undefined, 'marketplace_app'],
        [mcp, undefined, ['marketplace_app', mcp]]
      ] as Array<[string, string | undefined, unknown]>) {
        const { verifier, challenge } = pkcePair()
        const decision = await jsonPost(app, '/oauth/authorize', {
          client_id: client.clientId,
          redirect_uri: REDIRECT_URI,
          code_challenge: challenge,
          code_challenge_method: 'S256',
          entity_ref_id: user.entity,
          resource: consented,
          decision: 'allow'
        }, bearer(user.token))
        const code = new URL(decision.headers.location as string).searchParams.get('code')!
        const exchange = (resource: string | undefined) => token(client, {
          grant_type: 'authorization_code',
          code,
          redirect_uri: REDIRECT_URI,
          code_verifier: verifier,
          ...(resource !== undefined && { resource })
        })
        const foreign = await exchange('https://evil.example/mcp')
        t.equal(foreign.statusCode, 400)
        t.equal(foreign.json().error, 'invalid_target', 'a foreign resource, and the code is not used up')
        const res = await exchange(asked)
        t.equal(res.statusCode, 200, `consent for ${consented}, exchanged for ${asked ?? 'no resource'}`)
        t.same(audience(res.json().access_token), aud)
        const plain = await refresh(client, res.json().refresh_token)
        t.same(audience(plain.json().access_token), consented === mcp ? ['marketplace_app', mcp] : 'marketplace_app',
          'a refresh without resource: the consent\'s')
      }
    })
  })
