// The consent page for a browser without a session: a link that signs in and comes back to the same authorization
// request (LOGIN_URL, or outside production a one-time development sign-in link), escaped in the page.
import t from 'tap'
import { buildApp, type AppInstance } from '../../../../app.js'
import { bearer, build, pkcePair, REDIRECT_URI, testConfig, unique } from '../../../support/helper.js'

type Test = Parameters<Parameters<typeof t.test>[0]>[0]

const HTML = { accept: 'text/html,application/xhtml+xml' }
const LOGIN_URL = 'https://accounts.example.com/login?app=gateway'

async function registerApp (t: Test, app: AppInstance): Promise<string> {
  const owner = app.userSessions.sign({ sub: unique('dev'), orgRefId: 'devorg', entityRefIds: [] })
  const res = await app.inject({
    method: 'POST',
    url: '/apps',
    headers: { ...bearer(owner), 'content-type': 'application/json' },
    payload: JSON.stringify({
      slug: unique('app').replace('_', '-'),
      name: 'Ledger Sync',
      redirect_uris: [REDIRECT_URI],
      scopes: ['invoices:read']
    })
  })
  t.equal(res.statusCode, 201, 'app registered')
  return res.json().client_id
}

/** An authorization request's path; its `state` holds every character HTML or a query string could trip on. */
function authorizePath (clientId: string, over: Record<string, string> = {}): string {
  return '/oauth/authorize?' + new URLSearchParams({
    client_id: clientId,
    redirect_uri: REDIRECT_URI,
    scope: 'invoices:read',
    state: 's<1>&"x"=\'y\'',
    code_challenge: pkcePair().challenge,
    code_challenge_method: 'S256',
    ...over
  }).toString()
}

/** The `href` attributes of the page's links named `text`, exactly as written in the HTML. */
function hrefsOf (body: string, text: string): string[] {
  const links = [...body.matchAll(/<a href="([^"]*)">([^<]*)<\/a>/g)]
  return links.filter(m => m[2] === text).map(m => m[1]!)
}

/** An attribute's text as the browser reads it (the page escapes &, <, >, " and '). */
const unescape = (s: string): string =>
  s.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&#39;/g, "'").replace(/&amp;/g, '&')

/** Asserts the 401 page and returns its one sign-in link named `text`, as written. */
function signInHref (t: Test, res: { statusCode: number, headers: Record<string, unknown>, body: string },
  text: string): string {
  t.equal(res.statusCode, 401)
  t.match(res.headers['content-type'], /^text\/html/)
  t.match(res.body, '<h1>Sign in to continue</h1>')
  const hrefs = hrefsOf(res.body, text)
  t.equal(hrefs.length, 1, `one link "${text}"`)
  const href = hrefs[0] ?? ''
  t.notMatch(href, /[<>"']|&(?!amp;)/, 'the href is escaped: no raw &, <, >, " or \'')
  return href
}

t.test('outside production, a one-time development sign-in that returns to the request', async t => {
  const app = await build(t)
  const clientId = await registerApp(t, app)
  const org = unique('org')
  const entity = unique('ent')
  const path = authorizePath(clientId, { org_ref_id: org, entity_ref_id: entity })

  const page = await app.inject({ method: 'GET', url: path, headers: HTML })
  const href = signInHref(t, page, `Sign in as dev-user of ${org}`)
  const link = new URL(unescape(href))
  t.equal(`${link.origin}${link.pathname}`, 'http://gateway.test/dashboard/sign-in', 'the dashboard\'s sign-in link')
  t.same([...link.searchParams.keys()], ['token', 'return_to'])
  t.equal(href, `http://gateway.test/dashboard/sign-in?token=${link.searchParams.get('token')}&amp;return_to=` +
    encodeURIComponent(path), 'href exact: the token, then the request, encoded, with & escaped')
  t.match(page.body.replace(/\s+/g, ' '), `(entity ${entity};`, 'says which entity')
  t.notMatch(page.body, 'open the link that brought you here again')

  // The link signs in the development user of the request's tenant and comes back to the request, once.
  const signedIn = await app.inject({ method: 'GET', url: link.pathname + link.search, headers: HTML })
  t.equal(signedIn.statusCode, 303)
  t.equal(signedIn.headers.location, path, 'back to the same authorization request')
  const session = signedIn.cookies.find(c => c.name === 'session')!.value
  const consent = await app.inject({ method: 'GET', url: path, headers: { ...HTML, cookie: `session=${session}` } })
  t.equal(consent.statusCode, 200, 'the consent page, signed in')
  t.match(consent.body, 'signed in as <strong>dev-user</strong>')
  t.match(consent.body, `value="${entity}" checked`)
  const again = await app.inject({ method: 'GET', url: link.pathname + link.search, headers: HTML })
  t.equal(again.statusCode, 400, 'the link works once')

  // A request naming no tenant signs in the tenant of the reference page's examples.
  const bare = await app.inject({ method: 'GET', url: authorizePath(clientId), headers: HTML })
  signInHref(t, bare, 'Sign in as dev-user of org_demo')
  t.match(bare.body.replace(/\s+/g, ' '), '(entity ent_demo;')

  // Programs still get the JSON error, and no link.
  const json = await app.inject({ method: 'GET', url: path })
  t.same(json.json(), { error: 'invalid_token', message: 'Missing user session.' })
})

t.test('the form\'s post without a session returns to the consent page it was posted from', async t => {
  const app = await build(t)
  const clientId = await registerApp(t, app)
  const path = authorizePath(clientId)
  const post = (referer?: string) => app.inject({
    method: 'POST',
    url: '/oauth/authorize',
    headers: { ...HTML, 'content-type': 'application/x-www-form-urlencoded', ...(referer ? { referer } : {}) },
    payload: new URLSearchParams({ client_id: clientId, decision: 'allow' }).toString()
  })
  const fromPage = new URL(unescape(signInHref(t, await post(`http://gateway.test${path}`),
    'Sign in as dev-user of org_demo')))
  t.equal(fromPage.searchParams.get('return_to'), path, 'back to the page the form was on')
  for (const referer of [undefined, `https://evil.example${path}`, 'http://gateway.test/dashboard/apps']) {
    const link = new URL(unescape(signInHref(t, await post(referer), 'Sign in as dev-user of org_demo')))
    t.equal(link.searchParams.get('return_to'), null, `no way back from ${referer ?? 'no Referer'}: the dashboard`)
  }
})

t.test('with LOGIN_URL: the browser goes there, and the page links there, with return_to', async t => {
  const app = await build(t, { LOGIN_URL })
  const clientId = await registerApp(t, app)
  const path = authorizePath(clientId)
  const expected = `${LOGIN_URL}&return_to=${encodeURIComponent(`http://gateway.test${path}`)}`

  const get = await app.inject({ method: 'GET', url: path, headers: HTML })
  t.equal(get.statusCode, 302)
  t.equal(new URL(get.headers.location as string).searchParams.get('return_to'), `http://gateway.test${path}`)

  // A post whose session ran out is a page: its link goes to LOGIN_URL and back to the consent page.
  const post = await app.inject({
    method: 'POST',
    url: '/oauth/authorize',
    headers: { ...HTML, 'content-type': 'application/x-www-form-urlencoded', referer: `http://gateway.test${path}` },
    payload: new URLSearchParams({ client_id: clientId, decision: 'allow' }).toString()
  })
  const href = signInHref(t, post, 'Sign in to the accounting system')
  t.equal(unescape(href), new URL(expected).toString(), 'LOGIN_URL, its own query kept, with return_to')
  t.equal(href, new URL(expected).toString().replace(/&/g, '&amp;'), 'href exact, & escaped')
  t.notMatch(post.body, 'dev-user', 'no development sign-in')
})

t.test('outside production, a browser on another machine gets no development sign-in: it would sign anyone in',
  async t => {
    const app = await build(t)
    const clientId = await registerApp(t, app)
    for (const remoteAddress of ['192.0.2.7', '2001:db8::7', '::ffff:192.0.2.7']) {
      const res = await app.inject({ method: 'GET', url: authorizePath(clientId), headers: HTML, remoteAddress })
      t.equal(res.statusCode, 401, remoteAddress)
      t.match(res.body, 'Sign in to the accounting system, then open the link that brought you here again.')
      t.notMatch(res.body, 'dev-user', `${remoteAddress}: no development sign-in`)
      t.notMatch(res.body, '/dashboard/sign-in', `${remoteAddress}: no sign-in link`)
    }
  })

t.test('in production without LOGIN_URL there is nowhere to link to: the page says what to do', async t => {
  const app = await buildApp({ ...testConfig(t), nodeEnv: 'production' })
  t.teardown(() => app.close())
  await app.ready()
  const clientId = await registerApp(t, app)
  const res = await app.inject({ method: 'GET', url: authorizePath(clientId), headers: HTML })
  t.equal(res.statusCode, 401)
  t.match(res.body, 'Sign in to the accounting system, then open the link that brought you here again.')
  t.notMatch(res.body, '<a href="http', 'no sign-in link')
  t.notMatch(res.body, 'dev-user')
})
