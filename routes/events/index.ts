import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { safeEqual } from '../../lib/crypto.js'
import { errors } from '../../plugins/errors.js'
import { errorResponses } from '../../schemas/errors.js'
import { EventAccepted, EventBody } from '../../schemas/events.js'

/** Event ingestion from the accounting system (docs/rules.md#event-ingestion), behind EVENTS_TOKEN. */
const events: FastifyPluginAsyncTypebox = async (app) => {
  const expected = `Bearer ${app.config.eventsToken}`
  app.addHook('onRequest', async (request) => {
    if (!safeEqual(request.headers.authorization ?? '', expected)) throw errors.invalidEventsToken()
  })

  app.post('/events', {
    schema: {
      tags: ['events'],
      summary: 'Publish an event (accounting system only)',
      body: EventBody,
      response: { 202: EventAccepted, ...errorResponses(400, 401, 409, 413, 415, 422, 503) }
    }
  }, async (request, reply) => reply.code(202).send(await app.webhooks.publish(request.body)))
}

export default events
