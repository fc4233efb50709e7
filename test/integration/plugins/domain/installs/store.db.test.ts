// The install store (plugins/domain/installs/store.ts) against the database under test: one active install per app
// and tenant, uninstalls scoped to their org and kept as rows, tenants listed apart, and the state the access-state
// cache reads (the app's key, the family cut-off) joined to each install.
import t from 'tap'
import { createAppStore } from '../../../../../plugins/domain/apps/store.js'
import { createInstallStore, type NewInstall } from '../../../../../plugins/domain/installs/store.js'
import { build, unique } from '../../../../support/helper.js'

const app = await build(t, { WEBHOOK_WORKER: 'false' })
const apps = createAppStore(app.db)
const installs = createInstallStore(app.db)

/** An app of its own: installs need one. */
async function newApp () {
  const stored = await apps.insertDeveloperApp({
    clientId: unique('app'),
    slug: unique('slug').replace('_', '-'),
    name: 'Ledger Sync',
    ownerSub: unique('dev'),
    secretHash: 'h',
    redirectUris: ['https://app.example.com/cb'],
    scopes: ['invoices:read', 'bills:read'],
    publisher: null,
    websiteUrl: null
  })
  return stored!.app
}

const tenant = () => ({ orgRefId: unique('org'), entityRefId: unique('ent') })
const newInstall = (clientId: string, where: ReturnType<typeof tenant>, scopes = ['invoices:read']): NewInstall =>
  ({ installId: unique('ins'), clientId, ...where, scopes, installedBy: unique('user') })
const insert = (n: NewInstall) => app.db.tx(q => installs.insertActive(q, n))

t.test('an install is found with its app\'s slug and key state', async t => {
  const a = await newApp()
  const where = tenant()
  const n = newInstall(a.clientId, where)
  t.equal(await insert(n), n.installId)
  t.match(await installs.find(n.installId), {
    install: {
      installId: n.installId,
      clientId: a.clientId,
      appSlug: a.slug,
      ...where,
      scopes: ['invoices:read'],
      status: 'active',
      installedBy: n.installedBy,
      uninstalledAt: null
    },
    access: { apiKeyEnabled: true, keyDisabledAt: null, tokensRevokedAt: null }
  })
  t.equal(await installs.find(unique('ins')), undefined, 'an unknown install is none')

  await app.db.tx(q => apps.setKeyEnabled(q, null, a.clientId, false))
  const found = await installs.find(n.installId)
  t.equal(found?.access.apiKeyEnabled, false, 'the app\'s key state is read with the install, as it is now')
  t.ok(found?.access.keyDisabledAt, 'with the instant of the disable')
  t.equal(found?.install.apiKeyEnabled, false, 'and on the install, as the listings show it')
  t.same((await installs.listForEntity(where.orgRefId, where.entityRefId)).map(i => [i.appName, i.apiKeyEnabled]),
    [['Ledger Sync', false]], 'the listing of the tenant: the app\'s name and its key state')
})

t.test('one active install per app and tenant: a second insert yields; the scopes are set on the first', async t => {
  const a = await newApp()
  const where = tenant()
  const first = newInstall(a.clientId, where)
  t.equal(await insert(first), first.installId)
  t.equal(await insert(newInstall(a.clientId, where, ['bills:read'])), undefined, 'the second insert does nothing')
  const updated = await app.db.tx(q =>
    installs.setActiveScopes(q, a.clientId, where.orgRefId, where.entityRefId, ['bills:read']))
  t.equal(updated, first.installId, 'the active install takes the new scopes')
  t.same((await installs.find(first.installId))?.install.scopes, ['bills:read'])

  const elsewhere = newInstall(a.clientId, { orgRefId: where.orgRefId, entityRefId: unique('ent') })
  t.equal(await insert(elsewhere), elsewhere.installId, 'another entity of the org is another install')
  t.equal(await app.db.tx(q => installs.setActiveScopes(q, a.clientId, where.orgRefId, unique('ent'), [])), undefined,
    'no active install, nothing to set')
})

t.test('an uninstall is scoped to the org, keeps the row, and frees the tenant for a new install', async t => {
  const a = await newApp()
  const where = tenant()
  const n = newInstall(a.clientId, where)
  await insert(n)
  const uninstall = (org: string) => app.db.tx(q => installs.uninstall(q, org, n.installId))

  t.equal(await uninstall(unique('org')), false, 'not from another org')
  t.equal((await installs.find(n.installId))?.install.status, 'active')
  t.equal(await uninstall(where.orgRefId), true)
  const gone = await installs.find(n.installId)
  t.equal(gone?.install.status, 'uninstalled', 'the row stays, uninstalled')
  t.ok(gone?.install.uninstalledAt, 'with the instant')
  t.equal(await uninstall(where.orgRefId), false, 'an uninstalled install is not uninstalled again')

  const next = newInstall(a.clientId, where)
  t.equal(await insert(next), next.installId, 'the tenant can install the app again')
  t.same((await installs.listForEntity(where.orgRefId, where.entityRefId)).map(i => [i.installId, i.status]),
    [[n.installId, 'uninstalled'], [next.installId, 'active']], 'both listed, oldest first')
})

t.test('a tenant lists its own installs only', async t => {
  const [a, b] = [await newApp(), await newApp()]
  const where = tenant()
  const mine = [newInstall(a.clientId, where), newInstall(b.clientId, where)]
  for (const n of mine) await insert(n)
  await insert(newInstall(a.clientId, { orgRefId: where.orgRefId, entityRefId: unique('ent') }))
  await insert(newInstall(a.clientId, { orgRefId: unique('org'), entityRefId: where.entityRefId }))
  t.same((await installs.listForEntity(where.orgRefId, where.entityRefId)).map(i => i.installId),
    mine.map(n => n.installId))
  t.same(await installs.listForEntity(unique('org'), unique('ent')), [], 'a tenant without installs')
})

t.test('revoking an install\'s access tokens stamps the instant on that install only', async t => {
  const a = await newApp()
  const [n, other] = [newInstall(a.clientId, tenant()), newInstall(a.clientId, tenant())]
  await insert(n)
  await insert(other)
  const before = Date.now()
  await app.db.tx(q => installs.revokeAccessTokens(q, n.installId))
  const at = (await installs.find(n.installId))?.access.tokensRevokedAt
  // The database's clock and this process's are one machine's.
  t.ok(at && at.getTime() >= before - 1000 && at.getTime() <= Date.now() + 1000, `stamped now: ${at?.toISOString()}`)
  t.equal((await installs.find(other.installId))?.access.tokensRevokedAt, null, 'another install of the app keeps its')
})
