/**
 * Redis frozen under load, and SIGTERM under load with a delivery in flight, against a Postgres cluster and a
 * Redis this test starts itself and the service in its own process.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import pg from 'pg'
import t, { type Test } from 'tap'
import { Pool } from 'undici'
import { buildApp } from '../../app.js'
import { bearer, eventually, install, testConfig, type Installed } from '../support/helper.js'
import { startReceiver } from '../support/receiver.js'
import {
  missingPeers, SECRETS, startCluster, startLoad, startRedis, startService, summary, type RequestMaker
} from '../support/faults.js'

const missing = missingPeers()
t.test('Redis frozen and SIGTERM under load', { skip: missing && `fault tests need real peers: ${missing}` }, main)

async function main (t: Test): Promise<void> {
  const cluster = await startCluster(t)
  const redis = await startRedis(t)
  const receiver = await startReceiver(t)
  const env = {
    DATABASE_URL: cluster.url,
    REDIS_URL: redis.url,
    WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
    WEBHOOK_CA_FILE: receiver.caFile,
    ...SECRETS
  }
  const setup = await buildApp(testConfig(t, { ...env, WEBHOOK_WORKER: 'false' }))
  await setup.ready()
  const i: Installed = await install(setup)
  const subscribed = await setup.inject({
    method: 'POST',
    url: `/public/v1/orgs/${i.orgRefId}/entities/${i.entityRefId}/webhooks`,
    headers: { ...bearer(i.accessToken), 'content-type': 'application/json' },
    payload: JSON.stringify({ topics: ['invoice.paid'], target_url: receiver.url })
  })
  t.equal(subscribed.statusCode, 201)
  await setup.close()
  const service = await startService(t, { ...env, MCP_RATE_LIMIT_IP: '1000000', MCP_ALLOW_ANONYMOUS: 'true' })

  const me: RequestMaker = () => ({ kind: 'me', method: 'GET', path: '/public/v1/me', headers: bearer(i.accessToken) })
  // Rate-limited per IP in Redis before anything else; without a session it is answered 400 (-32000).
  const mcp: RequestMaker = () => ({
    kind: 'mcp',
    method: 'POST',
    path: '/mcp',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' })
  })

  await t.test('Redis frozen for 10 s: rate limits fail open at once, nothing hangs', async t => {
    const load = startLoad(service.base, [me, mcp], { concurrency: 8 })
    t.teardown(() => load.stop())
    await sleep(500)
    redis.freeze()
    await sleep(10_000)
    redis.thaw()
    await sleep(1_000)
    const outcomes = await load.stop()
    t.comment(summary(outcomes))
    t.same(outcomes.filter(o => o.kind === 'me' && o.status !== 200).slice(0, 3), [], '/me answers 200 throughout')
    t.same(outcomes.filter(o => o.kind === 'mcp' && o.status !== 400).slice(0, 3), [], '/mcp is answered throughout')
    const slowest = Math.max(...outcomes.map(o => o.ms))
    // A request waits at most one Redis command time-out (250 ms) before the limiter lets it through.
    t.ok(slowest < 1_000, `no request waits for Redis beyond its bound (slowest ${Math.round(slowest)} ms)`)
    t.ok(outcomes.length > 1_000, `${outcomes.length} requests served`)
  })

  await t.test('SIGTERM under load with a delivery in flight', async t => {
    let release: () => void = () => {}
    receiver.respond = (_r, res) => { release = () => res.end('ok') }
    t.teardown(() => release())
    const before = receiver.received.length
    const published = await fetch(`${service.base}/events`, {
      method: 'POST',
      headers: { authorization: `Bearer ${SECRETS.EVENTS_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ topic: 'invoice.paid', org_ref_id: i.orgRefId, entity_ref_id: i.entityRefId, data: {} })
    })
    t.equal(published.status, 202)
    const eventId = ((await published.json()) as { id: string }).id
    await receiver.waitFor(before + 1)

    // The probe is a load balancer's health checker, with a few keep-alive connections of its own: one request
    // in flight as the signal lands is answered (Connection: close) and takes its connection along.
    const probe = new Pool(service.base, { connections: 4 })
    t.teardown(() => probe.close())
    const load = startLoad(service.base, [me], { concurrency: 8 })
    t.teardown(() => load.stop())
    await sleep(500)
    const warm = await Promise.all(Array.from({ length: 4 }, async () => {
      const res = await probe.request({ method: 'GET', path: '/health/ready' })
      await res.body.dump()
      return res.statusCode
    }))
    t.same(warm, [200, 200, 200, 200])

    const signalled = performance.now()
    service.child.kill('SIGTERM')
    // A probe that finds its connection gone tries again (undici retries the closed one first, and is refused).
    const answer = await eventually(async () => {
      const res = await probe.request({ method: 'GET', path: '/health/ready' }).catch(() => undefined)
      await res?.body.dump()
      return res
    }, { until: res => res?.statusCode === 503, interval: 5, timeout: 2_000, what: 'readiness to say 503' })
    const within = performance.now() - signalled
    t.ok(within < 100, `readiness 503 within 100 ms of SIGTERM (${Math.round(within)} ms)`)
    t.equal(answer!.headers.connection, 'close', 'and the answer closes its keep-alive connection')
    // The listener takes no new connection (SHUTDOWN_DELAY_SECONDS is 0 by default).
    await eventually(() => fetch(`${service.base}/health`).then(() => 'open', () => 'refused'), {
      until: state => state === 'refused', timeout: 3_000, what: 'the listener to close'
    })

    // The delivery in flight finishes after the signal, and is recorded before the database closes.
    release()
    t.equal(await service.exited, 0, 'exits 0')
    const outcomes = await load.stop()
    t.comment(summary(outcomes))
    const resets = outcomes.filter(o => o.error && o.error !== 'ECONNREFUSED')
      .map(o => ({ ...o, at: Math.round(o.at! - signalled) }))
    t.same(resets.slice(0, 3), [], 'no connection reset: busy connections were told Connection: close')
    t.ok(outcomes.filter(o => o.status === 200).length > 0, 'the load was served until the end')

    const db = new pg.Client({ connectionString: cluster.url })
    await db.connect()
    t.teardown(() => db.end())
    const [delivery] = (await db.query(
      'select d.status from webhook_deliveries d where d.event_id = $1', [eventId])).rows
    t.equal(delivery?.status, 'succeeded', 'the delivery in flight was recorded as succeeded')
  })
}
