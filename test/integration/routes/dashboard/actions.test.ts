// The actions' foundation, on sign-out: a session, a same-origin request and the form's token of that session.
import t from 'tap'
import { build, unique } from '../../../support/helper.js'

type Test = Parameters<Parameters<typeof t.test>[0]>[0]

const app = await build(t)
const FORM = { 'content-type': 'application/x-www-form-urlencoded' }

/** A signed-in browser: its session, and the CSRF cookie and form token a page gave it. */
async function browserSession (sub = unique('dev')) {
  const session = app.userSessions.sign({ sub, orgRefId: unique('org'), entityRefIds: [] })
  const page = await app.inject({ method: 'GET', url: '/dashboard/event-types', cookies: { session } })
  const token = /name="_csrf" value="([^"]+)"/.exec(page.body)![1]!
  const secret = page.cookies.find(c => c.name === '_csrf')!.value
  return { session, token, secret }
}

const signOut = (cookies: Record<string, string>, body: string, headers: Record<string, string> = {}) =>
  app.inject({ method: 'POST', url: '/dashboard/sign-out', cookies, headers: { ...FORM, ...headers }, payload: body })

function refused (t: Test, res: Awaited<ReturnType<typeof signOut>>, what: string) {
  t.equal(res.statusCode, 403, `${what}: 403`)
  t.equal(res.headers['content-type'], 'text/html; charset=utf-8', `${what}: a page`)
  t.match(res.body, 'This action was refused')
  t.notOk(res.cookies.some(c => c.name === 'session'), `${what}: the session cookie is not cleared`)
  t.match(res.headers['content-security-policy'], "default-src 'none'")
}

t.test('sign-out with the page\'s token: the cookie cleared, 303 to the sign-in page', async t => {
  const b = await browserSession()
  const res = await signOut({ session: b.session, _csrf: b.secret }, `_csrf=${encodeURIComponent(b.token)}`,
    { 'sec-fetch-site': 'same-origin', origin: 'http://gateway.test' })
  t.equal(res.statusCode, 303)
  t.equal(res.headers.location, '/dashboard/sign-in')
  const cleared = res.cookies.find(c => c.name === 'session')!
  t.equal(cleared.value, '')
  t.match(cleared, { path: '/', httpOnly: true })
  t.ok(cleared.expires && cleared.expires.getTime() <= Date.now(), 'expired')
})

t.test('without Sec-Fetch-Site, a same Origin or none is accepted', async t => {
  const b = await browserSession()
  const res = await signOut({ session: b.session, _csrf: b.secret }, `_csrf=${encodeURIComponent(b.token)}`)
  t.equal(res.statusCode, 303)
})

t.test('refused with 403, changing nothing', async t => {
  const b = await browserSession()
  const cookies = { session: b.session, _csrf: b.secret }
  const body = `_csrf=${encodeURIComponent(b.token)}`
  refused(t, await signOut({ _csrf: b.secret }, body), 'no session')
  refused(t, await signOut(cookies, ''), 'no token')
  refused(t, await signOut({ session: b.session }, body), 'no CSRF cookie')
  refused(t, await signOut(cookies, '_csrf=forged'), 'a forged token')
  const other = await browserSession()
  refused(t, await signOut({ session: b.session, _csrf: other.secret }, `_csrf=${encodeURIComponent(other.token)}`),
    'another session\'s token and cookie')
  refused(t, await signOut(cookies, body, { origin: 'https://evil.example' }), 'a cross-site Origin')
  refused(t, await signOut(cookies, body, { 'sec-fetch-site': 'cross-site', origin: 'http://gateway.test' }),
    'Sec-Fetch-Site cross-site')
  refused(t, await signOut(cookies, body, { 'sec-fetch-site': 'same-site' }), 'Sec-Fetch-Site same-site')
  // The session still works.
  const page = await app.inject({ method: 'GET', url: '/dashboard/event-types', cookies: { session: b.session } })
  t.equal(page.statusCode, 200)
})

t.test('another session\'s token with this session\'s CSRF cookie is refused too', async t => {
  const a = await browserSession()
  // The same browser (one CSRF cookie), the session changed to another user's: A's token no longer fits.
  const bSession = app.userSessions.sign({ sub: unique('dev'), orgRefId: unique('org'), entityRefIds: [] })
  refused(t, await signOut({ session: bSession, _csrf: a.secret }, `_csrf=${encodeURIComponent(a.token)}`),
    'a token of another user')
})

t.test('GET on an action is not one', async t => {
  const b = await browserSession()
  const res = await app.inject({ method: 'GET', url: '/dashboard/sign-out', cookies: { session: b.session } })
  t.equal(res.statusCode, 404)
})
