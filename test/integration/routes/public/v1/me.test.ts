import t from 'tap'
import { bearer, build, install } from '../../../../support/helper.js'

t.test('GET /public/v1/me answers the install behind the token', async t => {
  const app = await build(t)
  const i = await install(app, { scopes: ['invoices:read', 'bills:read'] })
  const res = await app.inject({ method: 'GET', url: '/public/v1/me', headers: bearer(i.accessToken) })
  t.equal(res.statusCode, 200)
  t.same(res.json(), {
    install_id: i.installId,
    client_id: i.clientId,
    app_slug: i.appSlug,
    org_ref_id: i.orgRefId,
    entity_ref_id: i.entityRefId,
    scopes: ['invoices:read', 'bills:read']
  })
  t.match(res.headers['x-request-id'], /.+/)
  t.equal(res.headers['x-ratelimit-limit'], '600')
  t.equal(res.headers['x-ratelimit-remaining'], '599')
  t.ok(res.headers['x-ratelimit-reset'])
})
