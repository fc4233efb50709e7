/**
 * Races on the install lifecycle: concurrent refreshes of one token, a stolen refresh token replayed inside the
 * grace window, and concurrent first consents. On Postgres the requests really run at once (a pool of
 * connections); on the embedded database they take turns, which the rules must also get right.
 */
import t from 'tap'
import type { AppInstance } from '../../../../app.js'
import { bearer, build, install, pkcePair, REDIRECT_URI, TEST_DATABASE_URL, unique, type Installed } from '../../../support/helper.js'

const refresh = (app: AppInstance, i: Installed, token: string) => app.inject({
  method: 'POST',
  url: '/oauth/token',
  headers: { 'content-type': 'application/json' },
  payload: JSON.stringify({
    grant_type: 'refresh_token', refresh_token: token, client_id: i.clientId, client_secret: i.clientSecret
  })
})
const me = (app: AppInstance, token: string) =>
  app.inject({ method: 'GET', url: '/public/v1/me', headers: bearer(token) })

// On Postgres, more presentations than the pool has connections (20): the ones that wait for a connection until
// after the winner committed must still count as racing, not as retries of a lost answer. The embedded database runs
// in this thread, and its queries hold the event loop: with 50, the last requests were only routed after the winner
// had committed (on a loaded machine), and a request that reaches the service after the rotation is a retry.
const N = TEST_DATABASE_URL ? 50 : 20

t.test(`${N} concurrent refreshes of one token: exactly one succeeds, and the family lives`, async t => {
  const app = await build(t)
  const i = await install(app)
  const answers = await Promise.all(Array.from({ length: N }, () => refresh(app, i, i.refreshToken)))
  const won = answers.filter(a => a.statusCode === 200)
  t.equal(won.length, 1, 'one 200')
  t.same(
    answers.filter(a => a.statusCode !== 200).map(a => a.json()),
    Array(N - 1).fill({
      error: 'invalid_grant',
      message: 'The refresh token is invalid, expired or revoked.',
      error_description: 'The refresh token is invalid, expired or revoked.'
    }),
    `the other ${N - 1} are invalid_grant`
  )
  const winner = won[0]!.json()
  t.equal((await me(app, winner.access_token)).statusCode, 200, "the winner's access token works")
  const next = await refresh(app, i, winner.refresh_token)
  t.equal(next.statusCode, 200, "the losers did not kill the family: the winner's refresh token rotates")
})

t.test('theft: the thief replays inside the grace, the rightful client comes back, the whole family dies', async t => {
  const app = await build(t)
  const i = await install(app)
  const r1 = i.refreshToken

  const legit = (await refresh(app, i, r1)).json()
  const r2 = legit.refresh_token as string
  const thief = await refresh(app, i, r1)
  t.equal(thief.statusCode, 200, 'inside the grace, a replay looks like a lost response and is re-issued')
  const r3 = thief.json().refresh_token as string
  t.equal((await me(app, thief.json().access_token)).statusCode, 200, "the thief's access token works, for now")

  const back = await refresh(app, i, r2)
  t.equal(back.statusCode, 400, 'the rightful client presents the token the re-issue revoked')
  t.equal(back.json().error, 'invalid_grant')

  for (const [name, token] of Object.entries({ r1, r2, r3 })) {
    t.equal((await refresh(app, i, token)).statusCode, 400, `refresh token ${name} is refused`)
  }
  for (const [name, token] of Object.entries({ thief: thief.json().access_token, legit: legit.access_token })) {
    const res = await me(app, token)
    t.equal(res.statusCode, 401, `the ${name}'s access token is refused`)
    t.equal(res.json().message, 'Invalid access token.')
  }

  const again = await install(app, { orgRefId: i.orgRefId, entityRefId: i.entityRefId, app: i })
  t.equal((await me(app, again.accessToken)).statusCode, 200, 'consenting again gives working tokens')
})

t.test('a rotated token presented after its successor was used revokes the family', async t => {
  const app = await build(t)
  const i = await install(app)
  const r2 = (await refresh(app, i, i.refreshToken)).json().refresh_token
  const third = (await refresh(app, i, r2)).json()
  t.equal((await refresh(app, i, i.refreshToken)).statusCode, 400, 'r1 again: its successor was used')
  t.equal((await refresh(app, i, third.refresh_token)).statusCode, 400, 'the current token is revoked too')
  t.equal((await me(app, third.access_token)).statusCode, 401, 'and the access token issued with it')
})

t.test('10 concurrent first consents: one install, no 5xx, a code for each', async t => {
  const app = await build(t)
  const first = await install(app)
  const orgRefId = unique('org')
  const entityRefId = unique('ent')
  const user = app.userSessions.sign({ sub: unique('user'), orgRefId, entityRefIds: [entityRefId] })
  const consent = () => app.inject({
    method: 'POST',
    url: '/oauth/authorize',
    headers: { authorization: `Bearer ${user}`, 'content-type': 'application/json' },
    payload: JSON.stringify({
      client_id: first.clientId,
      redirect_uri: REDIRECT_URI,
      scope: 'invoices:read',
      state: 'xyz',
      code_challenge: pkcePair().challenge,
      code_challenge_method: 'S256',
      org_ref_id: orgRefId,
      entity_ref_id: entityRefId,
      decision: 'allow'
    })
  })
  const answers = await Promise.all(Array.from({ length: 10 }, consent))
  t.same(answers.map(a => a.statusCode), Array(10).fill(302), 'every consent redirects')
  t.ok(answers.every(a => new URL(a.headers.location as string).searchParams.get('code')), 'each with a code')
  const listing = await app.inject({
    method: 'GET',
    url: `/orgs/${orgRefId}/entities/${entityRefId}/installs`,
    headers: bearer(user)
  })
  t.equal(listing.statusCode, 200)
  const installs = listing.json().installs as Array<{ Status: string }>
  t.equal(installs.filter(x => x.Status === 'active').length, 1, 'one active install')
  t.equal(installs.length, 1, 'and no other')
})
