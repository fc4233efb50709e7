// The OAuth store (plugins/domain/oauth/store.ts) against the database under test: codes and refresh tokens found
// by their hash with the instants stamped at issue, row locks that make a second presentation see the first one's
// commit, successors that tell a race from a retry, and revocations that reach exactly a chain, a family, a code's.
import t from 'tap'
import { createAppStore } from '../../../../../plugins/domain/apps/store.js'
import { createInstallStore } from '../../../../../plugins/domain/installs/store.js'
import { createOAuthStore, type NewRefreshToken } from '../../../../../plugins/domain/oauth/store.js'
import type { Queryable } from '../../../../../plugins/infrastructure/db/types.js'
import { build, unique } from '../../../../support/helper.js'

const app = await build(t, { WEBHOOK_WORKER: 'false' })
const apps = createAppStore(app.db)
const installs = createInstallStore(app.db)
const oauth = createOAuthStore(app.db)
const tx = <T>(fn: (q: Queryable) => Promise<T>): Promise<T> => app.db.tx(fn)

/** Within a second of [before, after]: the database's clock and this process's are one machine's. */
const near = (at: number | undefined, before: number, after: number): boolean =>
  at !== undefined && at >= before - 1000 && at <= after + 1000

/** An app and an install of it: what codes and refresh tokens belong to. */
async function grant () {
  const client = (await apps.insertDeveloperApp({
    clientId: unique('app'),
    slug: unique('slug').replace('_', '-'),
    name: 'Ledger Sync',
    ownerSub: unique('dev'),
    secretHash: 'h',
    redirectUris: ['https://app.example.com/cb'],
    scopes: ['invoices:read'],
    publisher: null,
    websiteUrl: null
  }))!.app
  const installId = unique('ins')
  await tx(q => installs.insertActive(q, {
    installId,
    clientId: client.clientId,
    orgRefId: unique('org'),
    entityRefId: unique('ent'),
    scopes: ['invoices:read'],
    installedBy: unique('user')
  }))
  return { clientId: client.clientId, installId }
}

type Grant = Awaited<ReturnType<typeof grant>>

/** Issues a refresh token of the grant, from `codeHash`; its hash. */
async function issue (g: Grant, codeHash = unique('code'), over: Partial<NewRefreshToken> = {}): Promise<string> {
  const tokenHash = unique('rt')
  await tx(q => oauth.insertRefreshToken(q, { tokenHash, ...g, codeHash, resource: null, ttlS: 3600, ...over }))
  return tokenHash
}

const lockToken = (hash: string) => tx(q => oauth.lockRefreshToken(q, hash))
const revoked = async (hash: string) => (await lockToken(hash))?.revokedAt != null

t.test('a code is found by its hash, with its lifetime stamped at issue, and used once', async t => {
  const g = await grant()
  const codeHash = unique('code')
  const before = Date.now()
  await tx(q => oauth.insertCode(q, {
    codeHash,
    ...g,
    redirectUri: 'https://app.example.com/cb',
    codeChallenge: 'challenge',
    scopes: ['invoices:read'],
    resource: 'https://gw.example/mcp',
    ttlS: 60
  }))
  const code = await tx(q => oauth.lockCode(q, codeHash))
  t.match(code, {
    ...g, redirectUri: 'https://app.example.com/cb', codeChallenge: 'challenge', resource: 'https://gw.example/mcp'
  })
  t.equal(code?.usedAt, null)
  t.ok(near(code?.expiresAt.getTime(), before + 60_000, Date.now() + 60_000), 'it expires 60 s after its issue')
  t.equal(await tx(q => oauth.lockCode(q, unique('code'))), undefined, 'an unknown code is none')

  await tx(q => oauth.markCodeUsed(q, codeHash))
  t.ok((await tx(q => oauth.lockCode(q, codeHash)))?.usedAt, 'used')
})

t.test('a locked row makes a second presentation wait, and it then sees what the first committed', async t => {
  const g = await grant()
  const hash = await issue(g)
  let second: Promise<string | null | undefined> | undefined
  await tx(async q => {
    await oauth.lockRefreshToken(q, hash)
    // On Postgres this one waits for the lock; on the embedded database, for the transaction (one connection).
    second = tx(async q2 => (await oauth.lockRefreshToken(q2, hash))?.replacedBy)
    await new Promise(resolve => setTimeout(resolve, 50))
    await oauth.markReplaced(q, hash, 'successor-hash')
  })
  t.equal(await second, 'successor-hash', 'the rotation the lock holder committed')
})

t.test('a refresh token is stamped on the database clock, and lives its lifetime from there', async t => {
  const g = await grant()
  const tokenHash = unique('rt')
  const before = Date.now()
  const issuedMs = await tx(q => oauth.insertRefreshToken(q, {
    tokenHash, ...g, codeHash: 'c', resource: 'https://gw.example/public/v1', ttlS: 90 * 86_400
  }))
  t.ok(near(issuedMs, before, Date.now()), 'its issue time, in milliseconds')
  const stored = await lockToken(tokenHash)
  t.match(stored, { tokenHash, ...g, codeHash: 'c', resource: 'https://gw.example/public/v1' })
  t.equal(stored?.createdAt.getTime(), Math.floor(issuedMs), 'the issue time is the stamp the key disable meets')
  t.equal(stored!.expiresAt.getTime() - stored!.createdAt.getTime(), 90 * 86_400_000, 'expires 90 days on')
  t.match(stored, { replacedAt: null, replacedBy: null, revokedAt: null, revokedReason: null })
  t.equal(await lockToken(unique('rt')), undefined, 'an unknown token is none')
  t.equal(await oauth.installOfRefreshToken(tokenHash), g.installId)
  t.equal(await oauth.installOfRefreshToken(unique('rt')), undefined)
})

t.test('a rotation keeps its first instant; the successor says whether it raced and whether it is used', async t => {
  const g = await grant()
  const hash = await issue(g)
  const arrivedBefore = await tx(q => oauth.arrivedAt(q, 0))
  const successor = await issue(g)
  await tx(q => oauth.markReplaced(q, hash, successor))
  const rotated = await lockToken(hash)
  t.equal(rotated?.replacedBy, successor)
  t.ok(rotated?.replacedAt, 'rotated, with the instant')

  await tx(q => oauth.markReplaced(q, hash, 'another'))
  const again = await lockToken(hash)
  t.equal(again?.replacedBy, 'another', 'rotated again: the successor named last')
  t.same(again?.replacedAt, rotated?.replacedAt, 'the instant of the first rotation stays (the grace window)')

  const arrivedAfter = await tx(q => oauth.arrivedAt(q, 0))
  t.match(await tx(q => oauth.successor(q, successor, arrivedBefore)), { unused: true, raced: true, resource: null },
    'created after the presentation arrived: a race')
  const late = await tx(q => oauth.successor(q, successor, arrivedAfter))
  t.match(late, { unused: true, raced: false }, 'created before it arrived: a retry')
  t.ok(near(late?.issuedMs, Date.now(), Date.now()), 'with the time now, for the access token given again')

  await tx(q => oauth.markReplaced(q, successor, unique('rt')))
  t.match(await tx(q => oauth.successor(q, successor, arrivedAfter)), { unused: false }, 'rotated on: used')
  t.equal(await tx(q => oauth.successor(q, unique('rt'), arrivedAfter)), undefined, 'no such successor')

  const now = Date.now()
  const ago = await tx(q => oauth.arrivedAt(q, 5000))
  t.ok(near(ago.getTime(), now - 5000, Date.now() - 5000), 'arrival: the database\'s now less the time since')
})

t.test('a replayed code revokes the chain it started, and nothing else', async t => {
  const g = await grant()
  const chain = [await issue(g, 'code-a'), await issue(g, 'code-a')]
  const other = await issue(g, 'code-b')
  await tx(q => oauth.revokeTokensOfCode(q, 'code-a'))
  t.same(await Promise.all(chain.map(revoked)), [true, true], 'the chain of the code')
  t.equal(await revoked(other), false, 'another code\'s chain of the same install')
})

t.test('a family revocation reaches every refresh token of the install, and only of it', async t => {
  const g = await grant()
  const mine = [await issue(g, 'code-1'), await issue(g, 'code-2')]
  const neighbour = await issue(await grant())
  await tx(q => oauth.revokeFamily(q, g.installId))
  for (const hash of mine) t.match(await lockToken(hash), { revokedReason: 'family' }, 'revoked as a family')
  t.equal(await revoked(neighbour), false, 'another install\'s token')

  // An earlier revocation is not rewritten.
  const g2 = await grant()
  const early = await issue(g2, 'code-x')
  await tx(q => oauth.revokeTokensOfCode(q, 'code-x'))
  await tx(q => oauth.revokeFamily(q, g2.installId))
  t.equal((await lockToken(early))?.revokedReason, null, 'a token revoked before keeps its reason')
})

t.test('RFC 7009: a client revokes the chain of its own token; unknown and others\' tokens stay', async t => {
  const g = await grant()
  const codeHash = unique('code')
  const chain = [await issue(g, codeHash), await issue(g, codeHash)]
  const otherChain = await issue(g)
  const stranger = await grant()

  await oauth.revokeChainOf(stranger.clientId, chain[0]!)
  t.same(await Promise.all(chain.map(revoked)), [false, false], 'another client cannot')
  await oauth.revokeChainOf(g.clientId, unique('rt'))
  t.same(await Promise.all(chain.map(revoked)), [false, false], 'an unknown token revokes nothing')

  await oauth.revokeChainOf(g.clientId, chain[1]!)
  t.same(await Promise.all(chain.map(revoked)), [true, true], 'the whole chain, from any of its tokens')
  t.equal(await revoked(otherChain), false, 'another chain of the client stays')
})
