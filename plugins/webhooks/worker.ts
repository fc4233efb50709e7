import { randomUUID } from 'node:crypto'
import { hostname } from 'node:os'
import type { FastifyBaseLogger } from 'fastify'
import { systemClock, type Clock } from '../../lib/clock.js'
import type { Config } from '../config.js'
import { DatabaseUnavailableError, type Db } from '../db/index.js'
import { Sender, type AttemptSender, type Outcome } from './sender.js'
import { decryptSecret } from './signing.js'
import {
  WAKEUP_CHANNEL,
  type AttemptResult,
  type ClaimedDelivery,
  type CounterUpdate,
  type DisabledReason,
  type Lanes,
  type WebhookStore
} from './store.js'

/** The poll that backs up notifications, and picks up retries as they fall due. */
const POLL_MS = 1_000
/** Slow attempts (no success yet, or failing) one subscription may have in flight. */
const SLOW_PER_SUBSCRIPTION = 2
/** Slow subscriptions a worker remembers (the oldest forgotten first): each costs a few bytes and a claim filter. */
const KNOWN_SLOW_MAX = 5_000
const FLUSH_BATCH = 500
/** How long stop() waits for attempts in flight beyond their own time-out, to record them. */
const DRAIN_MARGIN_MS = 2_000

/** What a worker has done so far: for /health-style checks, tests and benchmarks. Times in milliseconds. */
export interface WorkerStatus {
  id: string
  running: boolean
  inFlight: number
  attempted: number
  claims: number
  claimed: number
  claimMs: number
  flushes: number
  recorded: number
  flushMs: number
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
  return [...bySubscription.values()]
}

/**
 * Which subscriptions a flush pushed over a disabling threshold: a 410 at once, or a failing streak both long enough
 * (`maxFailures`) and old enough (`maxHours` before `now`).
 */
export function crossedThresholds (
  rows: Array<{ id: string, consecutive_failures: number, failing_since: Date | null, is_active: boolean }>,
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
   * Where the worker reads the time of its decisions: when an attempt happened, when its retry falls due, how old
   * a failing streak is (`app.clock`). Waiting (the poll, the drain on stop) is in real time whatever the clock, and
   * the queue compares due times with the database's clock: a hand-moved clock changes what is recorded, not when
   * a claim finds a retry due.
   */
  clock?: Clock
  /** Sends the attempts: HTTPS through the target guard by default. */
  sender?: AttemptSender
  /** The retries' jitter (Math.random by default). */
  random?: () => number
}

/** Claims due deliveries, attempts them concurrently, and records the results in batches. */
export class DeliveryWorker {
  private readonly status: WorkerStatus = {
    id: `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`,
    running: false,
    inFlight: 0,
    attempted: 0,
    claims: 0,
    claimed: 0,
    claimMs: 0,
    flushes: 0,
    recorded: 0,
    flushMs: 0
  }

  private readonly sender: AttemptSender
  private readonly observe: (outcome: AttemptOutcome, seconds: number) => void
  private readonly clock: Clock
  private readonly random: () => number
  /** Slow attempts in flight (ClaimedDelivery.slow), by subscription and by tenant: the lanes claim() respects. */
  private readonly slowBySubscription = new Map<string, number>()
  private readonly slowByTenant = new Map<string, number>()
  private slowInFlight = 0
  /** Subscriptions last seen slow, with their tenant: left out of claims while a lane they belong to is full. */
  private readonly knownSlow = new Map<string, string>()
  private pending: AttemptResult[] = []
  private flushing: Promise<void> | undefined
  private wake: (() => void) | undefined
  /** A signal that arrived while the loop was busy: the loop must not then sleep. */
  private woken = false
  private loopDone: Promise<void> | undefined
  private reaper: NodeJS.Timeout | undefined

  constructor (
    private readonly store: WebhookStore,
    private readonly db: Db,
    private readonly config: Config,
    private readonly log: FastifyBaseLogger,
    opts: WorkerOptions = {}
  ) {
    this.observe = opts.observe ?? (() => {})
    this.clock = opts.clock ?? systemClock
    this.random = opts.random ?? Math.random
    this.sender = opts.sender ?? new Sender({
      allowPrivate: config.webhookAllowPrivateTargets,
      caFile: config.webhookCaFile,
      connections: config.webhookConcurrency,
      timeoutMs: config.webhookAttemptTimeoutSeconds * 1000
    })
  }

  /** A copy: callers read it, never change it. */
  snapshot (): WorkerStatus {
    return { ...this.status }
  }

  async start (): Promise<void> {
    this.status.running = true
    await this.db.listen(WAKEUP_CHANNEL, () => this.signal())
    this.loopDone = this.loop()
    this.reaper = setInterval(
      () => {
        this.store.reap().then(
          n => {
            if (n === 0) return
            this.log.warn({ released: n }, 'released deliveries whose worker lease expired')
            this.signal()
          },
          err => this.warn(err, 'lease reaper failed')
        )
      },
      Math.max(1_000, this.config.webhookLeaseSeconds * 500)
    )
    this.reaper.unref()
  }

  /** Stops claiming, lets attempts in flight finish (bounded), records them, and closes the client. */
  async stop (): Promise<void> {
    if (!this.status.running) return
    this.status.running = false
    clearInterval(this.reaper)
    this.signal()
    await this.loopDone
    const deadline = Date.now() + this.config.webhookAttemptTimeoutSeconds * 1000 + DRAIN_MARGIN_MS
    while (this.status.inFlight > 0 && Date.now() < deadline) await new Promise(resolve => setTimeout(resolve, 10))
    await this.flush()
    await this.sender.close()
  }

  /** A database outage is logged by the database, once per interval; anything else is logged here. */
  private warn (err: unknown, message: string, fields: Record<string, unknown> = {}): void {
    if (err instanceof DatabaseUnavailableError) return
    this.log.error({ err, ...fields }, message)
  }

  private signal (): void {
    this.woken = true
    const wake = this.wake
    this.wake = undefined
    wake?.()
  }

  private async loop (): Promise<void> {
    const { webhookConcurrency: concurrency, webhookLeaseSeconds: lease } = this.config
    while (this.status.running) {
      this.woken = false
      const free = concurrency - this.status.inFlight
      let claimed: ClaimedDelivery[] = []
      let lostRace = false
      if (free > 0) {
        const started = performance.now()
        try {
          const claim = await this.store.claim(this.status.id, free, lease, this.lanes(concurrency))
          claimed = claim.claimed
          // Another worker locked some of what this claim chose first: there may be more to take right away.
          lostRace = claim.claimed.length < claim.picked
          for (const c of [...claim.claimed, ...claim.seen]) this.learn(c.subscriptionId, c.tenant, c.slow)
        } catch (err) {
          this.warn(err, 'claiming deliveries failed')
        }
        this.status.claims++
        this.status.claimed += claimed.length
        this.status.claimMs += performance.now() - started
        // Not awaited: attempts run side by side; each records its own outcome and never rejects.
        for (const delivery of claimed) {
          if (delivery.slow) this.countSlow(delivery, 1)
          this.attempt(delivery).catch(err => this.warn(err, 'delivery attempt failed'))
        }
      }
      if ((claimed.length > 0 && claimed.length === free) || lostRace || this.woken) continue
      await new Promise<void>(resolve => {
        const timer = setTimeout(resolve, POLL_MS)
        this.wake = () => {
          clearTimeout(timer)
          resolve()
        }
      })
    }
  }

  /**
   * Fair delivery (docs/webhook-delivery.md#fair-delivery): attempts that may hang — to subscriptions with no
   * success yet, or failing now — get at most 2 slots per subscription, a quarter of the slots per tenant and half
   * of them in all, so that a tenant of dead endpoints cannot hold every slot for 15 s at a time.
   */
  private lanes (concurrency: number): Lanes {
    const perSubscription = SLOW_PER_SUBSCRIPTION
    const perTenant = Math.max(1, Math.floor(concurrency / 4))
    const slowRoom = Math.max(1, Math.floor(concurrency / 2)) - this.slowInFlight
    const fullTenants = new Set([...this.slowByTenant].filter(([, n]) => n >= perTenant).map(([t]) => t))
    const excluded = [...this.knownSlow].filter(([sub, tenant]) =>
      slowRoom <= 0 || fullTenants.has(tenant) || (this.slowBySubscription.get(sub) ?? 0) >= perSubscription
    ).map(([sub]) => sub)
    return {
      excluded,
      fullTenants: [...fullTenants],
      slowRoom,
      slowBySubscription: Object.fromEntries(this.slowBySubscription),
      slowByTenant: Object.fromEntries(this.slowByTenant),
      perSubscription,
      perTenant
    }
  }

  /** What a claim saw of a subscription: slow ones are remembered (a bounded number), healthy ones forgotten. */
  private learn (subscriptionId: string, tenant: string, slow: boolean): void {
    if (!slow) {
      this.knownSlow.delete(subscriptionId)
      return
    }
    this.knownSlow.delete(subscriptionId)
    this.knownSlow.set(subscriptionId, tenant)
    if (this.knownSlow.size > KNOWN_SLOW_MAX) this.knownSlow.delete(this.knownSlow.keys().next().value!)
  }

  private countSlow (d: ClaimedDelivery, delta: 1 | -1): void {
    const add = (m: Map<string, number>, k: string) => {
      const n = (m.get(k) ?? 0) + delta
      if (n > 0) m.set(k, n)
      else m.delete(k)
    }
    add(this.slowBySubscription, d.subscriptionId)
    add(this.slowByTenant, d.tenant)
    this.slowInFlight += delta
  }

  private async attempt (d: ClaimedDelivery): Promise<void> {
    this.status.inFlight++
    try {
      if (!d.deliverable) {
        await this.store.cancel([d.id])
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
      if (d.slow) this.countSlow(d, -1)
    }
    // A slot is free: claim more while this result is being written, and again once it is (a retry may be due).
    this.signal()
    await this.flush()
    this.signal()
  }

  /** Records finished attempts in batches: one transaction for many results keeps up with a hot subscription. */
  private async flush (): Promise<void> {
    while (this.flushing) await this.flushing
    if (this.pending.length === 0) return
    const batch = this.pending.splice(0, FLUSH_BATCH)
    const started = performance.now()
    const { webhookDisableAfterFailures: maxFailures, webhookDisableAfterHours: maxHours } = this.config
    this.flushing = this.db
      .tx(async q => {
        await this.store.record(q, batch)
        const updates = counterUpdates(batch)
        const rows = await this.store.applyCounters(q, updates)
        const crossed = crossedThresholds(rows, updates, maxFailures, maxHours, this.clock.now())
        for (const reason of ['gone', 'consecutive_failures'] as const) {
          await this.store.disable(
            q,
            crossed.filter(c => c.reason === reason).map(c => c.id),
            reason
          )
        }
        if (crossed.length > 0) this.log.warn({ disabled: crossed }, 'webhook subscriptions disabled')
      })
      .catch(err => {
        // Not recorded: the leases expire and the deliveries are attempted again (at least once).
        this.warn(err, 'recording delivery results failed', { deliveries: batch.length })
      })
      .finally(() => {
        this.status.flushes++
        this.status.recorded += batch.length
        this.status.flushMs += performance.now() - started
        this.flushing = undefined
      })
    await this.flushing
    if (this.pending.length > 0) await this.flush()
  }
}
