// The worker's pure decisions: when a retry falls due, how a flush folds results into counters, and which
// subscriptions cross a disabling threshold (docs/rules.md#retries, docs/webhook-delivery.md).
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { loadConfig } from '../../../../../plugins/infrastructure/config/index.js'
import type { AttemptResult } from '../../../../../plugins/domain/webhooks/delivery-queue-store.js'
import { counterUpdates, crossedThresholds, nextAttemptAt } from '../../../../../plugins/domain/webhooks/worker.js'

const NOW = Date.parse('2026-03-01T12:00:00Z')
const at = (ms: number) => new Date(NOW + ms)

t.test('nextAttemptAt: the scheduled wait, jittered by ±20 %', async t => {
  const schedule = [5, 300, 1800]
  t.same(nextAttemptAt(schedule, 1, null, NOW, () => 0.5), at(5_000), 'the middle of the jitter is the schedule')
  t.same(nextAttemptAt(schedule, 1, null, NOW, () => 0), at(4_000), 'at least 80 %')
  const highest = nextAttemptAt(schedule, 1, null, NOW, () => 0.999999)!.getTime() - NOW
  t.ok(highest >= 5_999 && highest < 6_000, `below 120 % (${highest} ms)`)
  t.same(nextAttemptAt(schedule, 2, null, NOW, () => 0.5), at(300_000), 'the second retry waits the second entry')
  t.same(nextAttemptAt(schedule, 3, null, NOW, () => 0.25), at(1_800_000 * 0.9))
  t.equal(nextAttemptAt(schedule, 4, null, NOW, () => 0.5), null, 'after the last entry: no more attempts')
  t.equal(nextAttemptAt([], 1, null, NOW), null, 'an empty schedule: one attempt only')
  t.same(nextAttemptAt([0, 0], 1, null, NOW, () => 0.9), at(0), 'a zero entry is due at once, whatever the jitter')
  for (let n = 0; n < 200; n++) {
    const wait = nextAttemptAt(schedule, 2, null, NOW)!.getTime() - NOW
    if (wait < 240_000 || wait >= 360_000) t.fail(`jitter out of bounds: ${wait} ms`)
  }
  t.pass('200 draws of Math.random stay within ±20 %')
  const defaultNow = nextAttemptAt([60], 1, null)!.getTime() - Date.now()
  t.ok(defaultNow > 40_000 && defaultNow <= 72_000, 'without a time, from now')
})

t.test('nextAttemptAt: Retry-After is followed, up to twice the scheduled wait, without jitter', async t => {
  const schedule = [5, 300]
  t.same(nextAttemptAt(schedule, 1, 7, NOW, () => 0), at(7_000), 'Retry-After within twice the schedule')
  t.same(nextAttemptAt(schedule, 1, 3600, NOW, () => 0), at(10_000), 'capped at twice the scheduled wait')
  t.same(nextAttemptAt(schedule, 2, 0, NOW), at(0), 'Retry-After: 0 is at once')
  t.same(nextAttemptAt([0], 1, 1, NOW), at(0), 'a zero schedule caps any Retry-After at zero')
  t.equal(nextAttemptAt(schedule, 3, 1, NOW), null, 'the schedule still ends the attempts')
})

const result = (subscriptionId: string, seconds: number, status: number): AttemptResult => ({
  deliveryId: `dlv_${seconds}`,
  subscriptionId,
  attempt: 1,
  attemptedAt: at(seconds * 1000),
  durationMs: 10,
  status,
  responseBody: null,
  error: null,
  errorClass: status >= 200 && status < 300 ? null : 'http_status',
  requestHeaders: {},
  responseHeaders: null,
  nextAttemptAt: null,
  succeeded: status >= 200 && status < 300
})

t.test('counterUpdates: one update per subscription, attempts taken in completion order', async t => {
  t.same(counterUpdates([]), [])
  t.same(counterUpdates([result('a', 1, 500), result('a', 2, 503)]), [{
    subscriptionId: 'a',
    lastAt: at(2000),
    lastStatus: 503,
    reset: false,
    failures: 2,
    streakStart: at(1000),
    gone: false
  }], 'failures only: added to the stored streak, which keeps an older start')
  t.same(counterUpdates([result('a', 1, 500), result('a', 2, 200)]), [{
    subscriptionId: 'a', lastAt: at(2000), lastStatus: 200, reset: true, failures: 0, streakStart: null, gone: false
  }], 'a success ends the streak')
  t.same(counterUpdates([result('a', 1, 200), result('a', 2, 500), result('a', 3, 0)]), [{
    subscriptionId: 'a', lastAt: at(3000), lastStatus: 0, reset: true, failures: 2, streakStart: at(2000), gone: false
  }], 'failures after a success start a new streak from the first of them')
  t.same(counterUpdates([result('a', 1, 410)]), [{
    subscriptionId: 'a',
    lastAt: at(1000),
    lastStatus: 410,
    reset: false,
    failures: 1,
    streakStart: at(1000),
    gone: true
  }], 'a 410 is a failure, and marks the subscription gone')
  const two = counterUpdates([result('a', 1, 500), result('b', 2, 200), result('a', 3, 200)])
  t.same(two.map(u => [u.subscriptionId, u.reset, u.failures, u.lastStatus]),
    [['a', true, 0, 200], ['b', true, 0, 200]], 'subscriptions in the order first seen, each folded on its own')
})

t.test('crossedThresholds: a 410 at once; a streak only when long enough and old enough', async t => {
  const row = (id: string, failures: number, sinceMs: number | null, active = true) => ({
    id, consecutive_failures: failures, failing_since: sinceMs === null ? null : at(sinceMs), is_active: active
  })
  const update = (id: string, gone = false) => ({
    subscriptionId: id, lastAt: at(0), lastStatus: gone ? 410 : 500, reset: false, failures: 1, streakStart: null, gone
  })
  const hour = 3_600_000
  const rows = [
    row('long-and-old', 20, -24 * hour),
    row('long-not-old', 25, -24 * hour + 1),
    row('old-not-long', 19, -48 * hour),
    row('no-start', 30, null),
    row('gone', 1, 0),
    row('inactive', 50, -72 * hour, false)
  ]
  const updates = [...rows.map(r => update(r.id, r.id === 'gone'))]
  t.same(crossedThresholds(rows, updates, 20, 24, NOW), [
    { id: 'long-and-old', reason: 'consecutive_failures' },
    { id: 'gone', reason: 'gone' }
  ])
  t.same(crossedThresholds(rows, updates, 20, 24, NOW + 1).map(c => c.id), ['long-and-old', 'long-not-old', 'gone'],
    'a millisecond later the younger streak is old enough')
  t.same(crossedThresholds([row('x', 3, 0)], [update('x')], 3, 0, NOW), [{ id: 'x', reason: 'consecutive_failures' }],
    'with 0 hours the count alone decides')
  t.same(crossedThresholds([row('x', 1, 0, false)], [update('x', true)], 20, 24, NOW), [],
    'an inactive subscription is not disabled again')
})

t.test('WEBHOOK_ATTEMPT_TIMEOUT_SECONDS: 15 by default, whole seconds from 1 to 20, below the lease', async t => {
  const dataDir = mkdtempSync(join(tmpdir(), 'mg-config-'))
  t.equal(loadConfig({ DATA_DIR: dataDir }).webhookAttemptTimeoutSeconds, 15)
  t.equal(loadConfig({ DATA_DIR: dataDir, WEBHOOK_ATTEMPT_TIMEOUT_SECONDS: '1' }).webhookAttemptTimeoutSeconds, 1)
  for (const bad of ['0', '21', '1.5', 'x']) {
    t.throws(() => loadConfig({ DATA_DIR: dataDir, WEBHOOK_ATTEMPT_TIMEOUT_SECONDS: bad }),
      { name: 'ConfigError', message: /WEBHOOK_ATTEMPT_TIMEOUT_SECONDS must be an integer from 1 to 20/ }, bad)
  }
  t.throws(() => loadConfig({ DATA_DIR: dataDir, WEBHOOK_ATTEMPT_TIMEOUT_SECONDS: '20', WEBHOOK_LEASE_SECONDS: '20' }),
    { name: 'ConfigError', message: /WEBHOOK_LEASE_SECONDS must be longer than WEBHOOK_ATTEMPT_TIMEOUT_SECONDS/ },
    'a lease that could expire while its attempt runs')
  t.equal(loadConfig({ DATA_DIR: dataDir, WEBHOOK_LEASE_SECONDS: '16' }).webhookLeaseSeconds, 16,
    'a lease just above the default attempt time-out')
})
