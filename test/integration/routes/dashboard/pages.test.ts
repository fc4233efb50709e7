// The dashboard's pages: headers on every one, where a signed-in user lands, the sign-in and 404 pages, the event
// types, escaping; and the consent page on the same layout.
import t from 'tap'
import { build, bearer, unique, REDIRECT_URI, pkcePair } from '../../../support/helper.js'
import { eventCatalog } from '../../../../schemas/webhooks.js'

type Test = Parameters<Parameters<typeof t.test>[0]>[0]

const app = await build(t)
const signIn = (sub = unique('dev')) =>
  app.userSessions.sign({ sub, orgRefId: unique('org'), entityRefIds: [unique('ent')] })
const get = (url: string, session?: string) =>
  app.inject({ method: 'GET', url, headers: { accept: 'text/html' }, ...(session ? { cookies: { session } } : {}) })

/** The directives of a Content-Security-Policy header, by name. */
function csp (header: unknown): Map<string, string[]> {
  return new Map(String(header).split(';').map(d => d.trim().split(/\s+/)).filter(d => d[0])
    .map(([name, ...values]) => [name!, values]))
}

function checkHeaders (t: Test, res: Awaited<ReturnType<typeof get>>, what: string) {
  const policy = csp(res.headers['content-security-policy'])
  t.same(policy.get('default-src'), ["'none'"], `${what}: default-src 'none'`)
  t.same(policy.get('style-src'), ["'self'"], `${what}: style-src 'self'`)
  t.same(policy.get('img-src'), ["'self'"], `${what}: img-src 'self'`)
  t.same(policy.get('frame-ancestors'), ["'none'"], `${what}: frame-ancestors 'none'`)
  t.same(policy.get('form-action'), ["'self'"], `${what}: form-action 'self'`)
  t.same(policy.get('base-uri'), ["'none'"], `${what}: base-uri 'none'`)
  t.notMatch(String(res.headers['content-security-policy']), /unsafe-/, `${what}: nothing unsafe-*`)
  t.equal(res.headers['x-content-type-options'], 'nosniff', `${what}: nosniff`)
  t.equal(res.headers['referrer-policy'], 'no-referrer', `${what}: no-referrer`)
  if (res.statusCode !== 303) {
    t.equal(res.headers['cache-control'], 'no-store', `${what}: no-store`)
    t.equal(res.headers['content-type'], 'text/html; charset=utf-8', `${what}: HTML`)
    t.notMatch(res.body, /<script|\son[a-z]+=|<style|style=/i, `${what}: no script, handler or inline style`)
  }
}

t.test('every page carries the security headers', async t => {
  const session = signIn()
  const pages: Array<[string, string | undefined, number]> = [
    ['/dashboard/sign-in', undefined, 200],
    ['/dashboard/sign-in', session, 200],
    ['/dashboard/event-types', session, 200],
    ['/dashboard', session, 303],
    ['/dashboard', undefined, 303],
    ['/dashboard/event-types', undefined, 303],
    ['/dashboard/no-such-page', session, 404],
    ['/dashboard/no-such-page', undefined, 404],
    ['/dashboard/sign-in?token=nope', undefined, 400]
  ]
  for (const [url, s, status] of pages) {
    const res = await get(url, s)
    t.equal(res.statusCode, status, `${url} ${s ? 'signed in' : 'signed out'}: ${status}`)
    checkHeaders(t, res, url)
  }
})

t.test('without a session a page goes to the sign-in page, which says how to sign in', async t => {
  for (const url of ['/dashboard', '/dashboard/event-types']) {
    const res = await get(url)
    t.equal(res.statusCode, 303)
    t.equal(res.headers.location, '/dashboard/sign-in')
  }
  const page = await get('/dashboard/sign-in')
  t.equal(page.statusCode, 200)
  t.match(page.body, '<title>Sign in · Marketplace dashboard</title>')
  t.match(page.body, 'npx marketplace-gateway dashboard-link --sub')
  t.notMatch(page.body, 'Sign out', 'no header navigation without a session')
})

t.test('/dashboard: to Apps for a developer with an app, else to Connections', async t => {
  const sub = unique('dev')
  const session = signIn(sub)
  let res = await get('/dashboard', session)
  t.equal(res.statusCode, 303)
  t.equal(res.headers.location, '/dashboard/connections')
  const created = await app.inject({
    method: 'POST',
    url: '/apps',
    headers: { ...bearer(session), 'content-type': 'application/json' },
    payload: {
      slug: unique('app').replace(/_/g, '-'),
      name: 'Mine',
      redirect_uris: [REDIRECT_URI],
      scopes: ['invoices:read']
    }
  })
  t.equal(created.statusCode, 201)
  res = await get('/dashboard', session)
  t.equal(res.headers.location, '/dashboard/apps')
})

t.test('the event types page shows the catalog, every topic with its status, example and schema', async t => {
  const res = await get('/dashboard/event-types', signIn())
  t.equal(res.statusCode, 200)
  const shown = [...res.body.matchAll(/<h2 id="topic-[^"]+"><code>([^<]+)<\/code> <span class="status status-(\w+)">/g)]
    .map(m => ({ name: m[1], status: m[2] }))
  t.same(shown, eventCatalog().event_types.map(e => ({ name: e.name, status: e.status })), 'the same topics, in order')
  t.match(res.body, 'Example delivery of <code>invoice.paid</code>')
  t.match(res.body, '&quot;title&quot;: &quot;invoice.paid payload&quot;', 'the payload schema, escaped')
  t.match(res.body, 'aria-current="page">Event types</a>')
})

t.test('user-supplied text is escaped', async t => {
  const res = await get('/dashboard/event-types', signIn('<script>alert(1)</script>'))
  t.match(res.body, 'Signed in as <strong>&lt;script&gt;alert(1)&lt;/script&gt;</strong>')
  t.notMatch(res.body, '<script>')
  const missing = await get('/dashboard/%3Cscript%3E', signIn())
  t.equal(missing.statusCode, 404)
  t.notMatch(missing.body, '<script>')
})

t.test('the stylesheet: CSS, cacheable under its hashed URL', async t => {
  const page = await get('/dashboard/sign-in')
  const href = /<link rel="stylesheet" href="([^"]+)">/.exec(page.body)![1]!
  t.match(href, /^\/dashboard\/style\.css\?v=[\w-]{12}$/)
  const css = await app.inject({ method: 'GET', url: href })
  t.equal(css.statusCode, 200)
  t.equal(css.headers['content-type'], 'text/css; charset=utf-8')
  t.equal(css.headers['cache-control'], 'public, max-age=31536000, immutable')
  t.equal(css.headers['x-content-type-options'], 'nosniff')
  t.match(css.body, ':focus-visible')
  const stale = await app.inject({ method: 'GET', url: '/dashboard/style.css?v=old' })
  t.equal(stale.headers['cache-control'], 'public, max-age=300')
})

t.test('the consent page still works, on the same layout and stylesheet', async t => {
  const sub = unique('dev')
  const owner = signIn(sub)
  const created = await app.inject({
    method: 'POST',
    url: '/apps',
    headers: { ...bearer(owner), 'content-type': 'application/json' },
    payload: {
      slug: unique('app').replace(/_/g, '-'),
      name: 'Ledger <b>Sync</b>',
      redirect_uris: [REDIRECT_URI],
      scopes: ['invoices:read']
    }
  })
  const entity = unique('ent')
  const org = unique('org')
  const user = app.userSessions.sign({ sub: unique('user'), orgRefId: org, entityRefIds: [entity] })
  const q = new URLSearchParams({
    response_type: 'code',
    client_id: created.json().client_id,
    redirect_uri: REDIRECT_URI,
    scope: 'invoices:read',
    state: 's',
    code_challenge: pkcePair().challenge,
    code_challenge_method: 'S256',
    org_ref_id: org
  })
  const res = await get(`/oauth/authorize?${q}`, user)
  t.equal(res.statusCode, 200)
  t.match(res.body, '<link rel="stylesheet" href="/dashboard/style.css?v=')
  t.match(res.body, '<main id="main"')
  t.match(res.body, 'Ledger &lt;b&gt;Sync&lt;/b&gt;')
  t.notMatch(res.body, '<style')
  const policy = csp(res.headers['content-security-policy'])
  t.same(policy.get('style-src'), ["'self'"])
  t.notMatch(String(res.headers['content-security-policy']), /unsafe-/)
})
