// Dashboard sign-in links: usable once, for 10 minutes, and only as links (docs/dashboard.md#signing-in).
import t from 'tap'
import { createSigner } from 'fast-jwt'
import { build, unique } from '../../../support/helper.js'
import { ManualClock } from '../../../support/clock.js'

type Test = Parameters<Parameters<typeof t.test>[0]>[0]

const clock = new ManualClock(Date.now())
const app = await build(t, {}, { clock })
const user = () => ({ sub: unique('dev'), orgRefId: unique('org'), entityRefIds: [unique('ent')] })
const open = (link: string) => {
  const url = new URL(link)
  return app.inject({ method: 'GET', url: url.pathname + url.search, headers: { accept: 'text/html' } })
}
const refused = (t: Test, res: Awaited<ReturnType<typeof open>>, what: string) => {
  t.equal(res.statusCode, 400, `${what}: 400`)
  t.match(res.headers['content-type'], /^text\/html; charset=utf-8/)
  t.match(res.body, 'used already, has expired or is not valid')
  t.match(res.body, 'dashboard-link', 'says how to get a new one')
  t.notOk(res.headers['set-cookie']?.toString().includes('session='), 'no session set')
}

t.test('a link signs in once: a session cookie and 303 to /dashboard', async t => {
  const u = user()
  const link = app.signInLinks.issue(u)
  t.match(link, /^http:\/\/gateway\.test\/dashboard\/sign-in\?token=/)
  const res = await open(link)
  t.equal(res.statusCode, 303)
  t.equal(res.headers.location, '/dashboard')
  const cookie = res.cookies.find(c => c.name === 'session')!
  t.ok(cookie, 'session set')
  t.match(cookie, { path: '/', httpOnly: true, sameSite: 'Lax', maxAge: 43200 })
  t.notOk(cookie.secure, 'not Secure on an http base URL')
  t.same(app.userSessions.authenticate({ headers: {}, cookies: { session: cookie.value } } as never), u,
    'a normal user session of the link\'s user')

  refused(t, await open(link), 'the second use')
})

t.test('an expired link is refused, even unused', async t => {
  const link = app.signInLinks.issue(user())
  clock.advance(10 * 60_000 + 1000)
  refused(t, await open(link), 'after 10 minutes')
})

t.test('forged, wrong-audience and malformed links are refused', async t => {
  const u = user()
  const forged = createSigner({
    key: 'x'.repeat(40),
    algorithm: 'HS256',
    aud: 'dashboard_sign_in',
    jti: 'j1',
    expiresIn: 60_000,
    clockTimestamp: clock.now()
  })({ sub: u.sub, org_ref_id: u.orgRefId, entity_ref_ids: [] })
  refused(t, await open(`http://gateway.test/dashboard/sign-in?token=${forged}`), 'another key')
  // A user session is not a link.
  const session = app.userSessions.sign(u)
  refused(t, await open(`http://gateway.test/dashboard/sign-in?token=${session}`), 'a session token')
  const noJti = createSigner({
    key: app.config.userSessionSecret,
    algorithm: 'HS256',
    aud: 'dashboard_sign_in',
    expiresIn: 60_000,
    clockTimestamp: clock.now()
  })({ sub: u.sub, org_ref_id: u.orgRefId, entity_ref_ids: [] })
  refused(t, await open(`http://gateway.test/dashboard/sign-in?token=${noJti}`), 'no jti')
  refused(t, await open('http://gateway.test/dashboard/sign-in?token=nonsense'), 'not a JWT')
})

t.test('a link is not a session: neither as the cookie nor on the user routes', async t => {
  const token = new URL(app.signInLinks.issue(user())).searchParams.get('token')!
  const page = await app.inject({ method: 'GET', url: '/dashboard/event-types', cookies: { session: token } })
  t.equal(page.statusCode, 303)
  t.equal(page.headers.location, '/dashboard/sign-in')
  const apps = await app.inject({ method: 'GET', url: '/apps', headers: { authorization: `Bearer ${token}` } })
  t.equal(apps.statusCode, 401)
})

t.test('used links are forgotten once expired; a fresh link still works once', async t => {
  const first = app.signInLinks.issue(user())
  t.equal((await open(first)).statusCode, 303)
  clock.advance(11 * 60_000)
  // The next use sweeps the expired row; the old link stays refused by its expiry.
  t.equal((await open(app.signInLinks.issue(user()))).statusCode, 303)
  refused(t, await open(first), 'the old link')
})

t.test('return_to: back to a page of the service once signed in, never to another site', async t => {
  const back = '/oauth/authorize?client_id=app_x&state=a%26b'
  const link = new URL(app.signInLinks.issue(user(), undefined, back))
  t.equal(link.searchParams.get('return_to'), back, 'the link carries it')
  const res = await open(link.toString())
  t.equal(res.statusCode, 303)
  t.equal(res.headers.location, back, 'a path of the service, as it was')
  t.ok(res.cookies.find(c => c.name === 'session'), 'signed in')

  const absolute = new URL(app.signInLinks.issue(user(), undefined, `http://gateway.test${back}`))
  t.equal((await open(absolute.toString())).headers.location, back, 'an absolute URL of its own origin, as a path')
  for (const elsewhere of ['https://evil.example/x', '//evil.example/x', '/\\evil.example/x', '/.//evil.example/x',
    'javascript:alert(1)', 'http://gateway.test:8080/x', 'http://[']) {
    const res = await open(app.signInLinks.issue(user(), undefined, elsewhere))
    t.equal(res.statusCode, 303, `${elsewhere}: still signed in`)
    t.equal(res.headers.location, '/dashboard', `${elsewhere}: to the dashboard instead`)
  }
})
