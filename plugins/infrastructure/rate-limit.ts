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
  }
}

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
    app.decorate('redisBypassed', () => redis !== null && (redis.status !== 'ready' || !answering))
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
