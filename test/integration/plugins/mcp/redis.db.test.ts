import { Redis } from 'ioredis'
import t from 'tap'
import { bearer, build, install } from '../../../support/helper.js'

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

t.test('with REDIS_URL, two instances share the per-IP count', { skip }, async t => {
  // Counters outlive a run by up to a minute: start from zero.
  const admin = new Redis(REDIS_URL)
  t.teardown(() => admin.quit())
  const stale = await admin.keys('mg-mcp-rl-*')
  if (stale.length > 0) await admin.del(...stale)

  const bases: string[] = []
  for (let n = 0; n < 2; n++) {
    const app = await build(t, { REDIS_URL, MCP_RATE_LIMIT_IP: '10', MCP_ALLOW_ANONYMOUS: 'true' })
    await app.listen({ port: 0, host: '127.0.0.1' })
    bases.push(`http://127.0.0.1:${(app.server.address() as { port: number }).port}`)
  }
  const statuses: number[] = []
  for (let n = 0; n < 10; n++) {
    const res = await fetch(`${bases[n % 2]}/mcp`, { method: 'POST', headers: ACCEPT, body: initialize })
    await res.text()
    statuses.push(res.status)
  }
  t.same(statuses, Array(10).fill(200), '10 requests, alternating between the instances')
  for (const base of bases) {
    const res = await fetch(`${base}/mcp`, { method: 'POST', headers: ACCEPT, body: initialize })
    t.equal(res.status, 429, 'the 11th and 12th are refused by either instance: the count is shared')
    t.same(await res.json(), { jsonrpc: '2.0', error: { code: -32000, message: 'Rate limit exceeded.' }, id: null })
  }
})

t.test('with REDIS_URL, two instances share the per-install count of stateless requests', {
  skip: skip || (process.env.DATABASE_URL ? false : 'two instances need one Postgres: set DATABASE_URL (CI does)')
}, async t => {
  const admin = new Redis(REDIS_URL)
  t.teardown(() => admin.quit())
  const stale = await admin.keys('mg-mcp-rl-*')
  if (stale.length > 0) await admin.del(...stale)

  const apps = []
  const bases: string[] = []
  for (let n = 0; n < 2; n++) {
    const app = await build(t, { REDIS_URL })
    await app.listen({ port: 0, host: '127.0.0.1' })
    apps.push(app)
    bases.push(`http://127.0.0.1:${(app.server.address() as { port: number }).port}`)
  }
  const i = await install(apps[0]!)
  const envelope = {
    'io.modelcontextprotocol/protocolVersion': '2026-07-28',
    'io.modelcontextprotocol/clientCapabilities': {}
  }
  const list = (base: string, id: number) => fetch(`${base}/mcp`, {
    method: 'POST',
    headers: {
      ...ACCEPT,
      ...bearer(i.accessToken),
      'mcp-protocol-version': '2026-07-28',
      'mcp-method': 'tools/list'
    },
    body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/list', params: { _meta: envelope } })
  })
  const statuses: number[] = []
  for (let n = 1; n <= 60; n++) {
    const res = await list(bases[n % 2]!, n)
    await res.text()
    statuses.push(res.status)
  }
  t.same(statuses, Array(60).fill(200), '60 stateless requests of one install, alternating between the instances')
  for (const base of bases) {
    const res = await list(base, 61)
    t.equal(res.status, 429, 'the 61st is refused by either instance: the count is shared')
    t.same(await res.json(), { jsonrpc: '2.0', error: { code: -32000, message: 'Rate limit exceeded.' }, id: null })
  }
})
