// Real-browser checks of the two HTML pages (consent page, /docs) with Debian's headless Chromium.
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import t from 'tap'
import type { BrowserContext, Page, Response } from 'playwright-core'
import type { AppInstance } from '../app.js'
import { browser, freePort, SKIP_WITHOUT_CHROMIUM as SKIP } from './browser.js'
import { bearer, build, pkcePair, REDIRECT_URI, unique } from './helper.js'

const APP_NAME = '<img src=x onerror=alert(1)>Evil & "Co"'
const APP_ORIGIN = 'https://app.example.com'

type Test = Parameters<Parameters<typeof t.test>[0]>[0]

interface Served {
  app: AppInstance
  origin: string
  clientId: string
  clientSecret: string
  orgRefId: string
  entityRefId: string
  userToken: string
}

/** The app over real HTTP on 127.0.0.1, with its public origin set to where it listens, and one registered app. */
async function serve (t: Test): Promise<Served> {
  const port = await freePort()
  const origin = `http://127.0.0.1:${port}`
  const app = await build(t, { PUBLIC_BASE_URL: origin })
  await app.listen({ port, host: '127.0.0.1' })

  const ownerToken = app.userSessions.sign({ sub: unique('dev'), orgRefId: unique('devorg'), entityRefIds: [] })
  const res = await app.inject({
    method: 'POST',
    url: '/apps',
    headers: { ...bearer(ownerToken), 'content-type': 'application/json' },
    payload: JSON.stringify({
      slug: unique('app').replace(/_/g, '-'),
      name: APP_NAME,
      redirect_uris: [REDIRECT_URI],
      scopes: ['invoices:read', 'bills:read', 'customers:read']
    })
  })
  t.equal(res.statusCode, 201, 'app registered')
  const created = res.json()
  const orgRefId = unique('org')
  const entityRefId = unique('ent')
  const userToken = app.userSessions.sign({ sub: unique('user'), orgRefId, entityRefIds: [entityRefId] })
  return {
    app,
    origin,
    clientId: created.client_id,
    clientSecret: created.client_secret,
    orgRefId,
    entityRefId,
    userToken
  }
}

/** A fresh browser context holding the user's session cookie for 127.0.0.1, and a page that fails on any dialog. */
async function signedInPage (
  t: Test,
  s: Served
): Promise<{ context: BrowserContext, page: Page, dialogs: string[], appRequests: string[] }> {
  const context = await (await browser()).newContext()
  t.teardown(() => context.close())
  await context.addCookies([{ name: 'session', value: s.userToken, domain: '127.0.0.1', path: '/' }])
  // Every request the browser starts towards the app's redirect URI. It cannot load here (no network) and it cannot
  // be answered with page.route either: Playwright does not hand the hops of a redirect to route handlers, so the
  // browser ends on its own error page. The request event fires before the network, with the full URL.
  const appRequests: string[] = []
  context.on('request', r => {
    if (r.url().startsWith(`${APP_ORIGIN}/`)) appRequests.push(r.url())
  })
  const page = await context.newPage()
  page.setDefaultTimeout(10_000)
  const dialogs: string[] = []
  page.on('dialog', d => {
    dialogs.push(`${d.type()}: ${d.message()}`)
    d.dismiss().catch(() => {})
  })
  return { context, page, dialogs, appRequests }
}

/** The parameters of the authorization request every test here makes. */
const authorizeParams = (s: Served, challenge: string): Record<string, string> => ({
  client_id: s.clientId,
  redirect_uri: REDIRECT_URI,
  scope: 'invoices:read bills:read',
  state: 's1',
  code_challenge: challenge,
  code_challenge_method: 'S256',
  org_ref_id: s.orgRefId,
  entity_ref_id: s.entityRefId
})

const authorizeUrl = (s: Served, challenge: string): string =>
  `${s.origin}/oauth/authorize?` + new URLSearchParams(authorizeParams(s, challenge)).toString()

const isDecisionPost =
  (s: Served) =>
    (r: Response): boolean =>
      r.url() === `${s.origin}/oauth/authorize` && r.request().method() === 'POST'

/** Asserts the decision answered 302; otherwise shows its body (and the caller stops: no redirect will come). */
async function redirected (t: Test, res: Response): Promise<boolean> {
  const body = res.status() === 302 ? '' : ` ${await res.text().catch(() => '')}`
  return t.equal(res.status(), 302, `the decision redirects${body}`)
}

/** Opens the consent page and checks what a person sees on it. */
async function openConsent (
  t: Test,
  s: Served,
  page: Page,
  dialogs: string[],
  challenge: string,
  screenshot?: string
): Promise<void> {
  const res = await page.goto(authorizeUrl(s, challenge))
  t.equal(res?.status(), 200, 'consent page answers 200')
  t.match(res?.headers()['content-type'], /^text\/html/)

  t.equal(await page.title(), `Install ${APP_NAME}?`, 'the title shows the app name as literal text')
  const heading = page.getByRole('heading', { level: 1 })
  t.equal(
    await heading.innerText(),
    `${APP_NAME} wants access to your accounting data`,
    'the heading shows the name as text'
  )
  t.equal(await page.locator('h1 strong').first().innerText(), APP_NAME)
  t.equal(await page.locator('img').count(), 0, 'the name created no img element')
  t.ok(await page.getByRole('radio', { name: s.entityRefId }).isChecked(), 'the named entity is preselected')
  t.ok(await page.getByText(s.orgRefId, { exact: true }).isVisible(), 'the organisation is shown')
  for (const words of ['Read your invoices', 'Read your bills']) {
    t.ok(await page.getByRole('listitem').filter({ hasText: words }).isVisible(), `scope in plain words: ${words}`)
  }
  t.equal(await page.getByRole('listitem').count(), 2, 'only the requested scopes are listed')
  t.ok(await page.getByRole('button', { name: 'Allow' }).isVisible(), 'Allow button')
  t.ok(await page.getByRole('button', { name: 'Deny' }).isVisible(), 'Deny button')
  if (screenshot) await page.screenshot({ path: screenshot, fullPage: true })
  t.same(dialogs, [], 'no dialog fired')
}

t.test(
  'consent page: a person allows, the app gets a code that exchanges for a working token',
  { skip: SKIP },
  async t => {
    const s = await serve(t)
    const { page, dialogs, appRequests } = await signedInPage(t, s)
    const { verifier, challenge } = pkcePair()
    await openConsent(t, s, page, dialogs, challenge, '/tmp/consent.png')

    const decision = page.waitForResponse(isDecisionPost(s))
    const arrived = page.waitForRequest(r => r.url().startsWith(`${APP_ORIGIN}/`))
    arrived.catch(() => undefined) // left pending when the decision fails; the context's close rejects it
    await page.getByRole('button', { name: 'Allow' }).click()
    if (!(await redirected(t, await decision))) return
    await arrived
    await page.waitForLoadState()
    t.equal(appRequests.length, 1, 'the browser went to the app once')
    const back = new URL(appRequests[0]!)
    t.equal(`${back.origin}${back.pathname}`, REDIRECT_URI)
    const code = back.searchParams.get('code')
    t.match(code, /^mac_/, 'a code')
    t.equal(back.searchParams.get('state'), 's1')
    t.equal(back.searchParams.get('iss'), s.origin, 'the issuer is the public origin')
    t.equal(back.searchParams.get('error'), null)
    t.same(dialogs, [], 'no dialog fired')

    const tokens = await s.app.inject({
      method: 'POST',
      url: '/oauth/token',
      headers: { 'content-type': 'application/json' },
      payload: JSON.stringify({
        grant_type: 'authorization_code',
        code,
        redirect_uri: REDIRECT_URI,
        code_verifier: verifier,
        client_id: s.clientId,
        client_secret: s.clientSecret
      })
    })
    t.equal(tokens.statusCode, 200, tokens.body)
    const me = await s.app.inject({ method: 'GET', url: '/public/v1/me', headers: bearer(tokens.json().access_token) })
    t.equal(me.statusCode, 200, me.body)
    t.match(me.json(), {
      client_id: s.clientId,
      org_ref_id: s.orgRefId,
      entity_ref_id: s.entityRefId,
      scopes: ['invoices:read', 'bills:read']
    })
  }
)

t.test('consent page: a person denies, the app gets access_denied', { skip: SKIP }, async t => {
  const s = await serve(t)
  const { page, dialogs, appRequests } = await signedInPage(t, s)
  await openConsent(t, s, page, dialogs, pkcePair().challenge)

  const decision = page.waitForResponse(isDecisionPost(s))
  const arrived = page.waitForRequest(r => r.url().startsWith(`${APP_ORIGIN}/`))
  arrived.catch(() => undefined) // left pending when the decision fails; the context's close rejects it
  await page.getByRole('button', { name: 'Deny' }).click()
  if (!(await redirected(t, await decision))) return
  await arrived
  t.equal(appRequests.length, 1)
  const back = new URL(appRequests[0]!)
  t.equal(`${back.origin}${back.pathname}`, REDIRECT_URI)
  t.equal(back.searchParams.get('error'), 'access_denied')
  t.equal(back.searchParams.get('state'), 's1')
  t.equal(back.searchParams.get('code'), null, 'no code')
  t.same(dialogs, [])
})

/** Another web origin on 127.0.0.1 serving a page that auto-submits an Allow to the gateway. */
async function attackerSite (t: Test, s: Served): Promise<number> {
  const { challenge } = pkcePair()
  const fields = { ...authorizeParams(s, challenge), decision: 'allow' }
  const inputs = Object.entries(fields)
    .map(([k, v]) => `<input type="hidden" name="${k}" value="${v}">`)
    .join('')
  const html = `<!doctype html><title>Win a prize</title><body onload="document.forms[0].submit()">
    <form method="post" action="${s.origin}/oauth/authorize">${inputs}</form></body>`
  const server: Server = createServer((_req, res) => {
    res.writeHead(200, { 'content-type': 'text/html' }).end(html)
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>(resolve => server.close(() => resolve())))
  return (server.address() as AddressInfo).port
}

t.test('a form post from another origin is refused and the app never gets a code', { skip: SKIP }, async t => {
  const s = await serve(t)
  const evilPort = await attackerSite(t, s)

  // Same site, other origin (127.0.0.1 on another port): SameSite=Lax cookies are sent, since ports do not make
  // sites differ. The session is valid, so only the gateway's own check stands between the post and a code: 403.
  t.test('same-site, cross-origin: the cookie is sent, the post is forbidden', async t => {
    const { page, dialogs, appRequests } = await signedInPage(t, s)
    const decision = page.waitForResponse(isDecisionPost(s))
    await page.goto(`http://127.0.0.1:${evilPort}/`)
    const res = await decision
    t.equal(res.status(), 403)
    t.match(res.headers()['content-type'], /^text\/html/, 'a page for the person, not JSON')
    t.match(await res.text(), 'Cross-site form submissions are not accepted.')
    await page.waitForLoadState()
    t.equal(page.url(), `${s.origin}/oauth/authorize`, 'the browser stayed on the refusal')
    t.same(appRequests, [], 'no request reached the app')
    t.same(dialogs, [])
  })

  // Cross site (localhost is another site than 127.0.0.1): whether Chromium attaches the cookie depends on its
  // SameSite defaults (Lax by default, except a short "Lax+POST" window for fresh cookies without SameSite).
  // Without the cookie the answer is 401 (no session); with it, 403 (cross-site). Never a redirect with a code.
  t.test('cross-site: refused with 401 or 403', async t => {
    const { page, appRequests } = await signedInPage(t, s)
    const decision = page.waitForResponse(isDecisionPost(s))
    await page.goto(`http://localhost:${evilPort}/`)
    const res = await decision
    t.ok([401, 403].includes(res.status()), `refused (${res.status()})`)
    t.match(await res.text(), res.status() === 401 ? 'invalid_token' : 'forbidden')
    await page.waitForLoadState()
    t.same(appRequests, [], 'no request reached the app')
  })
})

t.test('/docs renders the operations in Swagger UI', { skip: SKIP }, async t => {
  const s = await serve(t)
  const context = await (await browser()).newContext({ viewport: { width: 1280, height: 900 } })
  t.teardown(() => context.close())
  const page = await context.newPage()
  page.setDefaultTimeout(15_000)
  const pageErrors: string[] = []
  page.on('pageerror', e => pageErrors.push(e.message))
  const res = await page.goto(`${s.origin}/docs`)
  t.equal(res?.status(), 200)
  // Swagger UI puts zero-width spaces before each slash of a path; data-path holds it verbatim.
  const me = page.locator('.opblock-summary-path[data-path="/public/v1/me"]')
  await me.waitFor({ state: 'visible' })
  t.equal((await me.innerText()).replace(/\u200b/g, ''), '/public/v1/me', 'the operation is shown')
  const { info } = (await s.app.inject({ method: 'GET', url: '/public/v1/openapi.json' })).json()
  t.match(await page.locator('.info .title').innerText(), info.title, 'the document title is shown')
  await page.screenshot({ path: '/tmp/docs.png' })
  t.same(pageErrors, [], 'no script error')
})
