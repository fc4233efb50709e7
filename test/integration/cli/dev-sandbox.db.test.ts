// The development sandbox: on a first development start the banner's user owns an app installed in their entity,
// so that the dashboard shows an app, an install and a connection at once; never twice, never over their own apps.
import t from 'tap'
import { ensureDevelopmentSandbox, SANDBOX_APP } from '../../../cli/dev-sandbox.js'
import { bearer, build, unique } from '../../support/helper.js'

const app = await build(t)

t.test('a first start makes the app and its install; a second start makes nothing', async t => {
  const user = { sub: unique('dev'), orgRefId: unique('org'), entityRefIds: [unique('ent')] }
  const made = await ensureDevelopmentSandbox(app, user)
  t.match(made, { clientId: /^app_/, clientSecret: /^mgs_/ })
  t.equal(await ensureDevelopmentSandbox(app, user), undefined, 'not again')

  const apps = await app.apps.listOwnedBy(user.sub)
  t.same(apps.map(a => [a.slug, a.name]), [[SANDBOX_APP.slug, SANDBOX_APP.name]], 'one app, the sandbox\'s')
  const [install] = await app.installs.listForEntity(user.orgRefId, user.entityRefIds[0]!)
  t.match(install, { clientId: made!.clientId, status: 'active', installedBy: user.sub, scopes: SANDBOX_APP.scopes })

  const session = app.userSessions.sign(user)
  const page = await app.inject({ url: '/dashboard/apps', cookies: { session } })
  t.match(page.body, 'Sandbox App', 'the dashboard shows it')
  const connections = await app.inject({ url: '/dashboard/connections', cookies: { session } })
  t.match(connections.body, 'Sandbox App', 'and the organisation sees it connected')
  // The credentials printed once are the app's: they authenticate at the token endpoint.
  t.ok(await app.apps.authenticateClient(made!.clientId, made!.clientSecret))
})

t.test('a user who owns an app already gets no sandbox', async t => {
  const ownerToken = app.userSessions.sign({ sub: unique('dev'), orgRefId: unique('org'), entityRefIds: [] })
  const res = await app.inject({
    method: 'POST',
    url: '/apps',
    headers: { ...bearer(ownerToken), 'content-type': 'application/json' },
    payload: { slug: unique('own').replace(/_/g, '-'), name: 'Own', redirect_uris: ['https://x.example/cb'], scopes: ['invoices:read'] }
  })
  t.equal(res.statusCode, 201)
  const sub = JSON.parse(Buffer.from(ownerToken.split('.')[1]!, 'base64url').toString()).sub as string
  t.equal(await ensureDevelopmentSandbox(app, { sub, orgRefId: unique('org'), entityRefIds: [unique('ent')] }),
    undefined)
  t.same((await app.apps.listOwnedBy(sub)).map(a => a.name), ['Own'])
})

t.test('the slug taken by someone else: no sandbox, and the start goes on', async t => {
  // The first test's user holds the slug on this database.
  const user = { sub: unique('dev'), orgRefId: unique('org'), entityRefIds: [unique('ent')] }
  t.equal(await ensureDevelopmentSandbox(app, user), undefined)
  t.same(await app.apps.listOwnedBy(user.sub), [])
})

t.test('a session with no entity gets no sandbox', async t => {
  t.equal(await ensureDevelopmentSandbox(app, { sub: unique('dev'), orgRefId: unique('org'), entityRefIds: [] }),
    undefined)
})
