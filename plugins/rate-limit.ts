import fp from 'fastify-plugin'
import rateLimit from '@fastify/rate-limit'
import { Redis } from 'ioredis'
import { errors } from './errors.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** Shared rate-limit counters when REDIS_URL is set, so that every instance counts together. */
    redis: Redis | null
  }
}

/** Owns the Redis connection behind the rate limits (none without REDIS_URL: counters stay in memory). */
export default fp(async (app) => {
  const redis = app.config.redisUrl
    ? new Redis(app.config.redisUrl, { maxRetriesPerRequest: 1, connectTimeout: 2_000, lazyConnect: false, enableOfflineQueue: false })
    : null
  redis?.on('error', err => app.log.warn({ err }, 'redis error: rate limits fail open until it is back'))
  app.decorate('redis', redis)
  app.addHook('onClose', async () => { await redis?.quit().catch(() => redis.disconnect()) })
}, { name: 'rate-limit-store', dependencies: ['config'] })

/**
 * Registered inside the public context after the auth hook: `PUBLIC_RATE_LIMIT` requests a minute per install,
 * with the X-RateLimit headers on every authenticated answer.
 */
export const perInstallRateLimit = fp(async (app) => {
  await app.register(rateLimit, {
    max: app.config.publicRateLimit,
    timeWindow: 60_000,
    hook: 'onRequest',
    keyGenerator: request => request.principal!.installId,
    redis: app.redis ?? undefined,
    nameSpace: 'mg-public-rl-',
    // Availability over strictness: a Redis outage must not take the API down.
    skipOnError: true,
    errorResponseBuilder: (_request, context) => errors.rateLimited(Math.ceil(context.ttl / 1000))
  })
}, { dependencies: ['rate-limit-store', 'public-auth'] })
