import { randomUUID } from 'node:crypto'
import t from 'tap'
import type { AppInstance } from '../../../../../app.js'
import { bearer, build, eventually, install } from '../../../../support/helper.js'

type Test = Parameters<Parameters<typeof t.test>[0]>[0]

const postgres = process.env.DATABASE_URL ? false : 'needs Postgres: set DATABASE_URL (CI runs it)'

/** Access-state lookups an instance answered from its cache, as /metrics would serve the count. */
async function cacheHits (app: AppInstance): Promise<number> {
  const text = await app.metrics.registry.metrics()
  const line = text.split('\n').find(l => l.startsWith('access_cache_lookups_total{result="hit"} '))
  return Number(line?.split(' ')[1] ?? 0)
}

// Two instances on one database, shared by the tests: each makes its own install.
t.test('two instances on one database', { skip: postgres }, async t => {
  const a = await build(t)
  const b = await build(t)
  // What B's listener receives, after B's own handler has run on it (handlers run in the order they were added).
  const applied = new Set<string>()
  await b.db.listen('access_changed', payload => applied.add(payload))
  /**
   * Waits until B has applied every change committed so far. Postgres delivers notifications in commit order, so
   * once a marker sent now has reached B, so has every notification before it. (Waiting for the change's own
   * payload would not do: the install already sent the same `app:` payload.)
   */
  async function bCaughtUp (): Promise<void> {
    const marker = `marker:${randomUUID()}`
    await a.db.query("select pg_notify('access_changed', $1)", [marker])
    await eventually(() => applied.has(marker), { what: 'B to receive the notifications sent so far' })
  }
  const meOnB = (token: string) => b.inject({ method: 'GET', url: '/public/v1/me', headers: bearer(token) })
  /** B answers the token from its cache: without the notification, B would go on saying 200. */
  async function cachedOnB (t: Test, token: string): Promise<void> {
    t.equal((await meOnB(token)).statusCode, 200, 'B serves the token, and caches the install state')
    const hits = await cacheHits(b)
    t.equal((await meOnB(token)).statusCode, 200)
    t.equal(await cacheHits(b), hits + 1, 'from its cache')
  }

  await t.test('an uninstall through instance A is refused by B once B has the notification', async t => {
    const i = await install(a)
    await cachedOnB(t, i.accessToken)
    const del = await a.inject({ method: 'DELETE', url: `/installs/${i.installId}`, headers: bearer(i.userToken) })
    t.equal(del.statusCode, 200)
    await bCaughtUp()
    t.ok(applied.has(`install:${i.installId}`), 'B had the notification of the uninstall')
    const next = await meOnB(i.accessToken)
    t.equal(next.statusCode, 401, 'the first request after the notification is refused')
    t.same(next.json(), { error: 'invalid_token', message: 'Install is not active.' })
    t.ok(b.db.notificationsHealthy, 'by the notification, not by a lost listener emptying the cache')
  })

  await t.test('a key disable through A is refused by B once B has the notification', async t => {
    const i = await install(a)
    await cachedOnB(t, i.accessToken)
    await a.inject({ method: 'POST', url: `/apps/${i.clientId}/api-key/disable`, headers: bearer(i.ownerToken) })
    await bCaughtUp()
    const next = await meOnB(i.accessToken)
    t.equal(next.statusCode, 401, 'the first request after the notification is refused')
    t.equal(next.json().error, 'invalid_client')
    t.ok(b.db.notificationsHealthy, 'by the notification, not by a lost listener emptying the cache')
  })

  // Last: it cuts B's listener.
  await t.test('when B loses its notification connection, B stops trusting its cache', async t => {
    const i = await install(a)
    t.equal((await meOnB(i.accessToken)).statusCode, 200)

    const [killed] = await a.db.query<{ ok: boolean }>(
      'select pg_terminate_backend(pid) as ok from pg_stat_activity where application_name = $1', [b.db.listenerName])
    t.equal(killed?.ok, true, "B's listener connection was cut")
    await eventually(async () => !b.db.notificationsHealthy, { timeout: 1000 })
    t.equal(b.db.notificationsHealthy, false)

    // With no notifications reaching B, only reading the database can make B refuse.
    await a.inject({ method: 'DELETE', url: `/installs/${i.installId}`, headers: bearer(i.userToken) })
    t.equal((await meOnB(i.accessToken)).statusCode, 401, 'refused at once, from the database')

    await eventually(async () => b.db.notificationsHealthy, { timeout: 3000, what: 'the listener to reconnect' })
    t.ok(b.db.notificationsHealthy, 'the listener reconnects by itself')
  })
})
