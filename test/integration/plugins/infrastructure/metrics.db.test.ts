import { Writable } from 'node:stream'
import pg from 'pg'
import t from 'tap'
import type { AppInstance } from '../../../../app.js'
import { bearer, build, eventually, install, TEST_DATABASE_URL } from '../../../support/helper.js'
import { selfSigned, startReceiver } from '../../../support/receiver.js'
import { publish, receiverEnv, subscribe } from '../../../support/webhooks.js'

const TOKEN = 'metrics-token-for-the-tests-0123'

// One app for the file, serving /metrics, logging at info (one line per delivery attempt, read by a test), and
// delivering to a test receiver with a minute before each retry (a retry stays in the queue while the test looks).
const lines: string[] = []
const logStream = new Writable({
  write (chunk, _enc, done) {
    lines.push(chunk.toString())
    done()
  }
})
const app = await build(t, receiverEnv(selfSigned().caFile, {
  METRICS_TOKEN: TOKEN,
  LOG_LEVEL: 'info',
  WEBHOOK_RETRY_SCHEDULE: '60,60'
}), { logStream })
// A second app, for /metrics not served without METRICS_TOKEN. Its Redis does not answer, so that the errors can
// be counted (read from its registry, which is what /metrics serves) without the main app's limits failing open.
// No delivery worker: on Postgres it would share the queue, and take deliveries to a target it refuses.
const off = await build(t, { REDIS_URL: 'redis://127.0.0.1:1', WEBHOOK_WORKER: 'false' })

/** GET /metrics as Prometheus would; `poll`: one of many tries of `eventually`, which counts no assertion. */
const scrape = async (app: AppInstance, poll = false) => {
  const res = await app.inject({ method: 'GET', url: '/metrics', headers: bearer(TOKEN) })
  if (!poll || res.statusCode !== 200) t.equal(res.statusCode, 200)
  return res.body
}
/** The value of one series, or undefined. */
const value = (text: string, series: string): number | undefined => {
  const line = text.split('\n').find(l => l.startsWith(series + ' '))
  return line === undefined ? undefined : Number(line.slice(series.length + 1))
}
/** How much a series grew between two scrapes (absent counts as 0): the tests share the app's counters. */
const grew = (before: string, after: string, series: string): number =>
  (value(after, series) ?? 0) - (value(before, series) ?? 0)

t.test('GET /metrics: only with METRICS_TOKEN, Prometheus text, never in the OpenAPI document', async t => {
  t.equal((await off.inject({ method: 'GET', url: '/metrics' })).statusCode, 404, 'not served without METRICS_TOKEN')

  for (const authorization of [undefined, 'Bearer wrong', `Bearer ${TOKEN}x`, TOKEN]) {
    const res = await app.inject({ method: 'GET', url: '/metrics', headers: authorization ? { authorization } : {} })
    t.equal(res.statusCode, 401, String(authorization))
    t.same(res.json(), { error: 'invalid_token', message: 'A valid metrics token is required.' })
  }
  const res = await app.inject({ method: 'GET', url: '/metrics', headers: bearer(TOKEN) })
  t.equal(res.statusCode, 200)
  t.match(res.headers['content-type'], /^text\/plain; version=0\.0\.4/)
  t.match(res.body, /^# HELP process_cpu_user_seconds_total/m, 'process metrics')
  const doc = (await app.inject({ method: 'GET', url: '/public/v1/openapi.json' })).json()
  t.notOk(Object.keys(doc.paths).some(p => p.includes('metrics')), 'not among the paths of the OpenAPI document')
  t.notMatch(JSON.stringify(doc), '/metrics', 'nor anywhere else in it')
})

t.test('pool usage: the Postgres pool, nothing on the embedded database', async t => {
  const text = await scrape(app)
  const total = value(text, 'db_pool_total')
  if (TEST_DATABASE_URL) {
    t.ok((total ?? 0) >= 1, 'the pool has the connections the app opened')
    t.ok(value(text, 'db_pool_idle') !== undefined)
    t.equal(value(text, 'db_pool_waiting'), 0)
  } else {
    t.equal(total, undefined, 'no pool gauge without a pool')
  }
})

t.test('requests by route template and status, the access cache, MCP sessions', async t => {
  const i = await install(app)
  const before = await scrape(app)
  for (let n = 0; n < 3; n++) {
    await app.inject({ method: 'GET', url: '/public/v1/me', headers: bearer(i.accessToken) })
  }
  const tenant = `/public/v1/orgs/${i.orgRefId}/entities/${i.entityRefId}/invoices`
  await app.inject({ method: 'GET', url: tenant, headers: bearer(i.accessToken) })
  await app.inject({ method: 'GET', url: '/no/such/route' })
  const text = await scrape(app)
  t.equal(grew(before, text,
    'http_request_duration_seconds_count{method="GET",route="/public/v1/me",status_code="200"}'), 3)
  t.equal(grew(before, text,
    'http_request_duration_seconds_bucket{method="GET",route="/public/v1/me",status_code="200",le="+Inf"}'), 3,
  'buckets are cumulative up to the count')
  t.equal(value(text,
    'http_request_duration_seconds_bucket{method="GET",route="/public/v1/me",status_code="200",le="+Inf"}'),
  value(text, 'http_request_duration_seconds_count{method="GET",route="/public/v1/me",status_code="200"}'))
  t.equal(grew(before, text,
    'http_request_duration_seconds_count{method="GET",route="/public/v1/orgs/:orgId/entities/:entityId/invoices",' +
    'status_code="200"}'), 1, 'the route template, not the URL')
  t.notMatch(text, i.orgRefId, 'no tenant id in any label')
  t.equal(grew(before, text,
    'http_request_duration_seconds_count{method="GET",route="unmatched",status_code="404"}'), 1)
  t.ok(grew(before, text, 'access_cache_lookups_total{result="hit"}') >= 2, 'cache hits counted')
  t.ok((value(text, 'access_cache_hit_ratio') ?? 0) > 0)
  t.equal(value(text, 'mcp_active_sessions'), 0)
})

t.test('deliveries: attempts by outcome, queue depth and age, one log line per attempt', async t => {
  const receiver = await startReceiver(t)
  const i = await install(app)
  const { signing_secret: secret } = await subscribe(app, i, { target_url: receiver.url })

  await publish(app, i)
  await receiver.waitFor(1)
  receiver.respond = (_r, res) => { res.statusCode = 503; res.end('down') }
  await publish(app, i)
  await receiver.waitFor(2)
  // The queue gauges are read at most once a second (domain/webhooks): an earlier test's scrape may still answer.
  const text = await eventually(() => scrape(app, true), {
    until: m => value(m, 'webhook_delivery_attempts_total{outcome="retrying"}') === 1 &&
      value(m, 'webhook_queue_depth') === 1,
    what: 'both attempts counted, and the retry in the queue'
  })
  t.equal(value(text, 'webhook_delivery_attempts_total{outcome="delivered"}'), 1)
  t.equal(value(text, 'webhook_delivery_duration_seconds_count'), 2)
  t.equal(value(text, 'webhook_queue_depth'), 1, 'the failed one waits for its retry')
  t.ok((value(text, 'webhook_oldest_pending_age_seconds') ?? -1) >= 0)
  t.equal(value(text, `webhook_tenant_backlog{tenant="${i.orgRefId}/${i.entityRefId}"}`), 1,
    'the backlog of the tenant, one of the top ten')
  t.equal(value(text, 'webhook_tenants_with_backlog'), 1)
  t.equal(value(text, 'webhook_subscriptions_with_backlog'), 1)
  t.equal(value(text, 'webhook_subscription_backlog_max'), 1)
  t.equal(value(text, 'webhook_subscription_in_flight_max'), 0, 'the retry waits: nothing in flight')
  t.equal(value(text, 'webhook_tenants_at_cap'), 0)
  t.equal(value(text, 'webhook_subscriptions_at_cap'), 0)

  const attempts = lines.map(l => JSON.parse(l)).filter(l => l.msg === 'webhook delivery attempt')
  t.equal(attempts.length, 2, 'one line per attempt')
  t.match(attempts[0], { level: 30, outcome: 'delivered', status: 200, attempt: 1, subscription_id: String })
  t.match(attempts[1], { level: 40, outcome: 'retrying', status: 503, attempt: 1, next_attempt_at: String })
  t.ok(attempts.every(a => typeof a.duration_ms === 'number' && typeof a.delivery_id === 'string'))
  const logged = attempts.map(a => JSON.stringify(a)).join('\n')
  t.notMatch(logged, secret, 'never the signing secret')
  t.notMatch(logged, 'down', "never the receiver's answer")
})

t.test('Redis errors are counted by kind', async t => {
  const text = await eventually(() => off.metrics.registry.metrics(), {
    until: m => /^dependency_errors_total\{dependency="redis",kind="refused"\} [1-9]/m.test(m),
    what: 'a refused Redis connection to be counted'
  })
  t.match(text, /dependency_errors_total\{dependency="redis"/)
})

// Last: it cuts the app's connections.
t.test('Postgres errors are counted by kind', { skip: !TEST_DATABASE_URL && 'needs Postgres' }, async t => {
  await app.inject({ method: 'GET', url: '/health/ready' })
  // The service's connections are cut under it, as a fail-over or a restart of the server would.
  const admin = new pg.Client({ connectionString: TEST_DATABASE_URL })
  await admin.connect()
  t.teardown(() => admin.end())
  await admin.query(`select pg_terminate_backend(pid) from pg_stat_activity
                      where datname = current_database() and pid <> pg_backend_pid()`)
  const text = await eventually(() => scrape(app, true), {
    until: m => /^dependency_errors_total\{dependency="postgres",kind="[a-z_]+"\} [1-9]/m.test(m),
    what: 'the cut connections to be counted'
  })
  t.match(text, /dependency_errors_total\{dependency="postgres",kind="(shutting_down|connection_lost)"\}/)
  // Each idle connection of the pool was cut, and each is found dead once: the app's earlier tests left several.
  const ready = await eventually(async () => (await app.inject({ method: 'GET', url: '/health/ready' })).statusCode,
    { until: status => status === 200, what: 'the pool to replace its cut connections' })
  t.equal(ready, 200, 'and the pool recovers')
})
