import { randomUUID } from 'node:crypto'
import { hostname } from 'node:os'
import fp from 'fastify-plugin'
import type { FastifyInstance } from 'fastify'
import type { CounterUpdate } from './subscriptions.js'
import type { AttemptResult, ClaimedDelivery } from './queue.js'
import { WAKEUP_CHANNEL } from './queue.js'
import { Sender, TOTAL_TIMEOUT_MS, type Outcome } from './sender.js'
import { decryptSecret } from './signing.js'

/** The poll that backs up notifications, and picks up retries as they fall due. */
const POLL_MS = 1_000
const FLUSH_BATCH = 500
const DRAIN_MS = TOTAL_TIMEOUT_MS + 2_000

declare module 'fastify' {
  interface FastifyInstance {
    webhookWorker: {
      readonly id: string
      readonly running: boolean
      readonly inFlight: number
      readonly attempted: number
    } | null
  }
}

/** When the next attempt is due after a failed one, or null when the schedule is spent (contract 5.4). */
export function nextAttemptAt (schedule: number[], attempt: number, retryAfterS: number | null, now = Date.now()): Date | null {
  const base = schedule[attempt - 1]
  if (base === undefined) return null
  const scheduled = base * 1000
  const wait = retryAfterS !== null
    ? Math.min(retryAfterS * 1000, 2 * scheduled)
    : scheduled * (0.8 + Math.random() * 0.4)
  return new Date(now + wait)
}

/** Folds one flush's results, in completion order, into one counter update per subscription. */
export function counterUpdates (results: AttemptResult[]): CounterUpdate[] {
  const bySubscription = new Map<string, CounterUpdate>()
  for (const r of results) {
    const u = bySubscription.get(r.subscriptionId) ??
      { subscriptionId: r.subscriptionId, lastAt: r.attemptedAt, lastStatus: r.status, reset: false, failures: 0, streakStart: null, gone: false }
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

class DeliveryWorker {
  readonly id = `${hostname()}:${process.pid}:${randomUUID().slice(0, 8)}`
  running = false
  inFlight = 0
  attempted = 0
  private readonly sender: Sender
  private pending: AttemptResult[] = []
  private flushing: Promise<void> | undefined
  private wake: (() => void) | undefined
  /** A signal that arrived while the loop was busy: the loop must not then sleep. */
  private woken = false
  private loopDone: Promise<void> | undefined
  private reaper: NodeJS.Timeout | undefined

  constructor (private readonly app: FastifyInstance) {
    const c = app.config
    this.sender = new Sender({ allowPrivate: c.webhookAllowPrivateTargets, caFile: c.webhookCaFile, connections: c.webhookConcurrency })
  }

  async start (): Promise<void> {
    this.running = true
    await this.app.db.listen(WAKEUP_CHANNEL, () => this.signal())
    this.loopDone = this.loop()
    const lease = this.app.config.webhookLeaseSeconds
    this.reaper = setInterval(() => {
      this.app.webhookQueue.reap().then(n => {
        if (n > 0) this.app.log.warn({ released: n }, 'released deliveries whose worker lease expired')
        if (n > 0) this.signal()
      }, err => this.app.log.warn({ err }, 'lease reaper failed'))
    }, Math.max(1_000, lease * 500))
    this.reaper.unref()
  }

  /** Stops claiming, lets attempts in flight finish (bounded), records them, and closes the client. */
  async stop (): Promise<void> {
    if (!this.running) return
    this.running = false
    clearInterval(this.reaper)
    this.signal()
    await this.loopDone
    const deadline = Date.now() + DRAIN_MS
    while (this.inFlight > 0 && Date.now() < deadline) await new Promise(resolve => setTimeout(resolve, 10))
    await this.flush()
    await this.sender.close()
  }

  private signal (): void {
    this.woken = true
    const wake = this.wake
    this.wake = undefined
    wake?.()
  }

  private async loop (): Promise<void> {
    const { webhookConcurrency: concurrency, webhookLeaseSeconds: lease } = this.app.config
    while (this.running) {
      this.woken = false
      const free = concurrency - this.inFlight
      let claimed: ClaimedDelivery[] = []
      if (free > 0) {
        try {
          claimed = await this.app.webhookQueue.claim(this.id, free, lease)
        } catch (err) {
          this.app.log.warn({ err }, 'claiming deliveries failed')
        }
        for (const delivery of claimed) void this.attempt(delivery)
      }
      if ((claimed.length > 0 && claimed.length === free) || this.woken) continue
      await new Promise<void>(resolve => {
        const timer = setTimeout(resolve, POLL_MS)
        this.wake = () => { clearTimeout(timer); resolve() }
      })
    }
  }

  private async attempt (d: ClaimedDelivery): Promise<void> {
    this.inFlight++
    try {
      if (!d.deliverable) {
        await this.app.webhookQueue.cancel(this.app.db, [d.id])
        return
      }
      const attempt = d.attempts + 1
      const attemptedAt = new Date()
      let outcome: Outcome
      try {
        const secret = decryptSecret(this.app.config.webhookSecretKey, d.subscriptionId, d.secretCiphertext)
        outcome = await this.sender.send({ targetUrl: d.targetUrl, eventId: d.eventId, topic: d.topic, attempt, body: d.body, secret })
      } catch (err) {
        outcome = { status: 0, responseBody: null, error: `internal: ${(err as Error).message}`, retryAfterS: null, durationMs: 0 }
      }
      const succeeded = outcome.status >= 200 && outcome.status < 300
      this.attempted++
      this.pending.push({
        deliveryId: d.id,
        subscriptionId: d.subscriptionId,
        attempt,
        attemptedAt,
        durationMs: outcome.durationMs,
        status: outcome.status,
        responseBody: outcome.responseBody,
        error: outcome.error,
        succeeded,
        nextAttemptAt: succeeded || outcome.status === 410 ? null : nextAttemptAt(this.app.config.webhookRetrySchedule, attempt, outcome.retryAfterS)
      })
    } finally {
      this.inFlight--
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
    this.flushing = this.app.db.tx(async q => {
      await this.app.webhookQueue.record(q, batch)
      const crossed = await this.app.webhookSubscriptions.applyCounters(q, counterUpdates(batch))
      for (const reason of ['gone', 'consecutive_failures'] as const) {
        await this.app.webhookSubscriptions.disable(q, crossed.filter(c => c.reason === reason).map(c => c.id), reason)
      }
      if (crossed.length > 0) this.app.log.warn({ disabled: crossed }, 'webhook subscriptions disabled')
    }).catch(err => {
      // Not recorded: the leases expire and the deliveries are attempted again (at least once).
      this.app.log.error({ err, deliveries: batch.length }, 'recording delivery results failed')
    }).finally(() => { this.flushing = undefined })
    await this.flushing
    if (this.pending.length > 0) await this.flush()
  }
}

/** The delivery worker: starts when the app is ready, drains when it closes. Off with WEBHOOK_WORKER=false. */
export default fp(async (app) => {
  if (!app.config.webhookWorker) {
    app.decorate('webhookWorker', null)
    return
  }
  const worker = new DeliveryWorker(app)
  app.decorate('webhookWorker', worker)
  app.addHook('onReady', async () => { await worker.start() })
  app.addHook('preClose', async () => { await worker.stop() })
}, { name: 'webhook-worker', dependencies: ['db', 'webhook-queue', 'webhook-subscriptions'] })
