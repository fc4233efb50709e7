import { timingSafeEqual } from 'node:crypto'
import fp from 'fastify-plugin'
import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry, type Metric } from 'prom-client'
import { errors } from './errors.js'

declare module 'fastify' {
  interface FastifyInstance {
    metrics: {
      registry: Registry
      /** A Postgres or Redis failure, by kind (infrastructure/db/postgres.ts, infrastructure/rate-limit.ts). */
      dependencyError(dependency: 'postgres' | 'redis', kind: string): void
      /** A webhook delivery attempt and how long it took (plugins/domain/webhooks/worker.ts). */
      deliveryAttempt(outcome: string, seconds: number): void
      /** A page of an aged report, and where its sums came from (plugins/domain/reports/store.ts). */
      agedReportPage(report: string, snapshot: 'kept' | 'made' | 'joined'): void
      /** An access-state lookup, answered from the cache or from the database (plugins/domain/auth/access-state.ts). */
      accessCache(hit: boolean): void
      /** A gauge read when Prometheus scrapes; `read` may query (bounded by the database's own time-outs). */
      gauge(name: string, help: string, read: () => number | undefined | Promise<number | undefined>): void
      /** A gauge with one label, whose series are all replaced at each scrape by what `read` returns. */
      labeledGauge(name: string, help: string, label: string, read: () => Promise<Array<[string, number]>>): void
    }
  }
}

const SECONDS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10]

/**
 * Prometheus metrics (docs/metrics.md). The registry is the app's own, not prom-client's global one, so that
 * several apps in one process (tests) each count their own. `GET /metrics` is served only when METRICS_TOKEN is
 * set, and only to `Authorization: Bearer <METRICS_TOKEN>`; it is not in the OpenAPI document.
 */
export default fp(async app => {
  const registry = new Registry()
  collectDefaultMetrics({ register: registry })

  const observeRequest = requestHistogram(registry)
  const dependencyErrors = new Counter({
    name: 'dependency_errors_total',
    help: 'Failures talking to Postgres or Redis, by kind (refused, timeout, connection_lost, ...).',
    labelNames: ['dependency', 'kind'],
    registers: [registry]
  })
  const attempts = new Counter({
    name: 'webhook_delivery_attempts_total',
    help: 'Webhook delivery attempts by outcome: delivered, retrying, failed (the last attempt), gone (410).',
    labelNames: ['outcome'],
    registers: [registry]
  })
  const agedPages = new Counter({
    name: 'aged_report_pages_total',
    help: 'Pages of the aged reports by where their sums came from: the snapshot kept, one made for the page, or ' +
      'one the page waited for while another page made it.',
    labelNames: ['report', 'snapshot'],
    registers: [registry]
  })
  const attemptDuration = new Histogram({
    name: 'webhook_delivery_duration_seconds',
    help: 'Time of one delivery attempt, connection to answer.',
    buckets: SECONDS,
    registers: [registry]
  })
  // Counted by hand and read at scrape time: this runs on every public request, and two integers cost less than
  // prom-client's label hashing.
  let hits = 0
  let lookups = 0
  // eslint-disable-next-line no-new -- registered in the registry, which owns it
  new Counter({
    name: 'access_cache_lookups_total',
    help: 'Access-state lookups of the public pipeline: result hit (cache) or miss (database).',
    labelNames: ['result'],
    registers: [registry],
    collect () {
      this.reset()
      this.labels('hit').inc(hits)
      this.labels('miss').inc(lookups - hits)
    }
  })

  const gauge: FastifyMetrics['gauge'] = (name, help, read) => {
    // eslint-disable-next-line no-new -- registered in the registry, which owns it
    new Gauge({
      name,
      help,
      registers: [registry],
      async collect () {
        // A dependency that is down leaves the gauge out of this scrape, not the whole scrape failing.
        const value = await Promise.resolve().then(read).catch(() => undefined)
        if (value !== undefined) this.set(value)
      }
    })
  }
  const labeledGauge: FastifyMetrics['labeledGauge'] = (name, help, label, read) => {
    // eslint-disable-next-line no-new -- registered in the registry, which owns it
    new Gauge({
      name,
      help,
      labelNames: [label],
      registers: [registry],
      async collect () {
        const values = await read().catch(() => undefined)
        if (values === undefined) return
        this.reset()
        for (const [value, n] of values) this.set({ [label]: value }, n)
      }
    })
  }
  gauge('access_cache_hit_ratio', 'Share of access-state lookups answered from the cache since start.',
    () => lookups === 0 ? undefined : hits / lookups)

  const metrics: FastifyMetrics = {
    registry,
    dependencyError: (dependency, kind) => dependencyErrors.inc({ dependency, kind }),
    deliveryAttempt: (outcome, seconds) => {
      attempts.inc({ outcome })
      attemptDuration.observe(seconds)
    },
    agedReportPage: (report, snapshot) => agedPages.inc({ report, snapshot }),
    accessCache: hit => {
      lookups++
      if (hit) hits++
    },
    gauge,
    labeledGauge
  }
  app.decorate('metrics', metrics)

  app.addHook('onResponse', (request, reply, next) => {
    observeRequest(request.method, request.routeOptions.url ?? 'unmatched', reply.statusCode, reply.elapsedTime / 1000)
    next()
  })

  const token = app.config.metricsToken
  if (!token) return
  const expected = Buffer.from(`Bearer ${token}`)
  app.get('/metrics', { schema: { hide: true } }, async (request, reply) => {
    const given = Buffer.from(request.headers.authorization ?? '')
    if (given.length !== expected.length || !timingSafeEqual(given, expected)) throw errors.invalidMetricsToken()
    return reply.type(registry.contentType).send(await registry.metrics())
  })
}, { name: 'metrics', dependencies: ['config'] })

type FastifyMetrics = import('fastify').FastifyInstance['metrics']

type RequestLabel = 'method' | 'route' | 'status_code'

/**
 * `http_request_duration_seconds`: prom-client's Histogram, observed through bound children, one per route, status and
 * method, so that a request builds no label object. The route and method strings are the same objects on every
 * request (route config, the HTTP parser's method table), so each Map lookup reuses a hash V8 computed once; a joined
 * key would be hashed anew. A child stays valid across a reset of the registry: it writes its series anew.
 */
function requestHistogram (registry: Registry) {
  const histogram = new Histogram<RequestLabel>({
    name: 'http_request_duration_seconds',
    help: 'Time to answer a request, by method, route template (never the raw URL) and status code.',
    labelNames: ['method', 'route', 'status_code'],
    buckets: SECONDS,
    registers: []
  })
  registry.registerMetric(leLast('http_request_duration_seconds', histogram))
  const byRoute = new Map<string, Map<number, Map<string, Histogram.Internal<RequestLabel>>>>()
  return (method: string, route: string, status: number, seconds: number): void => {
    let byStatus = byRoute.get(route)
    if (!byStatus) byRoute.set(route, byStatus = new Map())
    let byMethod = byStatus.get(status)
    if (!byMethod) byStatus.set(status, byMethod = new Map())
    let child = byMethod.get(method)
    if (!child) byMethod.set(method, child = histogram.labels(method, route, String(status)))
    child.observe(seconds)
  }
}

/**
 * The histogram as the registry exposes it, with a bucket's `le` after the series' labels
 * (`{method="GET",route="/x",status_code="200",le="0.005"}`, as Prometheus' own clients write it): prom-client writes
 * `le` first, and the exposition stays the one dashboards and alerts were written against.
 */
function leLast<T extends string> (name: string, histogram: Histogram<T>): Metric {
  const get = async () => {
    const data = await histogram.get()
    const values = data.values.map(v => {
      const { le, ...series } = v.labels as Record<string, string | number>
      return le === undefined ? v : { ...v, labels: { ...series, le } }
    })
    return { ...data, values }
  }
  // The registry reads a metric's name, `get` and `reset`; the rest of prom-client's Metric is not used on it.
  return { name, get, reset: () => histogram.reset() } as unknown as Metric
}
