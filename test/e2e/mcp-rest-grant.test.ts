// An MCP client that holds only a grant made for the REST API (a consent with resource <base>/public/v1: its
// access and refresh tokens) connects to /mcp over real HTTP with each MCP SDK's own auth(): the 401 sends it to
// refresh for <base>/mcp, which the one consent covers, and it connects with no second consent.
import type { IncomingMessage, ServerResponse } from 'node:http'
import t from 'tap'
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport as TransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { Client as ClientV2, StreamableHTTPClientTransport as TransportV2 } from '@modelcontextprotocol/client'
import { freePort } from '../support/browser.js'
import { bearer, build, pkcePair, unique } from '../support/helper.js'

type Test = Parameters<Parameters<typeof t.test>[0]>[0]

// The service over real HTTP, one for the file, both of its resources on one origin.
const port = await freePort()
const origin = `http://127.0.0.1:${port}`
const app = await build(t, { PUBLIC_BASE_URL: origin, MCP_BASE_URL: origin })
await app.listen({ port, host: '127.0.0.1' })
const MCP = `${origin}/mcp`
const API = `${origin}/public/v1`

/** Every request the service answered, as `METHOD /path STATUS`, seen on its HTTP server. */
const served: string[] = []
app.server.on('request', (req: IncomingMessage, res: ServerResponse) => {
  res.on('finish', () => served.push(`${req.method} ${new URL(req.url!, origin).pathname} ${res.statusCode}`))
})
const isConsent = (r: string) => r.includes(' /oauth/authorize ')

const audience = (token: string): unknown => JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()).aud

interface ClientInfo { client_id: string, client_secret?: string, issuer?: string }
interface Tokens { access_token: string, token_type: string, refresh_token?: string, issuer?: string }

/**
 * What a REST app holds after its one consent: a person allows it for the public API (resource <base>/public/v1),
 * and the app exchanges the code, all over HTTP.
 */
async function restGrant (client: ClientInfo, redirectUri: string) {
  const entity = unique('ent')
  const person = app.userSessions.sign({ sub: unique('user'), orgRefId: unique('org'), entityRefIds: [entity] })
  const { verifier, challenge } = pkcePair()
  const decision = await fetch(`${origin}/oauth/authorize`, {
    method: 'POST',
    redirect: 'manual',
    headers: { ...bearer(person), 'content-type': 'application/json' },
    body: JSON.stringify({
      client_id: client.client_id,
      redirect_uri: redirectUri,
      scope: 'invoices:read',
      code_challenge: challenge,
      code_challenge_method: 'S256',
      entity_ref_id: entity,
      resource: API,
      decision: 'allow'
    })
  })
  if (decision.status !== 302) throw new Error(`consent: ${decision.status} ${await decision.text()}`)
  const code = new URL(decision.headers.get('location')!).searchParams.get('code')!
  const exchanged = await fetch(`${origin}/oauth/token`, {
    method: 'POST',
    headers: { 'content-type': 'application/x-www-form-urlencoded' },
    body: new URLSearchParams({
      grant_type: 'authorization_code', code, redirect_uri: redirectUri, code_verifier: verifier, ...client
    })
  })
  if (exchanged.status !== 200) throw new Error(`exchange: ${exchanged.status} ${await exchanged.text()}`)
  const tokens = await exchanged.json() as Tokens & { install_id: string }
  return { tokens, installId: tokens.install_id }
}

/**
 * An OAuth client provider holding the REST grant, as either SDK reads it: the client and its tokens, stamped with
 * the authorization server they belong to (the SDKs keep credentials per authorization server). It remembers any
 * redirect to the authorization endpoint, which must not come.
 */
class GrantHolder {
  redirectedTo: URL | undefined
  private verifier = ''
  readonly clientMetadata

  constructor (readonly redirectUrl: string, private info: ClientInfo, private saved: Tokens) {
    this.clientMetadata = {
      client_name: 'Ledger agent',
      redirect_uris: [redirectUrl],
      grant_types: ['authorization_code', 'refresh_token'],
      response_types: ['code'],
      token_endpoint_auth_method: info.client_secret === undefined ? 'none' : 'client_secret_basic'
    }
    this.info = { ...info, issuer: origin }
    this.saved = { ...saved, issuer: origin }
  }

  clientInformation () { return this.info }
  saveClientInformation (info: ClientInfo) { this.info = info }
  tokens () { return this.saved }
  saveTokens (tokens: Tokens) { this.saved = tokens }
  redirectToAuthorization (url: URL) { this.redirectedTo = url }
  saveCodeVerifier (v: string) { this.verifier = v }
  codeVerifier () { return this.verifier }
}

/** A fetch that records the bodies the SDK posts to the token endpoint. */
function recordingFetch (tokenRequests: URLSearchParams[]): typeof fetch {
  return async (input, init) => {
    if (String(input instanceof Request ? input.url : input) === `${origin}/oauth/token`) {
      tokenRequests.push(new URLSearchParams(String(init?.body)))
    }
    return fetch(input, init)
  }
}

/** What both SDKs must show: one refresh for the MCP endpoint, its token taken there, and no second consent. */
function checkRecovery (
  t: Test,
  grant: Awaited<ReturnType<typeof restGrant>>,
  holder: GrantHolder,
  tokenRequests: URLSearchParams[],
  whoami: { install_id?: string },
  from: number
) {
  const seen = served.slice(from)
  t.match(seen[0], /^POST \/mcp 401$/, 'the REST token is refused at /mcp')
  t.same(tokenRequests.map(b => [b.get('grant_type'), b.get('resource'), b.get('refresh_token')]),
    [['refresh_token', MCP, grant.tokens.refresh_token]], 'the SDK refreshed once, for the MCP endpoint')
  t.same(seen.filter(r => r.includes('/oauth/token')), ['POST /oauth/token 200'], 'and the refresh answered 200')
  t.equal(holder.redirectedTo, undefined, 'the SDK was never sent to the authorization endpoint')
  t.same(served.slice(0, from).filter(isConsent).slice(-1), ['POST /oauth/authorize 302'], 'the REST consent')
  t.same(seen.filter(isConsent), [], 'and no second one: the authorization endpoint was not called again')
  const token = holder.tokens().access_token
  t.same(audience(token), ['marketplace_app', MCP], 'the new access token is bound to the MCP endpoint')
  t.not(holder.tokens().refresh_token, grant.tokens.refresh_token, 'the refresh token rotated')
  t.equal(whoami.install_id, grant.installId, 'tools act in the install of the REST consent')
}

t.test('SDK 1.x (@modelcontextprotocol/sdk): a confidential app with a REST grant', async t => {
  const developer = app.userSessions.sign({ sub: unique('dev'), orgRefId: unique('devorg'), entityRefIds: [] })
  const redirectUri = 'https://ledger.example.com/callback'
  const created = await fetch(`${origin}/apps`, {
    method: 'POST',
    headers: { ...bearer(developer), 'content-type': 'application/json' },
    body: JSON.stringify({
      slug: unique('ledger').replace(/_/g, '-'),
      name: 'Ledger agent',
      redirect_uris: [redirectUri],
      scopes: ['invoices:read']
    })
  })
  t.equal(created.status, 201)
  const { client_id: clientId, client_secret: clientSecret } = await created.json() as Required<ClientInfo>
  const client = { client_id: clientId, client_secret: clientSecret }
  const grant = await restGrant(client, redirectUri)
  t.equal(audience(grant.tokens.access_token), 'marketplace_app', 'the grant was made for the REST API')
  const holder = new GrantHolder(redirectUri, client, grant.tokens)
  const tokenRequests: URLSearchParams[] = []
  const from = served.length

  const mcp = new ClientV1({ name: 'rest-grant-v1', version: '1.0.0' })
  await mcp.connect(new TransportV1(new URL(MCP), { authProvider: holder, fetch: recordingFetch(tokenRequests) }))
  t.teardown(() => mcp.close())
  const whoami = await mcp.callTool({ name: 'whoami', arguments: {} })
  checkRecovery(t, grant, holder, tokenRequests, whoami.structuredContent as { install_id?: string }, from)
})

t.test('SDK 2.x (@modelcontextprotocol/client): a registered public client with a REST grant', async t => {
  const redirectUri = 'http://127.0.0.1/callback'
  const registered = await fetch(`${origin}/oauth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      client_name: 'Ledger agent', redirect_uris: [redirectUri], token_endpoint_auth_method: 'none'
    })
  })
  t.equal(registered.status, 201)
  const client = { client_id: (await registered.json() as ClientInfo).client_id }
  const grant = await restGrant(client, redirectUri)
  t.equal(audience(grant.tokens.access_token), 'marketplace_app', 'the grant was made for the REST API')
  const holder = new GrantHolder(redirectUri, client, grant.tokens)
  const tokenRequests: URLSearchParams[] = []
  const from = served.length

  const mcp = new ClientV2({ name: 'rest-grant-v2', version: '1.0.0' })
  await mcp.connect(new TransportV2(new URL(MCP), { authProvider: holder, fetch: recordingFetch(tokenRequests) }))
  t.teardown(() => mcp.close())
  const whoami = await mcp.callTool({ name: 'whoami', arguments: {} })
  checkRecovery(t, grant, holder, tokenRequests, whoami.structuredContent as { install_id?: string }, from)
})
