import { execFileSync } from 'node:child_process'
import { randomInt } from 'node:crypto'
import { Redis, type Command } from 'ioredis'
import t from 'tap'
import type { AppInstance } from '../../../../../app.js'
import { startRedis } from '../../../../support/faults.js'
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

const hasRedisServer = (() => {
  try {
    execFileSync('redis-server', ['--version'], { stdio: 'ignore' })
    return true
  } catch {
    return false
  }
})()

/** Once the app's Redis connection is ready: until then an instance lets every request through uncounted. */
const connected = (app: AppInstance): Promise<unknown> | undefined => app.redis!.status === 'ready'
  ? undefined
  : new Promise(resolve => app.redis!.once('ready', resolve))

// Two instances on one Redis for the file (and, on Postgres, one database), reached through inject.
const env = { REDIS_URL, MCP_RATE_LIMIT_IP: '10', MCP_ALLOW_ANONYMOUS: 'true' }
const apps = skip ? [] : [await build(t, env), await build(t, env)]
// Until its connection is ready an instance lets every request through uncounted
// (plugins/infrastructure/rate-limit.ts): the tests start once both are. A connection attempt that times out on a
// loaded machine is retried by the client; `once(…, 'ready')` would take its error event as the end.
await Promise.all(apps.map(connected))
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
    t.same(res.json(), { jsonrpc: '2.0', error: { code: -32000, message: 'Rate limit exceeded.' }, id: 1 })
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
    t.same(res.json(), { jsonrpc: '2.0', error: { code: -32000, message: 'Rate limit exceeded.' }, id: n })
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

t.test('Redis frozen: the per-IP and per-session counts wait on one command, and the request goes through', {
  skip: skip || (hasRedisServer ? false : 'no redis-server to start and freeze')
}, async t => {
  // A Redis of the test's own, never the shared one: it is frozen (SIGSTOP), every connection left open.
  const redis = await startRedis(t)
  const app = await build(t, { REDIS_URL: redis.url, MCP_ALLOW_ANONYMOUS: 'true' })
  await connected(app)
  const from = address(50)
  const init = await app.inject({
    method: 'POST', url: '/mcp', remoteAddress: from, headers: ACCEPT, payload: initialize
  })
  t.equal(init.statusCode, 200)
  const session = String(init.headers['mcp-session-id'])
  const ping = () => app.inject({
    method: 'POST',
    url: '/mcp',
    remoteAddress: from,
    headers: { ...ACCEPT, 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' },
    payload: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'ping' })
  })
  // What the app asks Redis, and how each ends: the commands of the requests (the breaker's probe, a ping, aside).
  const commands: Array<Promise<string>> = []
  const client = app.redis!
  const send = client.sendCommand.bind(client)
  client.sendCommand = (command: Command, ...rest) => {
    if (command.name !== 'ping') {
      commands.push(command.promise.then(() => 'answered', (err: Error) => err.message))
    }
    return send(command, ...rest)
  }

  t.equal((await ping()).statusCode, 200)
  t.same(await Promise.all(commands.splice(0)), ['answered'], 'one command counts a request per IP and per session')

  redis.freeze()
  t.teardown(() => redis.thaw())
  const res = await ping()
  t.equal(res.statusCode, 200, 'Redis silent: the request is let through uncounted (fail open)')
  t.same(await Promise.all(commands.splice(0)), ['Command timed out'],
    'after one command time-out, not one for each count')
  redis.thaw()
})
