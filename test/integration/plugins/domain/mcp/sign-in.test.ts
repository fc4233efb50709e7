// Agents sign in on their own: the MCP SDK client's own OAuth flow (auth() with an OAuthClientProvider)
// against the service over real HTTP, with a person's consent given in headless Chromium, ending with
// tools/call whoami equal to GET /public/v1/me. One test per way a client comes to be known.
import { createServer as createHttpServer } from 'node:http'
import { createServer as createHttpsServer } from 'node:https'
import type { AddressInfo } from 'node:net'
import t from 'tap'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import type { OAuthClientProvider } from '@modelcontextprotocol/sdk/client/auth.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import type {
  OAuthClientInformationMixed, OAuthClientMetadata, OAuthTokens
} from '@modelcontextprotocol/sdk/shared/auth.js'
import type { Page } from 'playwright-core'
import type { AppInstance } from '../../../../../app.js'
import { browser, freePort, SKIP_WITHOUT_CHROMIUM as SKIP } from '../../../../support/browser.js'
import { bearer, build, REDIRECT_URI, unique } from '../../../../support/helper.js'
import { selfSigned } from '../../../../support/receiver.js'

type Test = Parameters<Parameters<typeof t.test>[0]>[0]

interface Served {
  app: AppInstance
  origin: string
  org: string
  /** The user's two entities: the tests pick the second on the consent page. */
  entities: [string, string]
  userToken: string
}

/**
 * The service over real HTTP, one for the file (none when the tests are skipped); outbound fetches (metadata
 * documents) may reach 127.0.0.1 and trust the test CA.
 */
async function serve (): Promise<Pick<Served, 'app' | 'origin'>> {
  const port = await freePort()
  const origin = `http://127.0.0.1:${port}`
  const app = await build(t, {
    PUBLIC_BASE_URL: origin,
    MCP_BASE_URL: origin,
    WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
    WEBHOOK_CA_FILE: selfSigned().caFile
  })
  await app.listen({ port, host: '127.0.0.1' })
  return { app, origin }
}
const service = SKIP ? undefined : await serve()

/** A person of an organisation of their own, with two entities, signed in to the file's service. */
function person (): Served {
  const { app, origin } = service!
  const org = unique('org')
  const entities: [string, string] = [unique('ent'), unique('ent')]
  const userToken = app.userSessions.sign({ sub: unique('user'), orgRefId: org, entityRefIds: entities })
  return { app, origin, org, entities, userToken }
}

/** An OAuthClientProvider that keeps everything in memory and remembers where it was told to send the user. */
class MemoryProvider implements OAuthClientProvider {
  authorizationUrl: URL | undefined
  private info: OAuthClientInformationMixed | undefined
  private saved: OAuthTokens | undefined
  private verifier = ''

  constructor (
    readonly redirectUrl: string,
    readonly clientMetadata: OAuthClientMetadata,
    opts: { clientMetadataUrl?: string, preregistered?: OAuthClientInformationMixed } = {}
  ) {
    if (opts.clientMetadataUrl) this.clientMetadataUrl = opts.clientMetadataUrl
    this.info = opts.preregistered
  }

  clientMetadataUrl?: string
  clientInformation () { return this.info }
  saveClientInformation (info: OAuthClientInformationMixed) { this.info = info }
  tokens () { return this.saved }
  saveTokens (tokens: OAuthTokens) { this.saved = tokens }
  redirectToAuthorization (url: URL) { this.authorizationUrl = url }
  saveCodeVerifier (v: string) { this.verifier = v }
  codeVerifier () { return this.verifier }
}

/**
 * The person's part: opens the authorization URL signed in, checks the picker offers their entities with none
 * chosen, picks the second, and allows. Returns the decision's Location (where the browser is sent next).
 */
async function consent (t: Test, s: Served, url: URL, checkPage?: (page: Page) => Promise<void>): Promise<URL> {
  const context = await (await browser()).newContext()
  t.teardown(() => context.close())
  const origin = new URL(s.origin)
  await context.addCookies([{ name: 'session', value: s.userToken, domain: origin.hostname, path: '/' }])
  const page = await context.newPage()
  page.setDefaultTimeout(10_000)
  const res = await page.goto(url.toString())
  t.equal(res?.status(), 200, 'the consent page opens')
  const radios = page.getByRole('radio')
  t.same(await radios.evaluateAll(els => els.map(e => (e as unknown as { value: string }).value)), s.entities,
    'the picker offers the entities of the session')
  t.equal(await page.getByRole('radio', { checked: true }).count(), 0, 'none is chosen for the person')
  await checkPage?.(page)
  await page.getByRole('radio', { name: s.entities[1] }).check()
  const decision = page.waitForResponse(r =>
    r.url() === `${s.origin}/oauth/authorize` && r.request().method() === 'POST')
  await page.getByRole('button', { name: 'Allow' }).click()
  const answer = await decision
  t.equal(answer.status(), 302, 'the decision redirects')
  return new URL(answer.headers().location!)
}

/** Connects with the provider; the first connect must end in the SDK's redirect to the authorization page. */
async function signIn (t: Test, s: Served, provider: MemoryProvider, code: (url: URL) => Promise<string>) {
  const endpoint = new URL(`${s.origin}/mcp`)
  const first = new Client({ name: 'sign-in-test', version: '1.0.0' })
  await t.rejects(first.connect(new StreamableHTTPClientTransport(endpoint, { authProvider: provider })),
    { message: 'Unauthorized' }, 'no token yet: the SDK is sent to authorize')
  t.ok(provider.authorizationUrl, 'the SDK discovered where to send the user')
  const transport = new StreamableHTTPClientTransport(endpoint, { authProvider: provider })
  await transport.finishAuth(await code(provider.authorizationUrl!))
  const client = new Client({ name: 'sign-in-test', version: '1.0.0' })
  await client.connect(transport)
  t.teardown(() => client.close())
  const whoami = await client.callTool({ name: 'whoami', arguments: {} })
  const token = provider.tokens()!.access_token
  const me = await s.app.inject({ method: 'GET', url: '/public/v1/me', headers: bearer(token) })
  t.equal(me.statusCode, 200, me.body)
  t.same(whoami.structuredContent, me.json(), 'whoami equals /me')
  t.equal((whoami.structuredContent as { entity_ref_id: string }).entity_ref_id, s.entities[1],
    'installed into the entity the person picked')
  const aud = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString()).aud
  t.same(aud, ['marketplace_app', `${s.origin}/mcp`], 'the token names the MCP endpoint as its audience (RFC 8707)')
  return whoami.structuredContent as { client_id: string }
}

const METADATA: OAuthClientMetadata = {
  client_name: 'Test agent',
  redirect_uris: ['http://127.0.0.1/callback'],
  grant_types: ['authorization_code', 'refresh_token'],
  response_types: ['code'],
  token_endpoint_auth_method: 'none'
}

t.test('DCR public client with a loopback redirect on a random port', { skip: SKIP }, async t => {
  const s = person()
  // The native app's own listener: the browser really comes back to it, on a port chosen now.
  const codes: string[] = []
  const listener = createHttpServer((req, res) => {
    const url = new URL(req.url!, 'http://127.0.0.1')
    if (url.pathname === '/callback' && url.searchParams.get('code')) codes.push(url.searchParams.get('code')!)
    res.end('You can close this window.')
  })
  await new Promise<void>(resolve => listener.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>(resolve => listener.close(() => resolve())))
  const port = (listener.address() as AddressInfo).port
  // Registered without a port (RFC 8252 7.3); the request carries the port of the moment.
  const provider = new MemoryProvider(`http://127.0.0.1:${port}/callback`, METADATA)
  const who = await signIn(t, s, provider, async url => {
    const location = await consent(t, s, url)
    t.equal(`${location.origin}${location.pathname}`, `http://127.0.0.1:${port}/callback`)
    t.equal(location.searchParams.get('iss'), s.origin, 'the response names its issuer (RFC 9207)')
    t.equal(codes.length, 1, 'the browser came back to the loopback listener')
    return codes[0]!
  })
  t.equal(provider.clientInformation()?.client_secret, undefined, 'a public client: no secret')
  t.equal(who.client_id, provider.clientInformation()!.client_id)
})

t.test('DCR client with a cursor:// redirect', { skip: SKIP }, async t => {
  const s = person()
  const redirect = 'cursor://anysphere.cursor-mcp/oauth/callback'
  const provider = new MemoryProvider(redirect, { ...METADATA, client_name: 'Cursor', redirect_uris: [redirect] })
  await signIn(t, s, provider, async url => {
    const location = await consent(t, s, url, async page => {
      t.match(await page.locator('main').innerText(), 'cursor://anysphere.cursor-mcp',
        'the page says where the answer goes')
      t.match(await page.locator('main').innerText(), 'Its publisher is not verified.')
    })
    t.equal(`${location.protocol}//${location.host}${location.pathname}`, redirect)
    return location.searchParams.get('code')!
  })
})

t.test('CIMD client whose metadata document is served over HTTPS', { skip: SKIP }, async t => {
  const s = person()
  const { key, cert } = selfSigned()
  let fetched = 0
  const docServer = createHttpsServer({ key, cert }, (req, res) => {
    fetched++
    const port = (docServer.address() as AddressInfo).port
    res.writeHead(200, { 'content-type': 'application/json', 'cache-control': 'max-age=300' })
    res.end(JSON.stringify({
      client_id: `https://127.0.0.1:${port}/client.json`,
      client_name: 'Metadata agent',
      client_uri: 'https://agent.example.com',
      redirect_uris: ['http://127.0.0.1/callback'],
      token_endpoint_auth_method: 'none'
    }))
  })
  await new Promise<void>(resolve => docServer.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>(resolve => docServer.close(() => resolve())))
  const clientId = `https://127.0.0.1:${(docServer.address() as AddressInfo).port}/client.json`
  const port = await freePort()
  const provider = new MemoryProvider(`http://127.0.0.1:${port}/callback`, METADATA, { clientMetadataUrl: clientId })
  const who = await signIn(t, s, provider, async url => {
    t.equal(url.searchParams.get('client_id'), clientId, 'the SDK uses the document URL as its client_id')
    const location = await consent(t, s, url, async page => {
      const text = await page.locator('main').innerText()
      t.match(text, 'Metadata agent', 'the document\'s client_name')
      t.match(text, `127.0.0.1:${new URL(clientId).port}`, 'the host of the document\'s URL')
    })
    return location.searchParams.get('code')!
  })
  t.equal(who.client_id, clientId)
  t.equal(fetched, 1, 'fetched once: cached for the token exchange, as its max-age allows')
})

t.test('a pre-registered confidential app still signs in', { skip: SKIP }, async t => {
  const s = person()
  const developer = s.app.userSessions.sign({ sub: unique('dev'), orgRefId: unique('devorg'), entityRefIds: [] })
  const created = await s.app.inject({
    method: 'POST',
    url: '/apps',
    headers: bearer(developer),
    payload: {
      slug: unique('agent').replace(/_/g, '-'),
      name: 'Registered agent',
      publisher: 'Example Ltd',
      website_url: 'https://example.com',
      redirect_uris: [REDIRECT_URI],
      scopes: ['invoices:read', 'bills:read', 'customers:read']
    }
  })
  t.equal(created.statusCode, 201, created.body)
  const { client_id: clientId, client_secret: clientSecret } = created.json()
  const provider = new MemoryProvider(REDIRECT_URI, { ...METADATA, token_endpoint_auth_method: 'client_secret_basic' },
    { preregistered: { client_id: clientId, client_secret: clientSecret } })
  const who = await signIn(t, s, provider, async url => {
    const location = await consent(t, s, url, async page => {
      t.match(await page.locator('main').innerText(), 'By Example Ltd', 'the publisher')
    })
    return location.searchParams.get('code')!
  })
  t.equal(who.client_id, clientId)
})
