import { randomUUID } from 'node:crypto'
import { hostname } from 'node:os'
import type { FastifyBaseLogger } from 'fastify'
import { systemClock, type Clock } from '../../../lib/clock.js'
import type { Config } from '../../infrastructure/config/index.js'
import { DatabaseUnavailableError, type Db, type Queryable } from '../../infrastructure/db/index.js'
import { Sender, type AttemptSender, type Outcome } from './sender.js'
import { decryptSecret } from './signing.js'
import {
  WAKEUP_CHANNEL,
  type AttemptResult,
  type Caps,
  type ClaimedDelivery,
  type CounterUpdate,
  type DeliveryQueueStore,
  type Streak
} from './delivery-queue-store.js'
import type { DisabledReason, SubscriptionStore } from './subscription-store.js'

/** The poll that backs up notifications, and picks up retries as they fall due. */
const POLL_MS = 1_000
/** Results one cycle records at most (one transaction). */
const RECORD_BATCH = 500
/** How long stop() waits for attempts in flight beyond their own time-out, to record them. */
const DRAIN_MARGIN_MS = 2_000

/** What a worker has done so far: for /health-style checks, tests and benchmarks. Times in milliseconds. */
export interface WorkerStatus {
  id: string
  running: boolean
  /** Attempts being sent now. */
  inFlight: number
  /** Attempts finished and not yet recorded: their slots are still taken. */
  unrecorded: number
  attempted: number
  /** Transactions that recorded results and claimed deliveries, and their time in all (commit included). */
  cycles: number
  cycleMs: number
  claimed: number
  recorded: number
}

/**
 * When the next attempt is due after a failed one, or null when the schedule is spent (docs/rules.md#retries).
 * `random` (in [0, 1)) places the jitter, ±20 % of the scheduled wait.
 */
export function nextAttemptAt (
  schedule: number[],
  attempt: number,
  retryAfterS: number | null,
  now = Date.now(),
  random: () => number = Math.random
): Date | null {
  const base = schedule[attempt - 1]
  if (base === undefined) return null
  const scheduled = base * 1000
  const wait =
    retryAfterS !== null ? Math.min(retryAfterS * 1000, 2 * scheduled) : scheduled * (0.8 + random() * 0.4)
  return new Date(now + wait)
}

/** Folds one flush's results, in completion order, into one counter update per subscription. */
export function counterUpdates (results: AttemptResult[]): CounterUpdate[] {
  const bySubscription = new Map<string, CounterUpdate>()
  for (const r of results) {
    const u = bySubscription.get(r.subscriptionId) ?? {
      subscriptionId: r.subscriptionId,
      lastAt: r.attemptedAt,
      lastStatus: r.status,
      reset: false,
      failures: 0,
      streakStart: null,
      gone: false
    }
    u.lastAt = r.attemptedAt
    u.lastStatus = r.status
    if (r.succeeded) {
      u.reset = true
      u.failures = 0
      u.streakStart = null
    } else {
      // Without a success in this batch, the database keeps an older streak's start (coalesce).
      if (u.failures === 0) u.streakStart = r.attemptedAt
      u.failures++
      if (r.status === 410) u.gone = true
    }
    bySubscription.set(r.subscriptionId, u)
  }
  // In id order: workers recording at once lock the subscriptions' rows in the same order, so never deadlock.
  return [...bySubscription.values()].sort((a, b) => a.subscriptionId < b.subscriptionId ? -1 : 1)
}

/**
 * Which subscriptions a flush pushed over a disabling threshold: a 410 at once, or a failing streak both long enough
 * (`maxFailures`) and old enough (`maxHours` before `now`).
 */
export function crossedThresholds (
  rows: Streak[],
  updates: CounterUpdate[],
  maxFailures: number,
  maxHours: number,
  now = Date.now()
): Array<{ id: string, reason: DisabledReason }> {
  const gone = new Set(updates.filter(u => u.gone).map(u => u.subscriptionId))
  const cutoff = now - maxHours * 3600_000
  return rows
    .filter(r => r.is_active)
    .flatMap((r): Array<{ id: string, reason: DisabledReason }> => {
      if (gone.has(r.id)) return [{ id: r.id, reason: 'gone' }]
      if (r.consecutive_failures >= maxFailures && r.failing_since && r.failing_since.getTime() <= cutoff) {
        return [{ id: r.id, reason: 'consecutive_failures' }]
      }
      return []
    })
}

/** What became of one attempt: `retrying` has a next attempt scheduled, `failed` was the last one. */
export type AttemptOutcome = 'delivered' | 'retrying' | 'failed' | 'gone'

export interface WorkerOptions {
  /** Told of every attempt's outcome and duration (metrics). */
  observe?: (outcome: AttemptOutcome, seconds: number) => void
  /**
   * Where the worker reads the time of its decisions (when an attempt happened, when its retry falls due, how old
   * a failing streak is) and where it waits (the poll, the reaper, the drain on stop): `app.clock`. The queue
   * compares due times with the database's clock: a hand-moved clock changes what is recorded and when the worker
   * looks again, not when a claim finds a retry due.
   */
  clock?: Clock
  /** Sends the attempts: HTTPS through the target guard by default. */
  sender?: AttemptSender
  /** The retries' jitter (Math.random by default). */
  random?: () => number
}

/** What the worker reads and writes: the queue, and the subscriptions it disables. */
export interface WorkerStores {
  queue: Pick<DeliveryQueueStore, 'claim' | 'record' | 'cancel' | 'cancelPending' | 'reap'>
  subscriptions: Pick<SubscriptionStore, 'disable'>
}

/**
 * Claims due deliveries, attempts them concurrently, and records the results. One loop does both in one
 * transaction per turn (record what finished, then claim), and a slot stays taken until its attempt is recorded:
 * attempts sent and not recorded never exceed WEBHOOK_CONCURRENCY, so a worker killed at any moment sends again at
 * most that many (docs/webhook-delivery.md#claims-leases-and-crashes).
 */
export class DeliveryWorker {
  private readonly status: WorkerStatus = {
    id: `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`,
    running: false,
    inFlight: 0,
    unrecorded: 0,
    attempted: 0,
    cycles: 0,
    cycleMs: 0,
    claimed: 0,
    recorded: 0
  }

  private readonly sender: AttemptSender
  private readonly observe: (outcome: AttemptOutcome, seconds: number) => void
  private readonly clock: Clock
  private readonly random: () => number
  private readonly caps: Caps
  /** Finished attempts waiting to be recorded, in completion order. */
  private pending: AttemptResult[] = []
  private wake: (() => void) | undefined
  /** A signal that arrived while the loop was busy: the loop must not then sleep. */
  private woken = false
  private loopDone: Promise<void> | undefined
  /** When stop() gives up on attempts still in flight. */
  private drainUntil = Infinity
  /** Cancels the reaper's next run. */
  private stopReaper: (() => void) | undefined
  /** Since when the database has been failing the worker: one log line when it starts, one when it ends. */
  private outageSince: number | undefined

  constructor (
    private readonly stores: WorkerStores,
    private readonly db: Db,
    private readonly config: Config,
    private readonly log: FastifyBaseLogger,
    opts: WorkerOptions = {}
  ) {
    this.observe = opts.observe ?? (() => {})
    this.clock = opts.clock ?? systemClock
    this.random = opts.random ?? Math.random
    this.caps = { perSubscription: config.webhookSubscriptionMaxInFlight, perTenant: config.webhookTenantMaxInFlight }
    this.sender = opts.sender ?? new Sender({
      allowPrivate: config.webhookAllowPrivateTargets,
      caFile: config.webhookCaFile,
      connections: config.webhookConcurrency,
      timeoutMs: config.webhookAttemptTimeoutSeconds * 1000
    })
  }

  /** A copy: callers read it, never change it. */
  snapshot (): WorkerStatus {
    return { ...this.status, unrecorded: this.pending.length }
  }

  async start (): Promise<void> {
    this.status.running = true
    await this.db.listen(WAKEUP_CHANNEL, () => this.signal())
    this.loopDone = this.loop()
    const every = Math.max(1_000, this.config.webhookLeaseSeconds * 500)
    // Rearmed as it fires, as an interval is; in the background: it alone does not keep the process alive.
    const reap = (): void => {
      this.stopReaper = this.clock.timer(every, reap, { background: true })
      this.stores.queue.reap().then(
        n => {
          if (n === 0) return
          this.log.warn({ released: n }, 'released deliveries whose worker lease expired')
          this.signal()
        },
        err => this.failed(err, 'releasing expired leases')
      )
    }
    this.stopReaper = this.clock.timer(every, reap, { background: true })
  }

  /** Stops claiming, lets attempts in flight finish (bounded), records them, and closes the client. */
  async stop (): Promise<void> {
    if (!this.status.running) return
    this.status.running = false
    this.drainUntil = this.clock.now() + this.config.webhookAttemptTimeoutSeconds * 1000 + DRAIN_MARGIN_MS
    this.stopReaper?.()
    this.signal()
    await this.loopDone
    await this.sender.close()
  }

  /**
   * A failure of the database (or of anything the loop does with it): logged once, when it starts, with its
   * message, not at every retry; `recovered()` logs the end. What was not recorded stays pending and is retried.
   */
  private failed (err: unknown, doing: string): void {
    if (this.outageSince !== undefined) return
    this.outageSince = this.clock.now()
    const message = `webhook worker: ${doing} failed; retrying every second until it succeeds`
    // The database being away is an outage the database plugin reports too: a warning, its message only. Anything
    // else is a fault of ours: an error, with its stack, once.
    if (err instanceof DatabaseUnavailableError) this.log.warn({ error: err.message }, message)
    else this.log.error({ err }, message)
  }

  private recovered (): void {
    if (this.outageSince === undefined) return
    const seconds = Math.round((this.clock.now() - this.outageSince) / 1000)
    this.log.warn({ seconds }, 'webhook worker: working again')
    this.outageSince = undefined
  }

  private signal (): void {
    this.woken = true
    const wake = this.wake
    this.wake = undefined
    wake?.()
  }

  /** Waits `ms` on the worker's clock, or until signalled. */
  private async sleep (ms: number): Promise<void> {
    await new Promise<void>(resolve => {
      const cancel = this.clock.timer(ms, resolve)
      this.wake = () => {
        cancel()
        resolve()
      }
    })
  }

  private async loop (): Promise<void> {
    const { webhookConcurrency: concurrency, webhookLeaseSeconds: lease } = this.config
    for (;;) {
      // Attempts answered in the same turn of the event loop are recorded together: a batch, not one at a time.
      if (this.status.inFlight > 0) await new Promise(resolve => setImmediate(resolve))
      this.woken = false
      const claiming = this.status.running
      const drained = this.status.inFlight === 0 || this.clock.now() >= this.drainUntil
      if (!claiming && this.pending.length === 0 && drained) {
        return
      }
      const batch = this.pending.splice(0, RECORD_BATCH)
      // The batch is recorded before the claim, in the same transaction: its slots are free for this claim; those
      // of attempts in flight and of results still waiting are not.
      const limit = claiming ? concurrency - this.status.inFlight - this.pending.length : 0
      let claimed: ClaimedDelivery[] = []
      let ok = true
      if (batch.length > 0 || limit > 0) {
        const started = performance.now()
        try {
          claimed = await this.db.tx(async q => {
            await this.record(q, batch)
            return limit > 0 ? this.stores.queue.claim(q, this.status.id, limit, lease, this.caps) : []
          })
          this.status.recorded += batch.length
          this.status.claimed += claimed.length
          this.recovered()
        } catch (err) {
          ok = false
          this.pending.unshift(...batch)
          this.failed(err, batch.length > 0 ? 'recording delivery results' : 'claiming deliveries')
        }
        this.status.cycles++
        this.status.cycleMs += performance.now() - started
      }
      // Not awaited: attempts run side by side; each queues its result, never rejects, and signals the loop.
      for (const delivery of claimed) this.attempt(delivery).catch(err => this.failed(err, 'a delivery attempt'))
      if (!ok) {
        if (!claiming && this.clock.now() >= this.drainUntil) return
        await this.sleep(POLL_MS)
        continue
      }
      if (this.woken || this.pending.length > 0 || (limit > 0 && claimed.length === limit)) continue
      if (!claiming) {
        await this.sleep(Math.max(0, Math.min(POLL_MS, this.drainUntil - this.clock.now())))
        continue
      }
      await this.sleep(POLL_MS)
    }
  }

  private async attempt (d: ClaimedDelivery): Promise<void> {
    this.status.inFlight++
    try {
      if (!d.deliverable) {
        await this.stores.queue.cancel([d.id])
        return
      }
      const attempt = d.attempts + 1
      const attemptedAt = new Date(this.clock.now())
      let outcome: Outcome
      try {
        const key = this.config.webhookSecretKey
        const keys = [{ secret: decryptSecret(key, d.subscriptionId, d.secretCiphertext), scheme: d.signingScheme }]
        if (d.previous) {
          keys.push({
            secret: decryptSecret(key, d.subscriptionId, d.previous.secretCiphertext),
            scheme: d.previous.signingScheme
          })
        }
        outcome = await this.sender.send({
          targetUrl: d.targetUrl,
          eventId: d.eventId,
          topic: d.topic,
          attempt,
          body: d.body,
          keys
        })
      } catch (err) {
        outcome = {
          status: 0,
          responseBody: null,
          error: `internal: ${(err as Error).message}`,
          errorClass: 'internal',
          requestHeaders: {},
          responseHeaders: null,
          retryAfterS: null,
          durationMs: 0
        }
      }
      const succeeded = outcome.status >= 200 && outcome.status < 300
      const next = succeeded || outcome.status === 410
        ? null
        : nextAttemptAt(this.config.webhookRetrySchedule, attempt, outcome.retryAfterS, this.clock.now(), this.random)
      const result: AttemptOutcome = succeeded
        ? 'delivered'
        : outcome.status === 410 ? 'gone' : next ? 'retrying' : 'failed'
      this.status.attempted++
      this.observe(result, outcome.durationMs / 1000)
      // One line per attempt; never the secret, the payload or the answer's body.
      this.log[succeeded ? 'info' : 'warn']({
        delivery_id: d.id,
        event_id: d.eventId,
        subscription_id: d.subscriptionId,
        attempt,
        outcome: result,
        status: outcome.status || null,
        duration_ms: outcome.durationMs,
        error: outcome.error ?? undefined,
        next_attempt_at: next?.toISOString()
      }, 'webhook delivery attempt')
      this.pending.push({
        deliveryId: d.id,
        subscriptionId: d.subscriptionId,
        attempt,
        attemptedAt,
        durationMs: outcome.durationMs,
        status: outcome.status,
        responseBody: outcome.responseBody,
        error: outcome.error,
        errorClass: outcome.errorClass,
        requestHeaders: outcome.requestHeaders,
        responseHeaders: outcome.responseHeaders,
        succeeded,
        nextAttemptAt: next
      })
    } finally {
      this.status.inFlight--
      // The result is recorded by the loop's next turn, with the claim that takes the slot again.
      this.signal()
    }
  }

  /** Writes finished attempts: the log, the deliveries' states, the subscriptions' counters, automatic disabling. */
  private async record (q: Queryable, batch: AttemptResult[]): Promise<void> {
    if (batch.length === 0) return
    const { webhookDisableAfterFailures: maxFailures, webhookDisableAfterHours: maxHours } = this.config
    const updates = counterUpdates(batch)
    const rows = await this.stores.queue.record(q, batch, updates)
    const crossed = crossedThresholds(rows, updates, maxFailures, maxHours, this.clock.now())
    for (const reason of ['gone', 'consecutive_failures'] as const) {
      const ids = crossed.filter(c => c.reason === reason).map(c => c.id)
      if (ids.length === 0) continue
      await this.stores.subscriptions.disable(q, ids, reason)
      await this.stores.queue.cancelPending(q, ids)
    }
    if (crossed.length > 0) this.log.warn({ disabled: crossed }, 'webhook subscriptions disabled')
  }
}
