import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { safeEqual } from '../../lib/crypto.js'
import { errors } from '../../plugins/infrastructure/errors.js'
import { EVENTS_BODY_LIMIT } from '../../lib/limits.js'
import { bodyErrors, errorResponses, invalid, SERVICE_ERRORS } from '../../schemas/error-responses.js'
import { EventOrBatch, EventOrBatchAccepted, MAX_EVENT_BATCH } from '../../schemas/events.js'

/** Event ingestion from the accounting system (docs/rules.md#event-ingestion), behind EVENTS_TOKEN. */
const events: FastifyPluginAsyncTypebox = async (app) => {
  const expected = `Bearer ${app.config.eventsToken}`
  app.addHook('onRequest', async (request) => {
    if (!safeEqual(request.headers.authorization ?? '', expected)) throw errors.invalidEventsToken()
  })

  app.post('/events', {
    bodyLimit: EVENTS_BODY_LIMIT,
    schema: {
      tags: ['events'],
      operationId: 'publishEvent',
      summary: 'Publish an event',
      description: 'For the accounting system only. The event is stored and fanned out, in one transaction, to ' +
        'every active subscription of its tenant and topic. `id` is the idempotency key: the same event again ' +
        'is accepted once; the same id with other content is a conflict. A record topic\'s `data` is the whole ' +
        'record, checked (schema and sums) before anything is stored, and kept for the read routes unless the ' +
        'copy kept is as new (`updated_at`). An array of up to ' +
        `${MAX_EVENT_BATCH} events is one transaction too: every event is stored, or none, and the answer is an ` +
        'array of results in the order sent.',
      security: [{ eventsToken: [] }],
      body: EventOrBatch,
      response: {
        202: EventOrBatchAccepted,
        ...errorResponses(
          errors.invalidEventsToken(),
          ...bodyErrors(EVENTS_BODY_LIMIT),
          invalid('body', '/data/total', 'must equal subtotal + tax_total (1303.05)'),
          errors.unknownTopic(['invoice.deleted']),
          errors.eventConflict(),
          errors.topicNotEmitted('work_order.released'),
          ...SERVICE_ERRORS
        )
      }
    }
  }, async (request, reply) => {
    const body = request.body
    return reply.code(202).send(Array.isArray(body)
      ? await app.events.publishBatch(body)
      : await app.events.publish(body))
  })
}

export default events
