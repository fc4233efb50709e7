import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { VERSION } from '../../lib/root.js'
import { Health, Readiness } from '../../schemas/health.js'

/** The readiness probe's own bound on the database, below the orchestrators' usual 3 s probe time-out. */
const READY_PROBE_MS = 1_000

/** Liveness and readiness for orchestrators. */
const health: FastifyPluginAsyncTypebox = async app => {
  const started = Date.now()

  const tags = ['operations']
  app.get('/health', {
    schema: {
      tags,
      operationId: 'getHealth',
      summary: 'Liveness',
      description: 'The process answers: restart it when this fails. Never asks the database.',
      security: [],
      response: { 200: Health }
    }
  }, async () => ({
    status: 'ok' as const,
    version: VERSION,
    active_sessions: app.mcp.activeSessions(),
    uptime_s: Math.floor((Date.now() - started) / 1000)
  }))

  app.get(
    '/health/ready',
    {
      schema: {
        tags,
        operationId: 'getReadiness',
        summary: 'Readiness',
        description: 'Whether to send traffic here: the database answers within 1 s and the instance is not ' +
          'shutting down.',
        security: [],
        response: {
          200: Readiness,
          503: {
            ...Readiness,
            'x-response-description': 'Not ready: keep traffic away for now.',
            examples: [{ status: 'unavailable', database: 'unavailable', shutting_down: false }]
          }
        }
      }
    },
    async (_request, reply) => {
      const shuttingDown = app.lifecycle.draining
      // While draining the answer is 503 whatever the database says, so it is not asked.
      const database = shuttingDown
        ? 'unknown' as const
        : (await app.db.ping(READY_PROBE_MS)) ? 'ok' as const : 'unavailable' as const
      const ready = database === 'ok' && !shuttingDown
      return reply
        .code(ready ? 200 : 503)
        .send({ status: ready ? 'ready' : 'unavailable', database, shutting_down: shuttingDown })
    }
  )
}

export default health
