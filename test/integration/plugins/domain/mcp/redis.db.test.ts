import { randomInt } from 'node:crypto'
import { Redis } from 'ioredis'
import t from 'tap'
import { bearer, build, install } from '../../../../support/helper.js'

const REDIS_URL = process.env.REDIS_URL ?? 'redis://127.0.0.1:6379'

async function redisUp (): Promise<boolean> {
  const probe = new Redis(REDIS_URL, {
    lazyConnect: true,
    maxRetriesPerRequest: 0,
    connectTimeout: 500,
    retryStrategy: () => null
  })
  probe.on('error', () => {})
  try {
    await probe.connect()
    await probe.ping()
    return true
  } catch {
    return false
  } finally {
    probe.disconnect()
  }
}

const skip = (await redisUp()) ? false : `Redis is not reachable at ${REDIS_URL} (CI starts it)`
const ACCEPT = { accept: 'application/json, text/event-stream', 'content-type': 'application/json' }
const initialize = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'raw', version: '1' } }
})

// Two instances on one Redis for the file (and, on Postgres, one database), reached through inject.
const env = { REDIS_URL, MCP_RATE_LIMIT_IP: '10', MCP_ALLOW_ANONYMOUS: 'true' }
const apps = skip ? [] : [await build(t, env), await build(t, env)]
// Until its connection is ready an instance lets every request through uncounted
// (plugins/infrastructure/rate-limit.ts): the tests start once both are. A connection attempt that times out on a
// loaded machine is retried by the client; `once(…, 'ready')` would take its error event as the end.
await Promise.all(apps.map(app => app.redis!.status === 'ready'
  ? undefined
  : new Promise(resolve => app.redis!.once('ready', resolve))))
// Redis counters outlive a run by up to a minute, and other runs may share the Redis: the requests come from
// addresses drawn for this run (in 198.18.0.0/15, kept for tests), so that no count starts from another run's.
const first = randomInt(65_000)
const address = (n: number): string => `198.18.${(first + n) >> 8}.${(first + n) & 255}`

t.test('with REDIS_URL, two instances share the per-IP count', { skip }, async t => {
  const from = address(0)
  const send = (n: number) =>
    apps[n % 2]!.inject({ method: 'POST', url: '/mcp', remoteAddress: from, headers: ACCEPT, payload: initialize })
  const statuses: number[] = []
  for (let n = 0; n < 10; n++) statuses.push((await send(n)).statusCode)
  t.same(statuses, Array(10).fill(200), '10 requests, alternating between the instances')
  for (const n of [0, 1]) {
    const res = await send(n)
    t.equal(res.statusCode, 429, 'the 11th and 12th are refused by either instance: the count is shared')
    t.same(res.json(), { jsonrpc: '2.0', error: { code: -32000, message: 'Rate limit exceeded.' }, id: null })
  }
})

t.test('with REDIS_URL, two instances share the per-install count of stateless requests', {
  skip: skip || (process.env.DATABASE_URL ? false : 'two instances need one Postgres: set DATABASE_URL (CI does)')
}, async t => {
  const i = await install(apps[0]!)
  const envelope = {
    'io.modelcontextprotocol/protocolVersion': '2026-07-28',
    'io.modelcontextprotocol/clientCapabilities': {}
  }
  // Each request from another address, a few per address: only the per-install count can refuse them.
  const list = (n: number) => apps[n % 2]!.inject({
    method: 'POST',
    url: '/mcp',
    remoteAddress: address(1 + (n % 20)),
    headers: {
      ...ACCEPT,
      ...bearer(i.accessToken),
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': 'tools/list'
    },
    payload: JSON.stringify({ jsonrpc: '2.0', id: n, method: 'tools/list', params: { _meta: envelope } })
  })
  const statuses: number[] = []
  for (let n = 1; n <= 60; n++) statuses.push((await list(n)).statusCode)
  t.same(statuses, Array(60).fill(200), '60 stateless requests of one install, alternating between the instances')
  for (const n of [61, 62]) {
    const res = await list(n)
    t.equal(res.statusCode, 429, 'the 61st is refused by either instance: the count is shared')
    t.same(res.json(), { jsonrpc: '2.0', error: { code: -32000, message: 'Rate limit exceeded.' }, id: null })
  }
})

t.test('the Redis keys say what they count: namespace, then ip:, session: or install:', { skip }, async t => {
  const from = address(40)
  const res = await apps[0]!.inject({
    method: 'POST', url: '/mcp', remoteAddress: from, headers: ACCEPT, payload: initialize
  })
  t.equal(res.statusCode, 200)
  const session = res.headers['mcp-session-id'] as string
  const keys = await apps[0]!.redis!.keys('mg-mcp-rl-*')
  t.ok(keys.includes(`mg-mcp-rl-ip:${from}`), `the address's count is mg-mcp-rl-ip:${from}`)
  t.ok(keys.includes(`mg-mcp-rl-session:${session}`), 'the session\'s is mg-mcp-rl-session:<id>')
  // (Other runs may share the Redis and have left keys of their own: only this test's are looked at.)
  t.same(keys.filter(k => k.includes('undefined') && (k.endsWith(from) || k.endsWith(session))), [],
    'none of them names an undefined route')
})
