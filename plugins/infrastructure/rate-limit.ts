import { createRequire } from 'node:module'
import fp from 'fastify-plugin'
import rateLimit, { type FastifyRateLimitStoreCtor } from '@fastify/rate-limit'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { Redis } from 'ioredis'
import { networkErrorKind } from '../../lib/network-errors.js'
import { throttledLog } from '../../lib/throttled-log.js'
import { errors } from './errors.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** Shared rate-limit counters when REDIS_URL is set, so that every instance counts together. */
    redis: Redis | null
    /**
     * True while Redis is down or not answering: the limiters skip it (allowList) and let requests through at
     * once, rather than each waiting for its command to time out.
     */
    redisBypassed(): boolean
    /**
     * Counts requests against several budgets at once (`budgets`): counters under `nameSpace`, each budget's window
     * `timeWindowMs` long.
     */
    rateBudgets(nameSpace: string, timeWindowMs: number): CountBudgets
  }
}

/** A budget a request counts against: what it counts (`ip:<address>`, `session:<id>`), how many a window allows. */
export interface Budget { key: string, max: number }

/**
 * Counts one request against every budget it gives, and answers whether the request went over any of them: then
 * with the seconds until every budget it went over has room again (Retry-After).
 */
export type CountBudgets = (budgets: Budget[]) => Promise<Verdict>
export type Verdict = { exceeded: false } | { exceeded: true, retryAfterSeconds: number }

/**
 * The counts of several budgets in one script call: one round trip to Redis, so one request waits at most one
 * command time-out however many budgets it counts against. Each key as the rate-limit plugin's own script counts it
 * (the same keys, so both can count one budget): the first request of a window sets its expiry. A key left without
 * an expiry (a write lost half-way) gets one again, so that it can never refuse for good.
 */
const COUNT_BUDGETS = `
local window = tonumber(ARGV[1])
local out = {}
for _, key in ipairs(KEYS) do
  local current = redis.call('INCR', key)
  local ttl = window
  if current == 1 then
    redis.call('PEXPIRE', key, window)
  else
    ttl = redis.call('PTTL', key)
    if ttl < 0 then
      ttl = window
      redis.call('PEXPIRE', key, window)
    end
  end
  out[#out + 1] = current
  out[#out + 1] = ttl
end
return out
`
type BudgetScript = (numberOfKeys: number, ...keysThenArgs: Array<string | number>) => Promise<number[]>

interface Counted { current: number, ttl: number }
interface LocalStore { incr(key: string, cb: (err: Error | null, res: Counted) => void, window: number): void }
// The plugin's in-memory store (an LRU), for an instance without Redis.
const PluginLocalStore = createRequire(import.meta.url)('@fastify/rate-limit/store/LocalStore.js') as
  new (continueExceeding: boolean, exponentialBackoff: boolean, cache: number) => LocalStore
/** Keys one set of budgets keeps in memory: the plugin's 5,000 for each of two limiters, as one set holds both. */
const LOCAL_KEYS = 10_000

/** Why a Redis command failed, in the words of `dependency_errors_total`. */
const redisErrorKind = (err: unknown): string =>
  networkErrorKind(err) ?? (/timed out/i.test((err as Error)?.message ?? '') ? 'timeout' : 'error')

/**
 * Bounds on every wait on Redis (docs/operations.md#time-outs). A command that gets no answer in COMMAND_MS fails
 * and the limiter lets the request through (skipOnError); a probe every PROBE_MS trips the breaker, so that while
 * Redis stays silent requests do not wait at all.
 */
export const REDIS_TIMEOUTS = { CONNECT_MS: 1_000, COMMAND_MS: 250, PROBE_MS: 1_000 }

/** Owns the Redis connection behind the rate limits (none without REDIS_URL: counters stay in memory). */
export default fp(
  async app => {
    const redis = app.config.redisUrl
      ? new Redis(app.config.redisUrl, {
        maxRetriesPerRequest: 1,
        connectTimeout: REDIS_TIMEOUTS.CONNECT_MS,
        commandTimeout: REDIS_TIMEOUTS.COMMAND_MS,
        lazyConnect: false,
        // Without a connection a command fails at once instead of queueing.
        enableOfflineQueue: false,
        retryStrategy: times => Math.min(times * 200, 2_000)
      })
      : null
    const report = throttledLog(app.log, 'redis unavailable: rate limits fail open until it is back')
    const failed = (kind: string, err: unknown): void => {
      report(kind, err)
      app.metrics?.dependencyError('redis', kind)
    }
    let answering = true
    redis?.on('error', err => failed(networkErrorKind(err) ?? 'error', err))
    const probe = redis
      ? setInterval(() => {
        if (redis.status !== 'ready') return
        redis.ping().then(() => { answering = true }, err => {
          answering = false
          failed('timeout', err)
        })
      }, REDIS_TIMEOUTS.PROBE_MS).unref()
      : undefined
    app.decorate('redis', redis)
    const bypassed = (): boolean => redis !== null && (redis.status !== 'ready' || !answering)
    app.decorate('redisBypassed', bypassed)
    redis?.defineCommand('mgCountBudgets', { lua: COUNT_BUDGETS })
    app.decorate('rateBudgets', (nameSpace: string, timeWindowMs: number): CountBudgets => {
      const verdict = (budgets: Budget[], counted: Counted[]): Verdict => {
        const over = counted.filter((c, i) => c.current > budgets[i]!.max)
        return over.length === 0
          ? { exceeded: false }
          : { exceeded: true, retryAfterSeconds: Math.ceil(Math.max(...over.map(c => c.ttl)) / 1000) }
      }
      if (!redis) {
        const local = new PluginLocalStore(false, false, LOCAL_KEYS)
        return async budgets => verdict(budgets, budgets.map(b => {
          let counted: Counted = { current: 0, ttl: 0 }
          // The store answers at once.
          local.incr(b.key, (_err, res) => { counted = res }, timeWindowMs)
          return counted
        }))
      }
      const script = (redis as unknown as { mgCountBudgets: BudgetScript }).mgCountBudgets.bind(redis)
      return async budgets => {
        // As the plugin's limiters: while Redis is silent, no request waits on it.
        if (budgets.length === 0 || bypassed()) return { exceeded: false }
        let flat: number[]
        try {
          flat = await script(budgets.length, ...budgets.map(b => nameSpace + b.key), timeWindowMs)
        } catch (err) {
          // Availability over strictness: the request goes through uncounted (fail open), as with skipOnError.
          failed(redisErrorKind(err), err)
          return { exceeded: false }
        }
        return verdict(budgets, budgets.map((_, i) => ({ current: flat[2 * i]!, ttl: flat[2 * i + 1]! })))
      }
    })
    app.addHook('onClose', async () => {
      clearInterval(probe)
      await redis?.quit().catch(() => redis.disconnect())
    })
  },
  { name: 'rate-limit-store', dependencies: ['config'] }
)

interface StoreOptions {
  continueExceeding: boolean
  exponentialBackoff: boolean
  routeInfo?: { method?: string, url?: string }
}
interface RedisStore { key: string, child(options: StoreOptions): RedisStore }
// The plugin's own Redis store (Lua, one round trip), which its package does not export by name.
const PluginRedisStore = createRequire(import.meta.url)('@fastify/rate-limit/store/RedisStore.js') as
  new (continueExceeding: boolean, exponentialBackoff: boolean, redis: Redis, key: string) => RedisStore

/**
 * Where a set of limiters counts: in Redis under `nameSpace` when there is one (shared by every instance), else in
 * this instance's memory. The plugin's Redis store names a limiter's keys after its route, and a limiter made with
 * `createRateLimit` has none: its keys read `<nameSpace>undefinedundefined-<key>`. Here they read
 * `<nameSpace><key>` (the key generators start with what they count: `ip:`, `session:`, `install:`).
 */
export function counters (app: FastifyInstance, nameSpace: string): { store?: FastifyRateLimitStoreCtor } {
  const redis = app.redis
  if (!redis) return {}
  class Store extends PluginRedisStore {
    constructor (params: StoreOptions) {
      super(params.continueExceeding, params.exponentialBackoff, redis!, nameSpace)
    }

    override child (options: StoreOptions): RedisStore {
      if (options.routeInfo?.url) return super.child(options)
      return new PluginRedisStore(options.continueExceeding, options.exponentialBackoff, redis!, this.key)
    }
  }
  return { store: Store as unknown as FastifyRateLimitStoreCtor }
}

/**
 * `PUBLIC_RATE_LIMIT` requests a minute per install, counted in Redis when there is one. Registers the limiter in
 * the caller's context and returns its check, for the caller's own hook to run once the principal is known: the
 * check sets the X-RateLimit headers on every answer and throws `rate_limited` past the limit.
 */
export async function perInstallRateLimit (
  app: FastifyInstance
): Promise<(request: FastifyRequest, reply: FastifyReply) => Promise<unknown>> {
  await app.register(rateLimit, {
    global: false,
    max: app.config.publicRateLimit,
    timeWindow: 60_000,
    keyGenerator: request => request.principal!.installId,
    ...counters(app, 'mg-public-rl-'),
    // Availability over strictness: a Redis outage must not take the API down, nor slow it.
    skipOnError: true,
    allowList: () => app.redisBypassed(),
    errorResponseBuilder: (_request, context) => errors.rateLimited(Math.ceil(context.ttl / 1000))
  })
  const check = app.rateLimit()
  return (request, reply) => check.call(app, request, reply)
}
