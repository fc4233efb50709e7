import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { VERSION } from '../../lib/root.js'
import { Health, Readiness } from '../../schemas/health.js'

/** Liveness and readiness for orchestrators. */
const health: FastifyPluginAsyncTypebox = async app => {
  const started = Date.now()
  let shuttingDown = false
  app.addHook('preClose', async () => {
    shuttingDown = true
  })

  app.get('/health', { schema: { tags: ['operations'], response: { 200: Health } } }, async () => ({
    status: 'ok' as const,
    version: VERSION,
    active_sessions: app.mcp.activeSessions(),
    uptime_s: Math.floor((Date.now() - started) / 1000)
  }))

  app.get(
    '/health/ready',
    { schema: { tags: ['operations'], response: { 200: Readiness, 503: Readiness } } },
    async (_request, reply) => {
      const database = await Promise.race([
        app.db.query('select 1').then(
          () => 'ok' as const,
          () => 'unavailable' as const
        ),
        new Promise<'unavailable'>(resolve => setTimeout(() => resolve('unavailable'), 2_000).unref())
      ])
      const ready = database === 'ok' && !shuttingDown
      return reply
        .code(ready ? 200 : 503)
        .send({ status: ready ? 'ready' : 'unavailable', database, shutting_down: shuttingDown })
    }
  )
}

export default health
