import fp from 'fastify-plugin'
import rateLimit from '@fastify/rate-limit'
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify'
import { Redis } from 'ioredis'
import { errors } from './errors.js'

declare module 'fastify' {
  interface FastifyInstance {
    /** Shared rate-limit counters when REDIS_URL is set, so that every instance counts together. */
    redis: Redis | null
  }
}

/** Owns the Redis connection behind the rate limits (none without REDIS_URL: counters stay in memory). */
export default fp(
  async app => {
    const redis = app.config.redisUrl
      ? new Redis(app.config.redisUrl, {
        maxRetriesPerRequest: 1,
        connectTimeout: 2_000,
        lazyConnect: false,
        enableOfflineQueue: false
      })
      : null
    redis?.on('error', err => app.log.warn({ err }, 'redis error: rate limits fail open until it is back'))
    app.decorate('redis', redis)
    app.addHook('onClose', async () => {
      await redis?.quit().catch(() => redis.disconnect())
    })
  },
  { name: 'rate-limit-store', dependencies: ['config'] }
)

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
    redis: app.redis ?? undefined,
    nameSpace: 'mg-public-rl-',
    // Availability over strictness: a Redis outage must not take the API down.
    skipOnError: true,
    errorResponseBuilder: (_request, context) => errors.rateLimited(Math.ceil(context.ttl / 1000))
  })
  const check = app.rateLimit()
  return (request, reply) => check.call(app, request, reply)
}
