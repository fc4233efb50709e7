/**
 * Races on the install lifecycle: concurrent refreshes of one token, a stolen refresh token replayed inside the
 * grace window, and concurrent first consents. On Postgres the requests really run at once (a pool of
 * connections); on the embedded database they take turns, which the rules must also get right.
 */
import t from 'tap'
import { bearer, build, install, pkcePair, REDIRECT_URI, unique, type Installed } from '../../../support/helper.js'

// One app for the file: every test makes its own install.
const app = await build(t)

const refresh = (i: Installed, token: string) => app.inject({
  method: 'POST',
  url: '/oauth/token',
  headers: { 'content-type': 'application/json' },
  payload: JSON.stringify({
    grant_type: 'refresh_token', refresh_token: token, client_id: i.clientId, client_secret: i.clientSecret
  })
})
const me = (token: string) => app.inject({ method: 'GET', url: '/public/v1/me', headers: bearer(token) })

const GATE_MS = 30_000

/**
 * Presents one refresh token `n` times at once. Each presentation waits at the refresh rule until all `n` have
 * arrived, so every one of them reached the service before the first rotation: a request routed after the rotation
 * is a retry of a lost answer (the grace window), and how fast this machine routes `n` requests must not decide
 * which of them those are. On Postgres, more presentations than the pool has connections (20) also means that some
 * wait for a connection until after the winner committed, and must still count as racing. A request that fails
 * before it reaches the rule would keep the gate shut: after GATE_MS the presentation fails, saying how many arrived.
 */
async function presentAtOnce (i: Installed, token: string, n: number) {
  const rule = app.oauth.refresh
  let arrived = 0
  let allArrived!: () => void
  const gate = new Promise<void>(resolve => { allArrived = resolve })
  let timer: NodeJS.Timeout | undefined
  const bound = new Promise<never>((_resolve, reject) => {
    timer = setTimeout(() => reject(new Error(
      `only ${arrived} of the ${n} presentations reached the refresh rule within ${GATE_MS} ms`)), GATE_MS)
  })
  app.oauth.refresh = async (...args) => {
    if (++arrived === n) allArrived()
    await Promise.race([gate, bound])
    return rule.apply(app.oauth, args)
  }
  try {
    return await Promise.race([Promise.all(Array.from({ length: n }, () => refresh(i, token))), bound])
  } finally {
    clearTimeout(timer)
    app.oauth.refresh = rule
  }
}

const N = 50

t.test(`${N} concurrent refreshes of one token: each gets the same successor, and the family lives`, async t => {
  const i = await install(app)
  const answers = await presentAtOnce(i, i.refreshToken, N)
  t.same(answers.map(a => a.statusCode), Array(N).fill(200), `all ${N} answered 200`)
  const tokens = answers.map(a => a.json())
  t.equal(new Set(tokens.map(a => a.refresh_token)).size, 1, 'one refresh token in every answer')
  t.not(tokens[0].refresh_token, i.refreshToken, 'a new one')
  for (const k of [0, N - 1]) {
    t.equal((await me(tokens[k].access_token)).statusCode, 200, `the access token of answer ${k + 1} works`)
  }
  // Whichever answer the client kept: its refresh token rotates, and the first one is spent.
  const next = await refresh(i, tokens[N - 1].refresh_token)
  t.equal(next.statusCode, 200, 'the successor rotates')
  t.equal((await me(next.json().access_token)).statusCode, 200, 'the family lives')
})

t.test('20 refreshes of one token sent at once, however they interleave: one successor, and it works', async t => {
  const i = await install(app)
  const answers = await Promise.all(Array.from({ length: 20 }, () => refresh(i, i.refreshToken)))
  const won = answers.filter(a => a.statusCode === 200).map(a => a.json().refresh_token)
  t.ok(won.length >= 1, `${won.length} answered 200`)
  t.equal(new Set(won).size, 1, 'all with the same refresh token')
  t.equal((await refresh(i, won[0])).statusCode, 200, 'which rotates: the family lives')
})

t.test('two threads refreshing one after the other: the same successor twice, nothing revoked', async t => {
  const i = await install(app)
  const first = (await refresh(i, i.refreshToken)).json()
  const second = await refresh(i, i.refreshToken)
  t.equal(second.statusCode, 200, 'the second presentation, inside the grace window')
  t.equal(second.json().refresh_token, first.refresh_token, 'answers the successor the first one got')
  t.not(second.json().access_token, first.access_token, 'with an access token of its own')
  const third = await refresh(i, first.refresh_token)
  t.equal(third.statusCode, 200, "the first thread's successor was not revoked")
  t.equal((await me(first.access_token)).statusCode, 200)
  t.equal((await me(third.json().access_token)).statusCode, 200)
})

t.test('theft: a replay once the successor was used revokes the whole family', async t => {
  const i = await install(app)
  const r1 = i.refreshToken

  const legit = (await refresh(i, r1)).json()
  const r2 = legit.refresh_token as string
  const thief = await refresh(i, r1)
  t.equal(thief.statusCode, 200, 'inside the grace, a replay looks like a lost answer: the same successor again')
  t.equal(thief.json().refresh_token, r2, 'it forks nothing')
  t.equal((await me(thief.json().access_token)).statusCode, 200, "the thief's access token works, for now")

  // The rightful client rotates on; the stolen token, presented again, meets a used successor.
  const r3 = (await refresh(i, r2)).json().refresh_token as string
  const replay = await refresh(i, r1)
  t.equal(replay.statusCode, 400, 'the replay after the successor was used')
  t.equal(replay.json().error, 'invalid_grant')

  for (const [name, token] of Object.entries({ r1, r2, r3 })) {
    t.equal((await refresh(i, token)).statusCode, 400, `refresh token ${name} is refused`)
  }
  for (const [name, token] of Object.entries({ thief: thief.json().access_token, legit: legit.access_token })) {
    const res = await me(token)
    t.equal(res.statusCode, 401, `the ${name}'s access token is refused`)
    t.equal(res.json().message, 'Invalid access token.')
  }

  const again = await install(app, { orgRefId: i.orgRefId, entityRefId: i.entityRefId, app: i })
  t.equal((await me(again.accessToken)).statusCode, 200, 'consenting again gives working tokens')
})

t.test('a rotated token presented after its successor was used revokes the family', async t => {
  const i = await install(app)
  const r2 = (await refresh(i, i.refreshToken)).json().refresh_token
  const third = (await refresh(i, r2)).json()
  t.equal((await refresh(i, i.refreshToken)).statusCode, 400, 'r1 again: its successor was used')
  t.equal((await refresh(i, third.refresh_token)).statusCode, 400, 'the current token is revoked too')
  t.equal((await me(third.access_token)).statusCode, 401, 'and the access token issued with it')
})

t.test('10 concurrent first consents: one install, no 5xx, a code for each', async t => {
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
