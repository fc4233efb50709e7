/**
 * Redis frozen under load, and SIGTERM under load with a delivery in flight, against a Postgres cluster and a
 * Redis this test starts itself and the service in its own process. No check reads a clock: the freeze lasts until
 * the service has noticed it and served requests through it, and readiness is probed once the signal took effect.
 */
import { connect } from 'node:net'
import { once } from 'node:events'
import pg from 'pg'
import t, { type Test } from 'tap'
import { Pool } from 'undici'
import { bearer, eventually } from '../support/helper.js'
import { startReceiver } from '../support/receiver.js'
import { bill, invoice } from '../support/records.js'
import {
  missingPeers, SECRETS, startCluster, startLoad, startRedis, startService, subscribedInstall, summary, type Outcome,
  type RequestMaker
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
  const { install: i, subscription } = await subscribedInstall(t, env, receiver.url)
  t.match(subscription, { topics: ['invoice.paid'], target_url: receiver.url }, 'subscribed')
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

  await t.test('Redis frozen: rate limits fail open, every request answered before a 3 s client time-out', async t => {
    // A request waits at most one Redis command time-out (250 ms), until the next probe trips the breaker, and none
    // after. The client gives up after 3 s: far above that bound, so no timing check on a loaded machine, yet a
    // request that waits on Redis longer fails (Redis stays frozen until every request it caught is answered).
    const load = startLoad(service.base, [me, mcp], { concurrency: 8, clientTimeoutMs: 3_000 })
    t.teardown(() => load.stop())
    const served = (kind: string) => (o: Outcome) => o.kind === kind && o.status !== 0
    await load.answered('the load to be served before the freeze', 0, 20, served('me'))
    const logged = service.output().length
    redis.freeze()
    const frozen = performance.now()
    // Requests caught by the freeze wait at most one command time-out each: answered while Redis is still frozen.
    await load.settled('the requests in flight as Redis froze to be answered while it is frozen')
    // The next failed probe trips the breaker, and says so once; from then on no request asks Redis at all.
    await eventually(() => service.output().slice(logged).includes('redis unavailable'), {
      timeout: 60_000, what: 'the service to notice that Redis is silent'
    })
    const tripped = performance.now()
    const during = [
      ...await load.answered('/me requests to be answered while Redis is frozen', tripped, 100, served('me')),
      ...await load.answered('/mcp requests to be answered while Redis is frozen', tripped, 100, served('mcp'))
    ]
    await load.settled('the requests in flight then to be answered while Redis is still frozen')
    redis.thaw()
    const thawed = performance.now()
    await load.answered('requests after the thaw', thawed, 20, served('me'))
    const outcomes = await load.stop()
    t.comment(summary(outcomes))
    const slowest = (from: number, to: number) =>
      Math.round(Math.max(0, ...outcomes.filter(o => o.at! >= from && o.at! < to).map(o => o.ms)))
    t.comment(`slowest while frozen: ${slowest(frozen, tripped)} ms before the breaker tripped, ` +
      `${slowest(tripped, thawed)} ms after`)
    t.same(outcomes.filter(o => o.kind === 'me' && o.status !== 200).slice(0, 3), [], '/me answers 200 throughout')
    t.same(outcomes.filter(o => o.kind === 'mcp' && o.status !== 400).slice(0, 3), [], '/mcp is answered throughout')
    // No request hung on Redis: every one has an answer (a wait of 3 s meets the client's time-out, status 0).
    t.equal(outcomes.filter(o => o.status !== 0).length, outcomes.length, `all ${outcomes.length} requests answered`)
    t.ok(during.length >= 200, `${during.length} requests served with Redis frozen and the breaker open`)
  })

  await t.test('SIGTERM under load with a delivery in flight', async t => {
    let release: () => void = () => {}
    receiver.respond = (_r, res) => { release = () => res.end('ok') }
    t.teardown(() => release())
    const before = receiver.received.length
    const published = await fetch(`${service.base}/events`, {
      method: 'POST',
      headers: { authorization: `Bearer ${SECRETS.EVENTS_TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({
        topic: 'invoice.paid', org_ref_id: i.orgRefId, entity_ref_id: i.entityRefId, data: invoice()
      })
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
    await load.answered('the load to be served', 0, 20, o => o.status === 200)
    // A request in flight across the signal, its body still arriving: shutdown waits for it (bounded), which also
    // keeps the probe's idle connections open until it is answered. A topic nobody subscribed to: no delivery.
    const held = await heldRequest(service.base, '/events', {
      authorization: `Bearer ${SECRETS.EVENTS_TOKEN}`, 'content-type': 'application/json'
    }, JSON.stringify({ topic: 'bill.created', org_ref_id: i.orgRefId, entity_ref_id: i.entityRefId, data: bill() }))
    t.teardown(() => held.socket.destroy())
    // Answered after the held request's head was written, so the service has taken it in by now.
    const warm = await Promise.all(Array.from({ length: 4 }, async () => {
      const res = await probe.request({ method: 'GET', path: '/health/ready' })
      await res.body.dump()
      return res.statusCode
    }))
    t.same(warm, [200, 200, 200, 200])

    service.child.kill('SIGTERM')
    const signalled = performance.now()
    const inFlight = load.inFlight()
    // The signal reaches the process when it does; that it acted on it shows, without a clock, as the listener
    // taking no new connection (SHUTDOWN_DELAY_SECONDS is 0 by default): the same step turns readiness to 503.
    await eventually(() => fetch(`${service.base}/health`).then(() => 'open', () => 'refused'), {
      until: state => state === 'refused', interval: 5, timeout: 30_000, what: 'the listener to close'
    })
    // The health checker's next probe, over a connection it opened before the signal, is the first answer to it.
    const answer = await probe.request({ method: 'GET', path: '/health/ready' })
    const ready = await answer.body.json()
    t.equal(answer.statusCode, 503, 'the first readiness probe after the signal took effect answers 503')
    t.match(ready, { status: 'unavailable', shutting_down: true }, 'saying it is shutting down')
    t.equal(answer.headers.connection, 'close', 'and the answer closes its keep-alive connection')
    const last = await held.finish()
    t.match(last, /^HTTP\/1\.1 202 /, 'the request in flight at the signal is answered')
    t.match(last, /\r\nconnection: close\r\n/i, 'with Connection: close')

    // The delivery in flight finishes after the signal, and is recorded before the database closes.
    release()
    t.equal(await service.exited, 0, 'exits 0')
    const outcomes = await load.stop()
    t.comment(summary(outcomes))
    const caught = outcomes.filter(o => inFlight.includes(o.n!))
    t.same(caught.filter(o => o.status !== 200).slice(0, 3), [],
      `the ${caught.length} requests of the load in flight at the signal are answered 200`)
    t.equal(caught.length, inFlight.length, 'every one of them')
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

/**
 * A POST on a keep-alive connection the service has already answered once (so it is accepted, not in a backlog),
 * whose head and half its body are written; `finish()` writes the rest and resolves with the raw answer.
 */
async function heldRequest (base: string, path: string, headers: Record<string, string>, body: string) {
  const { hostname, port } = new URL(base)
  const socket = connect(Number(port), hostname)
  await once(socket, 'connect')
  let received = ''
  socket.setEncoding('utf8')
  socket.on('data', d => { received += d })
  const write = (text: string) => new Promise<void>((resolve, reject) =>
    socket.write(text, err => err ? reject(err) : resolve()))
  await write(`GET /health HTTP/1.1\r\nhost: ${hostname}\r\n\r\n`)
  await eventually(() => {
    const head = received.indexOf('\r\n\r\n')
    const length = Number(/\r\ncontent-length: (\d+)/i.exec(received)?.[1])
    return head >= 0 && received.length >= head + 4 + length
  }, { timeout: 30_000, what: 'the first answer on the held connection' })
  received = ''
  const head = `POST ${path} HTTP/1.1\r\nhost: ${hostname}\r\n` +
    Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('') +
    `content-length: ${Buffer.byteLength(body)}\r\n\r\n`
  const half = Math.floor(body.length / 2)
  await write(head + body.slice(0, half))
  return {
    socket,
    async finish (): Promise<string> {
      await write(body.slice(half))
      await once(socket, 'end')
      return received
    }
  }
}
