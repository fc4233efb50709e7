import t from 'tap'
import { bearer, build, eventually, install } from '../../../support/helper.js'

const postgres = process.env.DATABASE_URL ? false : 'needs Postgres: set DATABASE_URL (CI runs it)'

/** Milliseconds until `check` holds, polled every 2 ms (the propagation time under test). */
async function timeUntil (check: () => Promise<boolean>, timeout: number): Promise<number> {
  const start = performance.now()
  await eventually(check, { timeout, interval: 2 })
  return performance.now() - start
}

t.test('an uninstall through instance A is refused by instance B within 100 ms', { skip: postgres }, async t => {
  const a = await build(t)
  const b = await build(t)
  const i = await install(a)
  const meOnB = () => b.inject({ method: 'GET', url: '/public/v1/me', headers: bearer(i.accessToken) })
  t.equal((await meOnB()).statusCode, 200, 'B serves the token, and caches the install state')
  t.equal((await meOnB()).statusCode, 200)

  const del = await a.inject({ method: 'DELETE', url: `/installs/${i.installId}`, headers: bearer(i.userToken) })
  t.equal(del.statusCode, 200)
  const elapsed = await timeUntil(async () => (await meOnB()).statusCode === 401, 1000)
  t.ok(elapsed < 100, `B refused after ${elapsed.toFixed(1)} ms`)
  t.same((await meOnB()).json(), { error: 'invalid_token', message: 'Install is not active.' })
})

t.test('a key disable through A is refused by B within 100 ms', { skip: postgres }, async t => {
  const a = await build(t)
  const b = await build(t)
  const i = await install(a)
  const meOnB = () => b.inject({ method: 'GET', url: '/public/v1/me', headers: bearer(i.accessToken) })
  t.equal((await meOnB()).statusCode, 200)
  await a.inject({ method: 'POST', url: `/apps/${i.clientId}/api-key/disable`, headers: bearer(i.ownerToken) })
  const elapsed = await timeUntil(async () => (await meOnB()).statusCode === 401, 1000)
  t.ok(elapsed < 100, `B refused after ${elapsed.toFixed(1)} ms`)
  t.equal((await meOnB()).json().error, 'invalid_client')
})

t.test('when B loses its notification connection, B stops trusting its cache', { skip: postgres }, async t => {
  const a = await build(t)
  const b = await build(t)
  const i = await install(a)
  const meOnB = () => b.inject({ method: 'GET', url: '/public/v1/me', headers: bearer(i.accessToken) })
  t.equal((await meOnB()).statusCode, 200)

  const [killed] = await a.db.query<{ ok: boolean }>(
    'select pg_terminate_backend(pid) as ok from pg_stat_activity where application_name = $1', [b.db.listenerName])
  t.equal(killed?.ok, true, "B's listener connection was cut")
  await eventually(async () => !b.db.notificationsHealthy, { timeout: 1000 })
  t.equal(b.db.notificationsHealthy, false)

  // With no notifications reaching B, only reading the database can make B refuse.
  await a.inject({ method: 'DELETE', url: `/installs/${i.installId}`, headers: bearer(i.userToken) })
  t.equal((await meOnB()).statusCode, 401, 'refused at once, from the database')

  await eventually(async () => b.db.notificationsHealthy, { timeout: 3000, what: 'the listener to reconnect' })
  t.ok(b.db.notificationsHealthy, 'the listener reconnects by itself')
})
