import Fastify from 'fastify'
import t from 'tap'
import { anyOrigin, preflight } from '../../../lib/open-cors.js'

const app = Fastify()
app.get('/open', { onSend: anyOrigin }, async () => ({ ok: true }))
app.get('/closed', async () => ({ ok: true }))
preflight(app, '/open', 'GET, POST')
t.teardown(() => app.close())

t.test('an opened route answers any origin and exposes the headers a client reads', async t => {
  const res = await app.inject({ url: '/open', headers: { origin: 'https://agent.example' } })
  t.equal(res.statusCode, 200)
  t.same(res.json(), { ok: true }, 'the payload is untouched')
  t.equal(res.headers['access-control-allow-origin'], '*')
  t.equal(res.headers['access-control-expose-headers'], 'www-authenticate, retry-after')
  t.notOk(res.headers['access-control-allow-credentials'], 'never with credentials')
  const closed = await app.inject({ url: '/closed', headers: { origin: 'https://agent.example' } })
  t.notOk(closed.headers['access-control-allow-origin'], 'a route not opened stays closed')
})

t.test('the preflight: 204, the methods given, the headers a browser client sends, cached ten minutes', async t => {
  const res = await app.inject({
    method: 'OPTIONS',
    url: '/open',
    headers: { origin: 'https://agent.example', 'access-control-request-method': 'POST' }
  })
  t.equal(res.statusCode, 204)
  t.equal(res.body, '')
  t.equal(res.headers['access-control-allow-origin'], '*')
  t.equal(res.headers['access-control-allow-methods'], 'GET, POST')
  t.equal(res.headers['access-control-allow-headers'], 'authorization, content-type, accept, mcp-protocol-version')
  t.equal(res.headers['access-control-max-age'], '600')
})
