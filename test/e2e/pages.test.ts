// Real-browser checks of the two HTML pages (consent page, /docs) with Debian's headless Chromium.
import { createServer, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import t from 'tap'
import { AxeBuilder } from '@axe-core/playwright'
import type { BrowserContext, Page, Response } from 'playwright-core'
import type { AppInstance } from '../../app.js'
import { browser, freePort, SKIP_WITHOUT_CHROMIUM as SKIP } from '../support/browser.js'
import { bearer, build, pkcePair, REDIRECT_URI, unique } from '../support/helper.js'

// Nine browser tests, each with an app of its own over HTTP: more than tap's 120 s on a loaded machine.
t.setTimeout(300_000)

const APP_NAME = '<img src=x onerror=alert(1)>Evil & "Co"'
/** axe-core's rules of WCAG 2.2 level AA (and the levels below it). */
const WCAG_22_AA = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa']
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
async function serve (t: Test, env: Record<string, string> = {}): Promise<Served> {
  const port = await freePort()
  const origin = `http://127.0.0.1:${port}`
  const app = await build(t, { PUBLIC_BASE_URL: origin, ...env })
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

/** A user with three entities, and an authorization request that names none: the person picks one. */
async function pickerRequest (t: Test, s: Served, javaScriptEnabled = true) {
  const entities = [unique('ent'), unique('ent'), unique('ent')]
  const token = s.app.userSessions.sign({ sub: unique('user'), orgRefId: s.orgRefId, entityRefIds: entities })
  const context = await (await browser()).newContext({ javaScriptEnabled, viewport: { width: 390, height: 844 } })
  t.teardown(() => context.close())
  await context.addCookies([{ name: 'session', value: token, domain: '127.0.0.1', path: '/' }])
  const page = await context.newPage()
  page.setDefaultTimeout(10_000)
  const params = { ...authorizeParams(s, pkcePair().challenge) } as Record<string, string | undefined>
  delete params.org_ref_id
  delete params.entity_ref_id
  const url = `${s.origin}/oauth/authorize?` + new URLSearchParams(params as Record<string, string>).toString()
  return { page, entities, url }
}

t.test('consent page: the person picks the entity, by keyboard, without JavaScript, on a phone', { skip: SKIP },
  async t => {
    const s = await serve(t)
    const { page, entities, url } = await pickerRequest(t, s, false)
    t.equal((await page.goto(url))?.status(), 200)
    t.equal(await page.getByRole('radio').count(), 3, 'one choice per entity of the session')
    t.equal(await page.getByRole('radio', { checked: true }).count(), 0, 'none chosen for the person')
    const text = await page.locator('main').innerText()
    t.match(text, 'app.example.com', 'the redirect host')
    t.match(text, 'You can revoke this access at any time', 'that access can be revoked')
    const scroll = await page.evaluate('[document.documentElement.scrollWidth, window.innerWidth]') as number[]
    t.ok(scroll[0]! <= scroll[1]!, `no horizontal scroll at 390 px (${scroll.join(' <= ')})`)
    await page.screenshot({ path: '/tmp/consent-390.png', fullPage: true })

    // Allow with nothing chosen: the browser itself refuses to submit (a required radio group), no request goes out.
    let posts = 0
    page.on('request', r => { if (r.method() === 'POST') posts++ })
    await page.getByRole('button', { name: 'Allow' }).click()
    t.equal(posts, 0, 'nothing is posted until an entity is chosen')

    // Keyboard only: Tab to the second entity's radio group, arrow to it, Tab on to Allow, Enter.
    const focused = () => page.evaluate('document.activeElement && (document.activeElement.value || ' +
      'document.activeElement.textContent)') as Promise<string | null>
    await page.locator('body').focus()
    for (let i = 0; i < 20 && !entities.includes((await focused()) ?? ''); i++) await page.keyboard.press('Tab')
    t.ok(entities.includes((await focused()) ?? ''), 'the entity choices are reachable by Tab')
    await page.keyboard.press('Space')
    await page.keyboard.press('ArrowDown')
    t.ok(await page.getByRole('radio', { name: entities[1] }).isChecked(), 'chosen by keyboard')
    // A button's `value` is what focused() reads first: the Allow button's is `allow`.
    for (let i = 0; i < 20 && (await focused())?.trim() !== 'allow'; i++) await page.keyboard.press('Tab')
    const decision = page.waitForResponse(isDecisionPost(s))
    await page.keyboard.press('Enter')
    const res = await decision
    t.equal(res.status(), 302, 'Allow by keyboard')
    const code = new URL(res.headers().location!).searchParams.get('code')
    t.match(code, /^mac_/)
    const installs = await s.app.inject({
      method: 'GET',
      url: `/orgs/${s.orgRefId}/entities/${entities[1]}/installs`,
      headers: bearer(s.app.userSessions.sign({ sub: unique('user'), orgRefId: s.orgRefId, entityRefIds: entities }))
    })
    t.equal(installs.json().installs.length, 1, 'installed into the chosen entity')
  })

t.test('consent page: errors are pages, and a visitor with no session is told how to sign in', { skip: SKIP },
  async t => {
    const s = await serve(t)
    const { page } = await signedInPage(t, s)
    const params = new URLSearchParams({ ...authorizeParams(s, pkcePair().challenge), client_id: 'app_nope' })
    const unknown = await page.goto(`${s.origin}/oauth/authorize?${params.toString()}`)
    t.equal(unknown?.status(), 400)
    t.match(unknown?.headers()['content-type'], /^text\/html/)
    t.match(unknown?.headers()['content-security-policy'], "default-src 'none'")
    t.match(await page.locator('main').innerText(), /Unknown client_id\.[\s\S]*invalid_request/)

    const other = new URLSearchParams({ ...authorizeParams(s, pkcePair().challenge), org_ref_id: 'someone-else' })
    const forbidden = await page.goto(`${s.origin}/oauth/authorize?${other.toString()}`)
    t.equal(forbidden?.status(), 403)
    t.match(await page.locator('main').innerText(), 'You do not belong to this organisation or entity.')

    const anonymous = await (await browser()).newContext()
    t.teardown(() => anonymous.close())
    const visitor = await anonymous.newPage()
    const noSession = await visitor.goto(authorizeUrl(s, pkcePair().challenge))
    t.equal(noSession?.status(), 401)
    t.match(await visitor.locator('h1').innerText(), 'Sign in to continue')
    t.match(await visitor.locator('main').innerText(), 'no accounting system to sign in to')

    // A program still gets JSON.
    const json = await s.app.inject({ method: 'GET', url: '/oauth/authorize?client_id=app_nope' })
    t.same(json.json(), { error: 'invalid_token', message: 'Missing user session.' })
  })

/** axe-core with the WCAG 2.2 AA rules at 1280 px and at 320 px, where nothing may be wider than the screen. */
async function checkAccessible (t: Test, page: Page, what: string): Promise<void> {
  for (const width of [1280, 320]) {
    await page.setViewportSize({ width, height: 800 })
    const { violations } = await new AxeBuilder({ page }).withTags(WCAG_22_AA).analyze()
    t.same(violations.map(v => `${v.id}: ${v.nodes.map(n => n.target.join(' ')).join(', ')}`), [],
      `${what} at ${width} px: no axe violation`)
    const scroll = await page.evaluate('document.documentElement.scrollWidth') as number
    t.ok(scroll <= width, `${what} at ${width} px: no horizontal scroll (${scroll})`)
  }
  await page.setViewportSize({ width: 1280, height: 900 })
}

t.test('consent page: a visitor with no session signs in from it by keyboard and comes back to the request',
  { skip: SKIP }, async t => {
    const s = await serve(t)
    const context = await (await browser()).newContext({ viewport: { width: 1280, height: 900 } })
    t.teardown(() => context.close())
    const page = await context.newPage()
    page.setDefaultTimeout(10_000)
    const problems: string[] = []
    page.on('pageerror', e => problems.push(`page error: ${e.message}`))
    page.on('console', m => {
      // The sign-in page's own status (401) is the document's, not a failed resource.
      if (m.type() === 'error' && !/status of 401/.test(m.text())) problems.push(`console: ${m.text()}`)
    })
    const target = authorizeUrl(s, pkcePair().challenge)

    t.equal((await page.goto(target))?.status(), 401)
    t.equal(await page.getByRole('heading', { level: 1 }).innerText(), 'Sign in to continue')
    const link = page.getByRole('link', { name: `Sign in as dev-user of ${s.orgRefId}` })
    const linkHref = (await link.getAttribute('href'))!
    const href = new URL(linkHref)
    t.equal(`${href.origin}${href.pathname}`, `${s.origin}/dashboard/sign-in`, 'a one-time sign-in link')
    t.equal(`${s.origin}${href.searchParams.get('return_to')}`, target, 'that returns to this authorization request')
    await checkAccessible(t, page, 'the sign-in step of the consent page')
    await page.screenshot({ path: '/tmp/consent-sign-in.png', fullPage: true })

    // Keyboard only: Tab to the link, Enter; the consent page of the same request opens, signed in.
    let reached = false
    for (let i = 0; i < 20 && !reached; i++) {
      await page.keyboard.press('Tab')
      reached = await page.evaluate('document.activeElement?.getAttribute("href")') === linkHref
    }
    t.ok(reached, 'the sign-in link is reachable by Tab')
    // The page is at the request's URL already: wait for the request again, answered with the consent page.
    const [back] = await Promise.all([
      page.waitForResponse(r => r.url() === target && r.request().isNavigationRequest()),
      page.keyboard.press('Enter')
    ])
    // Until the new document commits, the old one (the sign-in step) is what the page holds.
    await page.getByRole('button', { name: 'Allow' }).waitFor()
    t.equal(back.status(), 200, 'the authorization request again, signed in')
    t.equal(page.url(), target, 'back on the authorization request')
    t.equal(await page.title(), `Install ${APP_NAME}?`, 'the consent page, signed in')
    t.match(await page.locator('main').innerText(), 'signed in as dev-user')
    t.ok(await page.getByRole('radio', { name: s.entityRefId }).isChecked(), 'in the entity the request names')
    await checkAccessible(t, page, 'the consent page after signing in')

    const decision = page.waitForResponse(isDecisionPost(s))
    page.waitForRequest(r => r.url().startsWith(`${APP_ORIGIN}/`)).catch(() => undefined)
    await page.getByRole('button', { name: 'Allow' }).click()
    const res = await decision
    t.equal(res.status(), 302, 'allowed')
    t.match(new URL(res.headers().location!).searchParams.get('code'), /^mac_/, 'the app gets a code')
    t.same(problems, [], 'no script or console error')
  })

t.test('consent page: with LOGIN_URL, a visitor with no session goes there and comes back', { skip: SKIP },
  async t => {
    const s = await serve(t, { LOGIN_URL: 'https://accounts.example.com/login' })
    const context = await (await browser()).newContext()
    t.teardown(() => context.close())
    const page = await context.newPage()
    const target = authorizeUrl(s, pkcePair().challenge)
    const sent = page.waitForRequest(r => r.url().startsWith('https://accounts.example.com/'))
    page.goto(target).catch(() => undefined) // the login page is not reachable here; the request is what counts
    const login = new URL((await sent).url())
    t.equal(`${login.origin}${login.pathname}`, 'https://accounts.example.com/login')
    t.equal(login.searchParams.get('return_to'), target, 'return_to brings the person back to this request')
  })
