// An organisation user's page of the dashboard (docs/dashboard.md): the apps connected to the entities their
// session names, in their organisation, with what each may do in plain words; Uninstall, which stops the install's
// tokens and webhooks; anyone else's install as an unknown one; the form token and same-origin checks; escaping.
import t from 'tap'
import { bearer, build, eventually, install, unique, type Installed } from '../../../support/helper.js'
import { publish, subscribe } from '../../../support/webhooks.js'
import {
  Browser, formFields, formsTo, mainText, noticeOf, registerApp, shown, subOf, tableRows, withoutTokens,
  type RegisteredApp
} from '../../../support/dashboard.js'

type Test = Parameters<Parameters<typeof t.test>[0]>[0]
type Response = Awaited<ReturnType<Browser['get']>>

// A subscription may name a loopback target (nothing is delivered to it here).
const app = await build(t, { WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true' })
const developer = app.userSessions.sign({ sub: unique('dev'), orgRefId: unique('devorg'), entityRefIds: [] })
const CAPTION = 'Connected apps'

/** An organisation user signed in to the dashboard, with a browser of their own. */
const orgUser = (orgRefId: string, entityRefIds: string[], sub = unique('user')) =>
  new Browser(app, app.userSessions.sign({ sub, orgRefId, entityRefIds }))

const me = (i: Installed) => app.inject({ method: 'GET', url: '/public/v1/me', headers: bearer(i.accessToken) })

interface InstallRow { status: string, created_at: Date, last_used_at: Date | null }
const installRow = async (i: Installed) => (await app.db.query<InstallRow>(
  'select status, created_at, last_used_at from installs where install_id = $1', [i.installId]))[0]!

const uninstallPath = (i: Pick<Installed, 'installId'>) => `/dashboard/connections/${i.installId}/uninstall`

function isPage (t: Test, res: Response, status: number, what: string) {
  t.equal(res.statusCode, status, `${what}: ${status}`)
  t.equal(res.headers['content-type'], 'text/html; charset=utf-8', `${what}: a page`)
  t.equal(res.headers['cache-control'], 'no-store', `${what}: not stored`)
}

/** An organisation with two entities of its user's and one not; apps installed in and around them. */
async function organisation () {
  const org = unique('org')
  const [e1, e2, e3] = [unique('ent'), unique('ent'), unique('ent')]
  const ledger = await registerApp(app, developer, { name: 'Ledger Sync', scopes: ['invoices:read', 'bills:read'] })
  const payroll = await registerApp(app, developer, {
    name: 'Payroll <b>Pro</b>', scopes: ['customers:read', 'workOrder:create']
  })
  const elsewhere = await registerApp(app, developer, { name: 'Elsewhere App' })
  const at = (a: RegisteredApp, orgRefId: string, entityRefId: string, scopes?: string[]) =>
    install(app, { app: a, orgRefId, entityRefId, scopes })
  const inE1 = await at(ledger, org, e1)
  const inE2 = await at(payroll, org, e2, ['customers:read', 'workOrder:create'])
  const otherEntity = await at(elsewhere, org, e3)
  const otherOrg = await at(elsewhere, unique('org'), e1)
  const gone = await at(elsewhere, org, e1, ['invoices:read'])
  const removed = await app.inject({
    method: 'DELETE', url: `/installs/${gone.installId}`, headers: bearer(gone.userToken)
  })
  if (removed.statusCode !== 200) throw new Error(`uninstall: ${removed.statusCode} ${removed.body}`)
  return { org, e1, e2, e3, inE1, inE2, otherEntity, otherOrg, gone, user: orgUser(org, [e1, e2]) }
}

t.test("the connections page: the active installs of the session's organisation and entities, scopes in words",
  async t => {
    const o = await organisation()
    t.equal((await me(o.inE2)).statusCode, 200, 'one of them used')
    const used = await eventually(async () => (await installRow(o.inE2)).last_used_at, { what: 'the use noted' })

    const landing = await o.user.get('/dashboard')
    t.equal(landing.headers.location, '/dashboard/connections', 'a user without apps lands here')
    const page = await o.user.get('/dashboard/connections')
    isPage(t, page, 200, 'the connections page')
    t.match(page.body, /aria-current="page"[^>]*>Connections</, 'Connections is the current section')
    t.match(mainText(page.body),
      `The apps connected to organisation ${o.org}, entities ${o.e1}, ${o.e2}, and what each may do.`)
    t.same(tableRows(page.body, CAPTION), [
      ['Ledger Sync', o.e1, 'Read your invoices Read your bills', subOf(o.inE1.userToken),
        shown((await installRow(o.inE1)).created_at), 'never', 'Uninstall Ledger Sync from ' + o.e1],
      ['Payroll <b>Pro</b>', o.e2, 'Read your customers Create your work orders', subOf(o.inE2.userToken),
        shown((await installRow(o.inE2)).created_at), shown(used!), `Uninstall Payroll <b>Pro</b> from ${o.e2}`]
    ], "only the active installs of the user's entities, oldest first; not another entity's or organisation's")
    t.same(formsTo(page.body, uninstallPath(o.inE1)).map(f => Object.keys(formFields(f))), [['_csrf']],
      'each with its Uninstall form')
    t.equal(formsTo(page.body, uninstallPath(o.otherEntity)).length, 0)
    t.equal(formsTo(page.body, uninstallPath(o.gone)).length, 0)

    const oneEntity = await orgUser(o.org, [o.e3]).get('/dashboard/connections')
    t.same(tableRows(oneEntity.body, CAPTION)!.map(r => r[0]), ['Elsewhere App'], 'another user, another entity')
    const nothing = await orgUser(o.org, [unique('ent')]).get('/dashboard/connections')
    t.match(mainText(nothing.body), `No app is connected to organisation ${o.org}, entity`)
    t.equal(tableRows(nothing.body, CAPTION), undefined)
    const noEntity = await orgUser(o.org, []).get('/dashboard/connections')
    isPage(t, noEntity, 200, 'a session without entities')
    t.match(mainText(noEntity.body), `Your session names no entity of organisation ${o.org}`)
  })

t.test("Uninstall: the install's tokens and webhooks stop, and the page says so once", async t => {
  const o = await organisation()
  const hook = await subscribe(app, o.inE1, { target_url: 'https://127.0.0.1:9/hooks' })
  const page = await o.user.get('/dashboard/connections')
  const done = await o.user.submit(page, uninstallPath(o.inE1))
  t.equal(done.statusCode, 303)
  t.equal(done.headers.location, '/dashboard/connections')
  const after = await o.user.follow(done)
  t.equal(noticeOf(after.body),
    `Ledger Sync is uninstalled from ${o.e1}: its access tokens stopped working and its webhooks stopped.`)
  t.same(tableRows(after.body, CAPTION)!.map(r => r[0]), ['Payroll <b>Pro</b>'], 'no longer connected')
  t.equal(noticeOf((await o.user.get('/dashboard/connections')).body), undefined, 'said once')

  t.equal((await installRow(o.inE1)).status, 'uninstalled')
  const refused = await me(o.inE1)
  t.equal(refused.statusCode, 401, 'its access token is refused')
  t.match(refused.json(), { error: 'invalid_token', message: 'Install is not active.' })
  const refresh = await app.inject({
    method: 'POST',
    url: '/oauth/token',
    payload: {
      grant_type: 'refresh_token',
      refresh_token: o.inE1.refreshToken,
      client_id: o.inE1.clientId,
      client_secret: o.inE1.clientSecret
    }
  })
  t.equal(refresh.statusCode, 400, 'its refresh token too')
  t.equal(refresh.json().error, 'invalid_grant')
  await publish(app, o.inE1)
  const [sent] = await app.db.query<{ n: number }>(
    'select count(*)::int as n from webhook_deliveries where subscription_id = $1', [hook.id])
  t.equal(sent!.n, 0, 'an event of its tenant is not delivered to it')
  t.equal((await me(o.inE2)).statusCode, 200, 'the other connection still works')
})

t.test("another entity's or organisation's install is the same 404 as an unknown one, and stays", async t => {
  const o = await organisation()
  const token = await o.user.token()
  const unknown = await o.user.post(uninstallPath({ installId: 'ins_unknown' }), { _csrf: token })
  isPage(t, unknown, 404, 'an unknown install')
  t.match(mainText(unknown.body), 'No active install with this id in your organisation.')
  for (const [i, what] of [[o.otherEntity, 'an entity of the organisation outside the session'],
    [o.otherOrg, 'an entity of the same name in another organisation'], [o.gone, 'an install uninstalled before']
  ] as const) {
    const before = await installRow(i)
    const res = await o.user.post(uninstallPath(i), { _csrf: token })
    isPage(t, res, 404, what)
    t.equal(withoutTokens(res.body), withoutTokens(unknown.body), `${what}: as an unknown id`)
    t.notOk(res.cookies.some(c => c.name === 'notice'), `${what}: no notice`)
    t.same(await installRow(i), before, `${what}: unchanged`)
  }
  t.equal((await me(o.otherEntity)).statusCode, 200, 'their tokens still work')
  t.equal((await me(o.otherOrg)).statusCode, 200)
})

t.test('Uninstall needs a session, a same-origin request and the form token of that session; else 403 and nothing',
  async t => {
    const o = await organisation()
    const page = await o.user.get('/dashboard/connections')
    const url = uninstallPath(o.inE2)
    const token = formFields(formsTo(page.body, url)[0]!)._csrf!
    const other = orgUser(o.org, [o.e2])
    const otherToken = await other.token()
    const refused = (res: Response, what: string) => {
      isPage(t, res, 403, what)
      t.match(mainText(res.body), 'This action was refused', what)
      t.match(mainText(res.body), 'Nothing was changed.', what)
    }
    refused(await o.user.post(url, {}), 'no token')
    refused(await o.user.post(url, { _csrf: 'forged' }), 'a forged token')
    refused(await o.user.post(url, { _csrf: otherToken }), "another session's token")
    const switched = new Browser(app, other.session)
    Object.assign(switched.cookies, { ...o.user.cookies, session: other.session })
    refused(await switched.post(url, { _csrf: token }), "this browser's token, another user signed in")
    refused(await o.user.post(url, { _csrf: token }, { origin: 'https://evil.example' }), 'another origin')
    refused(await o.user.post(url, { _csrf: token }, { 'sec-fetch-site': 'cross-site' }), 'cross-site')
    refused(await o.user.post(url, { _csrf: token }, { 'sec-fetch-site': 'same-site', origin: 'http://gateway.test' }),
      'a sibling site')
    const anonymous = await app.inject({
      method: 'POST',
      url,
      headers: { 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'same-origin' },
      cookies: { _csrf: o.user.cookies._csrf! },
      payload: new URLSearchParams({ _csrf: token }).toString()
    })
    refused(anonymous, 'no session')
    t.match(mainText(anonymous.body), 'Sign in to the dashboard first.')
    const signedOut = await app.inject({
      method: 'GET', url: '/dashboard/connections', headers: { accept: 'text/html' }
    })
    t.equal(signedOut.statusCode, 303, 'the page without a session')
    t.equal(signedOut.headers.location, '/dashboard/sign-in')

    t.equal((await installRow(o.inE2)).status, 'active', 'nothing changed')
    t.equal((await me(o.inE2)).statusCode, 200)
    t.equal((await o.user.post(url, { _csrf: token })).statusCode, 303, 'with the token, from the page: uninstalled')
    t.equal((await installRow(o.inE2)).status, 'uninstalled')
  })

t.test('what an app or an installing user wrote is shown as text', async t => {
  const o = await organisation()
  const named = await registerApp(app, developer, { name: '<script>alert(1)</script>' })
  await app.db.query(
    `insert into installs (install_id, client_id, org_ref_id, entity_ref_id, scopes, installed_by)
     values ($1, $2, $3, $4, array['invoices:read'], '<img src=x onerror=alert(2)>')`,
    [unique('ins'), named.clientId, o.org, o.e2])
  const page = await o.user.get('/dashboard/connections')
  t.notMatch(page.body, /<script|<img|<b>/i, 'no markup of theirs')
  t.match(page.body, '&lt;script&gt;alert(1)&lt;/script&gt;')
  t.match(page.body, '&lt;img src=x onerror=alert(2)&gt;')
  t.same(tableRows(page.body, CAPTION)!.map(r => [r[0], r[3]]).at(-1),
    ['<script>alert(1)</script>', '<img src=x onerror=alert(2)>'], 'as text')
  const after = await o.user.follow(await o.user.submit(page, uninstallPath(o.inE2)))
  t.equal(noticeOf(after.body),
    `Payroll <b>Pro</b> is uninstalled from ${o.e2}: its access tokens stopped working and its webhooks stopped.`)
  t.notMatch(after.body, /<script|<img|<b>/i)
})
