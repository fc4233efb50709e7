// The API reference (/docs) as an app developer uses it, in Debian's headless Chromium: every operation with its
// examples, and "Authorize" running the install flow (code + PKCE) so that "Try it out" calls the API as the install.
import t from 'tap'
import type { Page } from 'playwright-core'
import { browser, freePort, SKIP_WITHOUT_CHROMIUM as SKIP } from '../support/browser.js'
import { build, unique } from '../support/helper.js'
import { SAMPLE } from '../../schemas/examples.js'

type Json = Record<string, any>

// Every operation opened one by one in a browser: more than tap's 120 s on a loaded machine.
t.setTimeout(300_000)

/** A `"key": value` line of an example as Swagger UI prints it (pretty JSON), from its first primitive member. */
function leafLine (value: unknown): string | undefined {
  if (Array.isArray(value)) return value.length ? leafLine(value[0]) : undefined
  if (typeof value !== 'object' || value === null) return undefined
  for (const [k, v] of Object.entries(value)) {
    if (typeof v !== 'object' || v === null) return `"${k}": ${JSON.stringify(v)}`
    const inner = leafLine(v)
    if (inner) return inner
  }
  return undefined
}

/** The first example the document gives an operation's responses, as the line the page must show. */
function firstExampleLine (op: Json): string | undefined {
  for (const response of Object.values<Json>(op.responses)) {
    for (const media of Object.values<Json>(response.content ?? {})) {
      const value = media.example ?? Object.values<Json>(media.examples ?? {})[0]?.value
      const line = typeof value === 'string' ? undefined : leafLine(value)
      if (line) return line
    }
  }
  return undefined
}

const operationBlock = (page: Page, method: string, path: string) =>
  page.locator(`.opblock-${method}:has(.opblock-summary-path[data-path="${path}"])`).first()

t.test('/docs shows every operation with its examples, and runs the OAuth flow', { skip: SKIP }, async t => {
  const port = await freePort()
  const origin = `http://127.0.0.1:${port}`
  const app = await build(t, { PUBLIC_BASE_URL: origin })
  await app.listen({ port, host: '127.0.0.1' })
  const doc = (await app.inject({ method: 'GET', url: '/public/v1/openapi.json' })).json()

  // The developer's client for trying the API from the page: a public client with the page's redirect URI.
  const registered = await app.inject({
    method: 'POST',
    url: '/oauth/register',
    payload: {
      client_name: 'Reference page',
      redirect_uris: [`${origin}/docs/static/oauth2-redirect.html`],
      token_endpoint_auth_method: 'none',
      scope: 'invoices:read bills:read'
    }
  })
  t.equal(registered.statusCode, 201, 'client registered')
  const clientId = registered.json().client_id as string
  // The tenant of the document's examples: "Try it out" prefills it, and it must be the token's own.
  const orgRefId = SAMPLE.orgId
  const entityRefId = SAMPLE.entityId
  const userToken = app.userSessions.sign({ sub: unique('user'), orgRefId, entityRefIds: [entityRefId] })

  const context = await (await browser()).newContext({ viewport: { width: 1280, height: 900 } })
  t.teardown(() => context.close())
  await context.addCookies([{ name: 'session', value: userToken, domain: '127.0.0.1', path: '/' }])
  const page = await context.newPage()
  page.setDefaultTimeout(15_000)
  const pageErrors: string[] = []
  page.on('pageerror', e => pageErrors.push(e.message))
  // Console errors include what the Content-Security-Policy refuses (an inline style, a script).
  const consoleErrors: string[] = []
  page.on('console', m => { if (m.type() === 'error') consoleErrors.push(m.text()) })
  // The root sends a browser to the reference, which carries the API's name.
  t.equal((await page.goto(`${origin}/`))?.status(), 200)
  t.equal(page.url(), `${origin}/docs`, 'GET / leads to the reference page')
  t.equal(await page.title(), 'Marketplace gateway API reference')
  t.match(await page.locator('.topbar img').getAttribute('src') ?? '', /logo|svg/, 'with the API\'s name as the logo')
  const docs = await page.goto(`${origin}/docs`)
  t.equal(docs?.status(), 200)
  const csp = docs?.headers()['content-security-policy'] ?? ''
  t.match(csp, "script-src 'self'", 'a Content-Security-Policy')
  t.notMatch(csp, /unsafe-/, 'without unsafe-inline or unsafe-eval')
  await page.locator('.opblock').first().waitFor()
  const infoLinks = await page.evaluate(
    '[...document.querySelectorAll(".information-container a")].map(a => a.href)') as string[]
  t.notOk(infoLinks.some(href => href.split('#')[0] === `${origin}/docs`),
    'no link of the info block to the page itself')

  await t.test('every operation, each with its examples', async t => {
    const operations = Object.entries<Json>(doc.paths).flatMap(([path, item]) =>
      Object.entries<Json>(item).map(([method, op]) => ({ path, method, op })))
    t.equal(await page.locator('.opblock-tag-section .opblock').count(), operations.length, 'as many as the document')
    for (const { path, method, op } of operations) {
      const block = operationBlock(page, method, path)
      await block.locator('.opblock-summary-control').click()
      const body = block.locator('.opblock-body')
      await body.waitFor()
      const line = firstExampleLine(op)
      t.ok(line, `${method} ${path} has an example in the document`)
      await body.locator('.microlight', { hasText: line! }).first().waitFor()
      t.pass(`${method} ${path} shows ${line}`)
      await block.locator('.opblock-summary-control').click()
    }
  })

  await t.test('Authorize runs the install flow, then Try it out calls /me as the install', async t => {
    await page.locator('.auth-wrapper button.authorize').click()
    const modal = page.locator('.modal-ux')
    // Each credential says whose it is.
    const readers = ['Apps, with an install\'s access token', 'Apps, trying the API from this page',
      'Apps, at the token and revocation endpoints', 'Users of the accounting system',
      'Users of the accounting system, in a browser', 'The accounting system only']
    for (const reader of readers) {
      t.ok(await modal.getByText(reader, { exact: false }).first().isVisible(),
        `the dialog names its reader: ${reader}`)
    }
    const oauth = modal.locator('.auth-container', { hasText: 'oauth2' })
    await oauth.locator('input#client_id_authorizationCode').fill(clientId)
    await oauth.locator('label[for="invoices:read-authorizationCode-checkbox-oauth2"]').click()
    const [popup] = await Promise.all([
      context.waitForEvent('page'),
      oauth.locator('button.authorize').click()
    ])
    await popup.waitForLoadState()
    const consentUrl = new URL(popup.url())
    t.equal(consentUrl.pathname, '/oauth/authorize', 'the consent page opened')
    t.equal(consentUrl.searchParams.get('client_id'), clientId)
    t.equal(consentUrl.searchParams.get('code_challenge_method'), 'S256', 'with PKCE')
    t.match(await popup.locator('body').innerText(), 'Reference page', 'the consent page names the client')
    await popup.locator('input[type=radio]').first().check()
    await Promise.all([popup.waitForEvent('close'), popup.locator('button[value=allow]').click()])

    await oauth.locator('button', { hasText: 'Logout' }).waitFor()
    t.pass('authorized: the page holds the token')
    await modal.locator('button.close-modal').click()

    const me = operationBlock(page, 'get', '/public/v1/me')
    await me.locator('.opblock-summary-control').click()
    await me.locator('button.try-out__btn').click()
    await me.locator('button.execute').click()
    const status = me.locator('.live-responses-table tbody .response-col_status').first()
    await status.waitFor()
    t.equal((await status.innerText()).trim(), '200')
    const shown = await me.locator('.live-responses-table .microlight').first().innerText()
    t.match(JSON.parse(shown), {
      client_id: clientId,
      org_ref_id: orgRefId,
      entity_ref_id: entityRefId,
      scopes: ['invoices:read']
    }, '/me answers as the install the page authorized')
    await me.locator('.opblock-summary-control').click()

    // A list with every value as the page prefills it: an answer, not invalid_cursor.
    const invoices = operationBlock(page, 'get', '/public/v1/orgs/{orgId}/entities/{entityId}/invoices')
    await invoices.locator('.opblock-summary-control').click()
    await invoices.locator('button.try-out__btn').click()
    const [sent] = await Promise.all([
      page.waitForRequest(r => new URL(r.url()).pathname.endsWith('/invoices')),
      invoices.locator('button.execute').click()
    ])
    const query = new URL(sent.url()).searchParams
    t.equal(query.get('cursor'), null, 'no cursor is prefilled')
    t.ok(query.get('updated_since'), 'the other examples are sent')
    const listed = invoices.locator('.live-responses-table tbody .response-col_status').first()
    await listed.waitFor()
    t.equal((await listed.innerText()).trim(), '200', `GET ${sent.url()} answers 200`)
    t.match(JSON.parse(await invoices.locator('.live-responses-table .microlight').first().innerText()),
      { invoices: [], next_cursor: null }, 'the list of the tenant\'s invoices that match (none)')
    await page.screenshot({ path: '/tmp/reference-page.png' })
  })
  t.same(pageErrors, [], 'no script error')
  t.same(consoleErrors, [], 'no console error: nothing refused by the Content-Security-Policy')
})
