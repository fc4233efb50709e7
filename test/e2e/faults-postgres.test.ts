/**
 * Postgres outages under load, against a cluster this test starts itself and the service in its own process:
 * stopped, then frozen (SIGSTOP). Each outage lasts until the service has shown its behaviour in it (503s for what
 * was sent during it; under the freeze, every request caught by it answered while the server is still frozen, which
 * only the service's own time-outs can do), not for a fixed time. Only 2xx or 503 answers, recovery without a
 * restart, and every event answered 202 stored and delivered.
 */
import { setTimeout as sleep } from 'node:timers/promises'
import t, { type Test } from 'tap'
import { PG_TIMEOUTS } from '../../plugins/infrastructure/db/postgres.js'
import { bearer, eventually } from '../support/helper.js'
import { startReceiver } from '../support/receiver.js'
import { invoice, nth } from '../support/records.js'
import {
  missingPeers, SECRETS, startCluster, startLoad, startService, subscribedInstall, summary, type Outcome,
  type RequestMaker
} from '../support/faults.js'

const missing = missingPeers()

/**
 * The load's client gives up just above the longest a request may wait on Postgres (one acquire plus one read, 4 s:
 * docs/operations.md#time-outs), with 2 s for a loaded machine: a request that waits longer than its bound fails.
 */
const CLIENT_TIMEOUT_MS = PG_TIMEOUTS.CONNECT_MS + PG_TIMEOUTS.QUERY_MS + 2_000
t.test('Postgres outages under load', { skip: missing && `fault tests need real peers: ${missing}` }, main)

async function main (t: Test): Promise<void> {
  const cluster = await startCluster(t)
  const receiver = await startReceiver(t)
  const env = {
    DATABASE_URL: cluster.url,
    WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
    WEBHOOK_CA_FILE: receiver.caFile,
    WEBHOOK_RETRY_SCHEDULE: '1,1,1,1,1,1,1',
    // A claim whose outcome could not be recorded during the outage is taken again after its lease: short, so that
    // the last check does not wait long for them (a delivery to the local receiver takes milliseconds).
    WEBHOOK_LEASE_SECONDS: '3',
    // Below the lease: an attempt outlives its claim only if the lease is the shorter (the start refuses that).
    WEBHOOK_ATTEMPT_TIMEOUT_SECONDS: '2',
    ...SECRETS
  }

  const { install: i, subscription } = await subscribedInstall(t, env, receiver.url)
  t.match(subscription, { topics: ['invoice.paid'], target_url: receiver.url }, 'subscribed')

  const service = await startService(t, env)
  let refreshToken = i.refreshToken
  const makers: RequestMaker[] = [
    () => ({ kind: 'me', method: 'GET', path: '/public/v1/me', headers: bearer(i.accessToken) }),
    n => {
      const eventId = `evt_fault_${process.pid}_${n}`
      return {
        kind: 'event',
        method: 'POST',
        path: '/events',
        headers: { authorization: `Bearer ${SECRETS.EVENTS_TOKEN}`, 'content-type': 'application/json' },
        body: JSON.stringify({
          id: eventId,
          topic: 'invoice.paid',
          org_ref_id: i.orgRefId,
          entity_ref_id: i.entityRefId,
          data: invoice(nth('inv', n))
        })
      }
    }
  ]

  /** The OAuth token endpoint, as a client does it: one refresh at a time, keeping the newest token. */
  const refreshLoop = (outcomes: Outcome[], running: () => boolean) => (async () => {
    while (running()) {
      const started = performance.now()
      const res = await fetch(`${service.base}/oauth/token`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({
          grant_type: 'refresh_token',
          refresh_token: refreshToken,
          client_id: i.clientId,
          client_secret: i.clientSecret
        }),
        signal: AbortSignal.timeout(CLIENT_TIMEOUT_MS)
      }).catch(err => ({ status: 0, error: String(err) }) as const)
      const outcome: Outcome = { kind: 'token', status: res.status, ms: performance.now() - started, at: started }
      if ('headers' in res) {
        outcome.retryAfter = res.headers.get('retry-after') ?? undefined
        outcome.body = (await res.json()) as Outcome['body']
        if (res.status === 200) refreshToken = (outcome.body as { refresh_token: string }).refresh_token
      }
      outcomes.push(outcome)
      await sleep(50)
    }
  })()

  type Load = ReturnType<typeof startLoad>

  /** Load through `fault`, then checks every answer. Returns the event ids answered 202. */
  async function underLoad (t: Test, fault: (load: Load) => Promise<void>): Promise<Set<string>> {
    // The client's time-out ends a request that waits longer than the service's bounds, which then counts as a
    // transport error below.
    const load = startLoad(service.base, makers, { concurrency: 8, clientTimeoutMs: CLIENT_TIMEOUT_MS })
    t.teardown(() => load.stop())
    const tokenOutcomes: Outcome[] = []
    let running = true
    const refreshing = refreshLoop(tokenOutcomes, () => running)
    await load.answered('events accepted before the outage', 0, 5, o => o.kind === 'event' && o.status === 202)
    await fault(load)
    // Recovery without a restart: events sent after the outage are accepted again, and a refresh succeeds.
    const recovered = performance.now()
    await load.answered('events to be accepted again', recovered, 5, o => o.kind === 'event' && o.status === 202)
    await eventually(() => tokenOutcomes.some(o => o.status === 200 && o.at! >= recovered), {
      timeout: 60_000, what: 'a refresh after the outage'
    })
    running = false
    await refreshing
    const outcomes = [...(await load.stop()), ...tokenOutcomes]
    t.comment(summary(outcomes))

    const unexpected = outcomes.filter(o => ![200, 202, 503].includes(o.status))
    t.same(unexpected.slice(0, 5), [], 'only 2xx or 503 (no 500, no transport error)')
    const unavailable = outcomes.filter(o => o.status === 503)
    t.ok(unavailable.length > 0, 'the outage was seen (some 503)')
    t.same(
      unavailable.filter(o => o.body?.error !== 'service_unavailable' || o.retryAfter !== '5').slice(0, 3),
      [],
      'every 503 is service_unavailable from the catalog, with Retry-After'
    )
    // No request waited past its bound: each has an answer (else the client's time-out, a transport error above).
    t.equal(outcomes.filter(o => o.status !== 0).length, outcomes.length, `all ${outcomes.length} requests answered`)
    t.ok(outcomes.some(o => o.kind === 'token' && o.status === 200 && o.at! >= recovered),
      'refresh works again after the outage')
    // The id the service gave the event (its own, not the producer's key) is the one deliveries carry.
    return new Set(outcomes.filter(o => o.kind === 'event' && o.status === 202).map(o => (o.body as { id: string }).id))
  }

  const accepted = new Set<string>()

  const refused = (o: Outcome) => o.kind === 'event' && o.status === 503

  await t.test('Postgres stopped under load', async t => {
    for (const id of await underLoad(t, async load => {
      cluster.stop()
      // Connections are refused at once: the outage lasts until events sent during it have been answered 503.
      await load.answered('events sent while stopped to be answered 503', performance.now(), 5, refused)
      cluster.start()
    })) accepted.add(id)
  })

  await t.test('Postgres frozen (SIGSTOP) under load', async t => {
    for (const id of await underLoad(t, async load => {
      cluster.freeze()
      const frozen = performance.now()
      // A frozen server never answers: a 503 for an event sent now comes from the service's own bounds (acquire,
      // query time-out), and the requests caught by the freeze must all be answered before it ends.
      const caught = load.settled('the requests in flight as it froze to be answered while it is frozen')
      await load.answered('events sent while frozen to be answered 503', frozen, 5, refused)
      await caught
      await load.settled('the requests in flight then to be answered while it is still frozen')
      cluster.thaw()
    })) accepted.add(id)
  })

  await t.test('every event answered 202 is delivered, and the process never died', async t => {
    const delivered = () => new Set(receiver.received.map(r => String(r.headers['x-service-event-id'])))
    await eventually(() => [...accepted].filter(id => !delivered().has(id)), {
      until: undelivered => undelivered.length === 0,
      timeout: 60_000,
      what: `all ${accepted.size} accepted events to be delivered (value: those not yet delivered)`
    })
    t.ok(accepted.size > 0, `${accepted.size} events accepted across both outages, every one delivered`)
    t.equal(service.child.exitCode, null, 'the service is still running')
    const errorLines = service.output().split('\n').filter(l => /Unhandled|uncaught|"level":(50|60)/i.test(l))
    t.same(errorLines.map(l => l.slice(0, 600)), [], 'no crash and no error-level log line')
    const stacks = service.output().split('\n').filter(l => l.includes('"stack"'))
    t.same(stacks.map(l => l.slice(0, 600)), [], 'no stack trace: an outage is a line with its message')
    const outageLines = service.output().split('\n').filter(l => l.includes('postgres unavailable'))
    t.ok(outageLines.length > 0 && outageLines.length < 40,
      `the outage is logged once per interval, not per request (${outageLines.length} lines)`)
  })
}
