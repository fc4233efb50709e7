import fc from 'fast-check'
import t from 'tap'
import {
  formActionSource, normalizedRedirectUri, redirectUriMatches, redirectUriProblem
} from '../../../lib/redirect-uris.js'

const q = JSON.stringify

t.test('what any client may register: https without fragment or user info', async t => {
  for (const uri of ['https://app.example/cb', 'https://app.example:8443/cb?x=1', 'https://[2001:db8::1]/cb']) {
    t.equal(redirectUriProblem(uri, 'developer'), undefined, `developer: ${uri}`)
    t.equal(redirectUriProblem(uri, 'native'), undefined, `native: ${uri}`)
  }
  const refused: Array<[string, string]> = [
    ['/cb', `${q('/cb')} is not an absolute URI.`],
    ['app.example/cb', `${q('app.example/cb')} is not an absolute URI.`],
    ['', `${q('')} is not an absolute URI.`],
    ['https://app.example/c b', `${q('https://app.example/c b')} is not an absolute URI.`],
    [' https://app.example/cb', `${q(' https://app.example/cb')} is not an absolute URI.`],
    ['https://app.example/cb\n', `${q('https://app.example/cb\n')} is not an absolute URI.`],
    ['https://app.example/cb#top', `${q('https://app.example/cb#top')} must not have a fragment.`],
    ['https://app.example/cb#', `${q('https://app.example/cb#')} must not have a fragment.`],
    ['https://user@app.example/cb', `${q('https://user@app.example/cb')} must not have user info.`],
    ['https://:pw@app.example/cb', `${q('https://:pw@app.example/cb')} must not have user info.`]
  ]
  for (const [uri, message] of refused) {
    t.equal(redirectUriProblem(uri, 'developer'), message, `developer: ${q(uri)}`)
    t.equal(redirectUriProblem(uri, 'native'), message, `native: ${q(uri)}`)
  }
})

t.test('developer apps: https only, loopback and private-use schemes included', async t => {
  for (const uri of ['http://127.0.0.1:8080/cb', 'http://localhost/cb', 'http://app.example/cb', 'cursor://cb']) {
    t.equal(redirectUriProblem(uri, 'developer'), `${q(uri)} must be an https URL.`, uri)
  }
})

t.test('self-registered clients: loopback http on any port, private-use schemes, not a browser scheme', async t => {
  for (const uri of [
    'http://127.0.0.1/cb',
    'http://127.0.0.1:53117/cb',
    'http://[::1]:8080/cb',
    'http://localhost:3000/callback?state=x',
    // Parsed, then judged: these are the same loopback hosts written otherwise.
    'HTTP://LOCALHOST:8080/cb',
    'http://[0:0:0:0:0:0:0:1]/cb',
    'http://127.1/cb',
    'http://2130706433/cb',
    'cursor://anysphere.cursor-retrieval/oauth/callback',
    'com.example.app:/oauth2redirect',
    'com.example-app.mobile:/cb',
    'vscode://publisher.extension/cb',
    'vscode-insiders://publisher.extension/cb'
  ]) {
    t.equal(redirectUriProblem(uri, 'native'), undefined, uri)
  }
  // A private-use scheme must name one app: a reverse domain (RFC 8252 7.1), or a known MCP client's scheme.
  for (const uri of ['x-javascript:alert(1)', 'jar:https://app.example/a.jar!/', 'ms-settings:privacy',
    'chrome-extension://abc/cb', 'myapp:/cb', 'com.:/cb']) {
    t.match(redirectUriProblem(uri, 'native'), /a private-use scheme must be a reverse domain name of the app/, uri)
  }
  for (const uri of ['http://app.example/cb', 'http://127.0.0.2/cb', 'http://localhost.example/cb', 'http://[::2]/cb',
    'http://0.0.0.0/cb', 'http://10.0.0.1/cb']) {
    t.equal(redirectUriProblem(uri, 'native'),
      `${q(uri)}: http is allowed only on a loopback address (127.0.0.1, [::1] or localhost).`, uri)
  }
  const browserSchemes: Array<[string, string]> = [
    ['javascript:alert(1)', 'javascript'],
    ['JavaScript:alert(1)', 'javascript'],
    ['data:text/html,hi', 'data'],
    ['vbscript:x', 'vbscript'],
    ['file:///etc/passwd', 'file'],
    ['about:blank', 'about'],
    ['blob:https://app.example/1', 'blob'],
    ['filesystem:https://app.example/x', 'filesystem'],
    ['view-source:https://app.example/', 'view-source'],
    ['chrome://settings', 'chrome'],
    ['ws://127.0.0.1/cb', 'ws'],
    ['wss://app.example/cb', 'wss'],
    ['ftp://app.example/cb', 'ftp'],
    ['mailto:a@app.example', 'mailto'],
    ['tel:+15550100', 'tel'],
    ['sms:+15550100', 'sms']
  ]
  for (const [uri, scheme] of browserSchemes) {
    t.equal(redirectUriProblem(uri, 'native'), `${q(uri)}: the ${scheme}: scheme cannot receive a redirect.`, uri)
  }
})

t.test('property: a URI with whitespace or a fragment is never registrable', async t => {
  const uri = fc.constantFrom('https://app.example/cb', 'http://127.0.0.1:1234/cb', 'cursor://x/cb', 'com.example.app:/cb')
  fc.assert(fc.property(uri, fc.nat({ max: 22 }), fc.constantFrom(' ', '\t', '\n', '#', '#x'), (u, at, insert) => {
    const i = Math.min(at, u.length)
    const bad = u.slice(0, i) + insert + u.slice(i)
    return redirectUriProblem(bad, 'native') !== undefined && redirectUriProblem(bad, 'developer') !== undefined
  }))
  t.pass('inserting whitespace or # anywhere makes a URI refused')
})

t.test('matching: exact or the same URI normalised, except a loopback http URI on any port', async t => {
  const matches: Array<[string, string, boolean]> = [
    ['https://app.example/cb', 'https://app.example/cb', true],
    // What a self-registered client wrote, against what was stored: the same URI.
    ['https://app.example/cb', 'https://app.example:443/cb', true],
    ['https://app.example/cb', 'https://APP.example/cb', true],
    ['https://APP.example/cb', 'https://app.example/cb', false],
    ['com.example.app:/cb', 'COM.EXAMPLE.APP:/cb', true],
    ['https://app.example/cb', 'https://app.example/cb/', false],
    ['https://app.example/cb', 'https://app.example/cb?x=1', false],
    ['https://app.example:8443/cb', 'https://app.example:9443/cb', false],
    ['cursor://cb', 'cursor://cb', true],
    ['cursor://cb', 'cursor://cb/', false],
    ['http://127.0.0.1/cb', 'http://127.0.0.1:53117/cb', true],
    ['http://127.0.0.1:3000/cb', 'http://127.0.0.1/cb', true],
    ['http://[::1]:3000/cb', 'http://[::1]:4000/cb', true],
    ['http://localhost:3000/cb', 'http://LOCALHOST:5000/cb', true],
    ['http://localhost:3000/cb?a=1', 'http://localhost:5000/cb?a=1', true],
    ['http://localhost:3000/cb', 'http://127.0.0.1:3000/cb', false],
    ['http://localhost:3000/cb', 'https://localhost:3000/cb', false],
    ['http://localhost:3000/cb', 'http://localhost:5000/other', false],
    ['http://localhost:3000/cb?a=1', 'http://localhost:5000/cb?a=2', false],
    ['http://localhost:3000/cb', 'http://localhost:5000/cb#x', false],
    ['http://localhost:3000/cb', 'http://u:p@localhost:5000/cb', false],
    ['http://localhost:3000/cb', 'http://u@localhost:3000/cb', false],
    ['http://app.example:3000/cb', 'http://app.example:5000/cb', false],
    ['not a uri', 'not a uri', true],
    ['not a uri', 'http://localhost/cb', false],
    ['http://localhost/cb', 'not a uri', false]
  ]
  for (const [registered, presented, expected] of matches) {
    t.equal(redirectUriMatches(registered, presented), expected, `${registered} ← ${presented}`)
  }
})

t.test('self-registered clients\' URIs are stored normalised', async t => {
  const cases: Array<[string, string]> = [
    ['HTTPS://App.Example:443/a/./b/../cb', 'https://app.example/a/cb'],
    ['http://LOCALHOST:8080/cb', 'http://localhost:8080/cb'],
    ['COM.Example.App:/cb', 'com.example.app:/cb'],
    ['cursor://anysphere.cursor-mcp/oauth/callback', 'cursor://anysphere.cursor-mcp/oauth/callback'],
    ['https://app.example', 'https://app.example/']
  ]
  for (const [uri, stored] of cases) {
    t.equal(normalizedRedirectUri(uri), stored, uri)
    t.ok(redirectUriMatches(stored, uri), `${uri} presented as written matches what was stored`)
  }
})

t.test('properties of matching', async t => {
  fc.assert(fc.property(fc.string(), s => redirectUriMatches(s, s)))
  t.pass('any string matches itself')
  const path = fc.stringMatching(/^\/[a-z0-9/_-]{0,20}$/)
  const host = fc.constantFrom('127.0.0.1', '[::1]', 'localhost')
  const port = fc.option(fc.integer({ min: 1, max: 65535 }), { nil: undefined })
  const at = (h: string, p: number | undefined, pa: string) => `http://${h}${p === undefined ? '' : `:${p}`}${pa}`
  fc.assert(fc.property(host, port, port, path, (h, p1, p2, pa) => redirectUriMatches(at(h, p1, pa), at(h, p2, pa))))
  t.pass('a registered loopback URI matches itself on every port')
  fc.assert(fc.property(fc.integer({ min: 1, max: 65535 }), fc.integer({ min: 1, max: 65535 }), path, (p1, p2, pa) =>
    p1 === p2 || !redirectUriMatches(`https://app.example:${p1}${pa}`, `https://app.example:${p2}${pa}`)))
  t.pass('an https URI never matches on another port')
})

t.test('the consent form may post to the redirect: its origin, or its scheme', async t => {
  t.equal(formActionSource('https://app.example:8443/cb?x=1'), 'https://app.example:8443')
  t.equal(formActionSource('http://127.0.0.1:53117/cb'), 'http://127.0.0.1:53117')
  t.equal(formActionSource('cursor://anysphere.cursor-retrieval/oauth/callback'), 'cursor:')
  t.equal(formActionSource('com.example.app:/oauth2redirect'), 'com.example.app:')
})
