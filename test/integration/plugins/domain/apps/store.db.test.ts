// The app store (plugins/domain/apps/store.ts) against the database under test: slugs are unique, a developer sees
// only their apps, a metadata document never takes over a client registered otherwise, a key disable is stamped and
// outlives the enable, and the sweep deletes only self-registered clients that were granted nothing.
import t from 'tap'
import { createAppStore, type NewDeveloperApp, type NewDynamicApp } from '../../../../../plugins/domain/apps/store.js'
import { createInstallStore } from '../../../../../plugins/domain/installs/store.js'
import { createOAuthStore } from '../../../../../plugins/domain/oauth/store.js'
import { build, unique } from '../../../../support/helper.js'

type Test = Parameters<Parameters<typeof t.test>[0]>[0]

const app = await build(t, { WEBHOOK_WORKER: 'false' })
const apps = createAppStore(app.db)
const installs = createInstallStore(app.db)
const oauth = createOAuthStore(app.db)

const developerApp = (over: Partial<NewDeveloperApp> = {}): NewDeveloperApp => ({
  clientId: unique('app'),
  slug: unique('slug').replace('_', '-'),
  name: 'Ledger Sync',
  ownerSub: unique('dev'),
  secretHash: 'hash-of-the-secret',
  redirectUris: ['https://app.example.com/cb'],
  scopes: ['invoices:read'],
  publisher: null,
  websiteUrl: null,
  ...over
})

const dynamicApp = (over: Partial<NewDynamicApp> = {}): NewDynamicApp => ({
  clientId: unique('app'),
  slug: unique('client').replace('_', '-'),
  name: 'An MCP client',
  secretHash: null,
  redirectUris: ['http://127.0.0.1/cb'],
  scopes: ['invoices:read'],
  websiteUrl: null,
  clientType: 'public',
  ...over
})

/** Within a second of [before, after]: the database's clock and this process's are one machine's. */
function within (t: Test, at: Date | null | undefined, before: number, after: number, what: string): void {
  t.ok(at && at.getTime() >= before - 1000 && at.getTime() <= after + 1000, `${what}: ${at?.toISOString()}`)
}

t.test('a developer app is stored as given, its slug unique', async t => {
  const input = developerApp({ publisher: 'Acme Ltd', websiteUrl: 'https://acme.example' })
  const before = Date.now()
  const stored = await apps.insertDeveloperApp(input)
  t.match(stored, {
    app: {
      clientId: input.clientId,
      slug: input.slug,
      ownerSub: input.ownerSub,
      clientType: 'confidential',
      registeredBy: 'developer',
      publisher: 'Acme Ltd',
      websiteUrl: 'https://acme.example',
      redirectUris: input.redirectUris,
      scopes: input.scopes,
      apiKeyEnabled: true,
      keyDisabledAt: null
    },
    secretHash: 'hash-of-the-secret',
    metadataExpiresAt: null
  })
  within(t, stored?.app.createdAt, before, Date.now(), 'created now')
  t.same(await apps.find(input.clientId), stored, 'found by its client id, as it was returned')

  t.equal(await apps.insertDeveloperApp(developerApp({ slug: input.slug })), undefined, 'the slug is taken')
  t.equal((await apps.find(input.clientId))?.app.name, 'Ledger Sync', 'and the app that has it is unchanged')
  t.equal(await apps.find(unique('app')), undefined, 'an unknown client id is nobody')
})

t.test('a developer lists their own apps, oldest first, and nobody else\'s', async t => {
  const owner = unique('dev')
  const first = await apps.insertDeveloperApp(developerApp({ ownerSub: owner }))
  const second = await apps.insertDeveloperApp(developerApp({ ownerSub: owner }))
  await apps.insertDeveloperApp(developerApp())
  t.same((await apps.listOwnedBy(owner)).map(a => a.clientId), [first!.app.clientId, second!.app.clientId])
  t.same(await apps.listOwnedBy(unique('dev')), [], 'a developer with no apps')
})

t.test('a dynamic registration is a client of its own, owned by nobody', async t => {
  const pub = await apps.insertDynamicApp(dynamicApp())
  t.match(pub.app, { ownerSub: null, clientType: 'public', registeredBy: 'dcr' })
  t.equal(pub.secretHash, null, 'a public client has no secret')
  const conf = await apps.insertDynamicApp(dynamicApp({ secretHash: 'h', clientType: 'confidential' }))
  t.match(conf, { app: { clientType: 'confidential', registeredBy: 'dcr' }, secretHash: 'h' })
})

t.test('a metadata document describes its client, kept fresh for its max age; never a client registered otherwise',
  async t => {
    const clientId = `https://client.example/${unique('doc')}.json`
    const doc = { clientId, slug: 'first-slug', name: 'v1', websiteUrl: null, redirectUris: ['https://c/cb'] }
    const before = Date.now()
    const first = await apps.upsertDescribedApp({ ...doc, scopes: ['invoices:read'], maxAgeS: 600 })
    t.match(first?.app, { clientId, slug: 'first-slug', name: 'v1', clientType: 'public', registeredBy: 'cimd' })
    within(t, first?.metadataExpiresAt, before + 600_000, Date.now() + 600_000, 'usable for its max age')

    const again = await apps.upsertDescribedApp({
      ...doc, slug: 'second-slug', name: 'v2', scopes: ['bills:read'], maxAgeS: 60
    })
    t.match(again?.app, { clientId, slug: 'first-slug', name: 'v2', scopes: ['bills:read'] },
      'fetched again: the document changes it, its slug stays')
    t.ok(again!.metadataExpiresAt!.getTime() < first!.metadataExpiresAt!.getTime(), 'and its new max age counts')

    const registered = await apps.insertDeveloperApp(developerApp({ clientId: `https://client.example/${unique('d')}` }))
    const taken = await apps.upsertDescribedApp({
      ...doc, clientId: registered!.app.clientId, scopes: ['invoices:read'], maxAgeS: 600
    })
    t.equal(taken, undefined, 'a developer app\'s client id is not a document\'s to describe')
    t.same(await apps.find(registered!.app.clientId), registered, 'and the app is unchanged')
  })

t.test('a key disable is stamped, for the owner or the operator only, and outlives the enable', async t => {
  const stored = (await apps.insertDeveloperApp(developerApp()))!
  const { clientId, ownerSub } = stored.app
  const set = (owner: string | null, enabled: boolean) =>
    app.db.tx(q => apps.setKeyEnabled(q, owner, clientId, enabled))

  t.equal(await set(unique('dev'), false), undefined, 'another developer cannot')
  t.equal((await apps.find(clientId))?.app.apiKeyEnabled, true)

  const before = Date.now()
  const disabled = await set(ownerSub, false)
  t.equal(disabled?.apiKeyEnabled, false, 'the owner can')
  within(t, disabled?.keyDisabledAt, before, Date.now(), 'the disable is stamped')

  const enabled = await set(null, true)
  t.equal(enabled?.apiKeyEnabled, true, 'the operator can, whoever owns the app')
  t.same(enabled?.keyDisabledAt, disabled?.keyDisabledAt, 'tokens issued before the disable stay dead')
  const again = await set(null, false)
  t.ok(again!.keyDisabledAt!.getTime() >= disabled!.keyDisabledAt!.getTime(), 'a later disable stamps its own instant')
  t.equal(await app.db.tx(q => apps.setKeyEnabled(q, null, unique('app'), false)), undefined, 'no such app')
})

t.test('the sweep deletes self-registered clients granted nothing, created before the cut-off, a few at a time',
  async t => {
    const future = () => new Date(Date.now() + 60_000)
    // Whatever the tests above registered is swept first, so that what follows counts this test's clients only.
    await apps.deleteUnusedRegistrations(future(), 1000)

    const unused = await Promise.all([1, 2, 3].map(() => apps.insertDynamicApp(dynamicApp())))
    const installed = await apps.insertDynamicApp(dynamicApp())
    const coded = await apps.insertDynamicApp(dynamicApp())
    const developer = await apps.insertDeveloperApp(developerApp())
    await app.db.tx(async q => {
      const tenant = { orgRefId: unique('org'), entityRefId: unique('ent'), scopes: ['invoices:read'] }
      const grant = (clientId: string, installId: string) =>
        installs.insertActive(q, { ...tenant, installId, clientId, installedBy: unique('user') })
      await grant(installed.app.clientId, unique('ins'))
      const installId = unique('ins')
      await grant(coded.app.clientId, installId)
      await oauth.insertCode(q, {
        codeHash: unique('code'),
        clientId: coded.app.clientId,
        installId,
        redirectUri: 'http://127.0.0.1/cb',
        codeChallenge: 'c',
        scopes: ['invoices:read'],
        resource: null,
        ttlS: 60
      })
    })
    const exists = async (clientId: string) => (await apps.find(clientId)) !== undefined
    const remaining = async () => (await Promise.all(unused.map(u => exists(u.app.clientId)))).filter(Boolean).length

    await apps.deleteUnusedRegistrations(new Date(Date.now() - 60_000), 1000)
    t.equal(await remaining(), 3, 'clients created after the cut-off are kept')

    await apps.deleteUnusedRegistrations(future(), 2)
    t.equal(await remaining(), 1, 'at most as many as asked for')
    await apps.deleteUnusedRegistrations(future(), 2)
    t.equal(await remaining(), 0, 'the rest at the next sweep')
    t.ok(await exists(installed.app.clientId), 'a client with an install is kept')
    t.ok(await exists(coded.app.clientId), 'a client with an authorization code is kept')
    t.ok(await exists(developer!.app.clientId), 'a developer app is never swept')
  })
