import type { FastifyInstance } from 'fastify'
import type { Caps, DeliveryQueueStore } from './delivery-queue-store.js'

/** Tenants named by the per-tenant gauges: the largest backlogs and the most attempts in flight, TOP of each. */
const TOP = 10
/** A scrape reads the queue once for all gauges; a second scrape within this reuses the reading. */
const FRESH_MS = 1_000

/**
 * The queue's gauges (docs/metrics.md): its depth and age, and how it is spread over tenants and subscriptions,
 * in bounded series: counts and maxima over all subscriptions, and per-tenant series only for the top ten tenants by
 * backlog and by attempts in flight (never one series per subscription).
 */
export function registerQueueGauges (
  metrics: FastifyInstance['metrics'],
  store: Pick<DeliveryQueueStore, 'backlog' | 'queueBySubscription'>,
  caps: Caps
): void {
  const cached = <T>(read: () => Promise<T>) => {
    let last: { at: number, value: Promise<T> } | undefined
    return () => {
      if (!last || Date.now() - last.at > FRESH_MS) last = { at: Date.now(), value: read() }
      return last.value
    }
  }
  const backlog = cached(() => store.backlog())
  const spread = cached(async () => {
    const subscriptions = await store.queueBySubscription()
    const tenants = new Map<string, { pending: number, inFlight: number }>()
    for (const s of subscriptions) {
      const t = tenants.get(s.tenant) ?? { pending: 0, inFlight: 0 }
      t.pending += s.pending
      t.inFlight += s.inFlight
      tenants.set(s.tenant, t)
    }
    return { subscriptions, tenants: [...tenants] }
  })
  const top = (key: 'pending' | 'inFlight') => async (): Promise<Array<[string, number]>> => {
    const { tenants } = await spread()
    const byBacklog = [...tenants].sort((a, b) => b[1].pending - a[1].pending).slice(0, TOP)
    const byInFlight = [...tenants].sort((a, b) => b[1].inFlight - a[1].inFlight).slice(0, TOP)
    const named = new Map([...byBacklog, ...byInFlight].filter(([, t]) => t[key] > 0))
    return [...named].map(([tenant, t]) => [tenant, t[key]])
  }
  const max = (values: number[]) => values.reduce((a, b) => Math.max(a, b), 0)

  metrics.gauge('webhook_queue_depth', 'Pending webhook deliveries.', async () => (await backlog()).pending)
  metrics.gauge('webhook_oldest_pending_age_seconds', 'Age of the oldest pending delivery.',
    async () => (await backlog()).oldestAgeS)
  metrics.labeledGauge('webhook_tenant_backlog',
    `Pending deliveries of the tenants (org/entity) with the ${TOP} largest backlogs or the ${TOP} most attempts ` +
    'in flight.', 'tenant', top('pending'))
  metrics.labeledGauge('webhook_tenant_in_flight',
    'Attempts in flight, all workers together, of the same tenants as webhook_tenant_backlog.', 'tenant',
    top('inFlight'))
  metrics.gauge('webhook_tenants_with_backlog', 'Tenants with pending deliveries.',
    async () => (await spread()).tenants.length)
  metrics.gauge('webhook_tenants_at_cap', 'Tenants with WEBHOOK_TENANT_MAX_IN_FLIGHT attempts in flight.',
    async () => (await spread()).tenants.filter(([, t]) => t.inFlight >= caps.perTenant).length)
  metrics.gauge('webhook_subscriptions_with_backlog', 'Subscriptions with pending deliveries.',
    async () => (await spread()).subscriptions.length)
  metrics.gauge('webhook_subscriptions_at_cap',
    'Subscriptions with WEBHOOK_SUBSCRIPTION_MAX_IN_FLIGHT attempts in flight.',
    async () => (await spread()).subscriptions.filter(s => s.inFlight >= caps.perSubscription).length)
  metrics.gauge('webhook_subscription_backlog_max', 'The largest backlog of one subscription.',
    async () => max((await spread()).subscriptions.map(s => s.pending)))
  metrics.gauge('webhook_subscription_in_flight_max', 'The most attempts in flight of one subscription.',
    async () => max((await spread()).subscriptions.map(s => s.inFlight)))
}
