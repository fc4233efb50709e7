import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { errors } from '../../../plugins/errors.js'
import { attemptView, createdView, listItemView } from '../../../plugins/webhooks/views.js'
import { errorResponses } from '../../../schemas/errors.js'
import { TenantParams } from '../../../schemas/identity.js'
import {
  AttemptLog, AttemptLogQuery, CreateSubscriptionBody, CreatedSubscription, DeleteResult, DeliveryParams, ListQuery,
  RetryAccepted, SubscriptionListing, SubscriptionParams
} from '../../../schemas/webhooks.js'
import { TENANT_ERRORS } from './index.js'

/** Webhook subscriptions of the calling install (spec 4.1, contract 5.2), inside the public pipeline. */
const webhooks: FastifyPluginAsyncTypebox = async (app) => {
  const base = '/orgs/:orgId/entities/:entityId/webhooks'
  const tags = ['webhooks']
  const security = [{ accessToken: [] }]

  app.post(base, {
    schema: {
      tags, security, summary: 'Subscribe to topics',
      params: TenantParams,
      body: CreateSubscriptionBody,
      response: { 201: CreatedSubscription, ...errorResponses(...TENANT_ERRORS, 400, 413, 415, 422) }
    }
  }, async (request, reply) => {
    const s = await app.webhookSubscriptions.create(request.principal!, { topics: request.body.topics, targetUrl: request.body.target_url })
    return reply.code(201).send(createdView(s))
  })

  app.get(base, {
    schema: {
      tags, security, summary: 'List your subscriptions (active only unless include_inactive)',
      params: TenantParams,
      querystring: ListQuery,
      response: { 200: SubscriptionListing, ...errorResponses(...TENANT_ERRORS, 400) }
    }
  }, async (request) => {
    const all = request.query.include_inactive === true
    const subs = await app.webhookSubscriptions.list(request.principal!, all)
    return { subscriptions: subs.map(s => listItemView(s, all)) }
  })

  app.delete(`${base}/:subscriptionId`, {
    schema: {
      tags, security, summary: 'Delete a subscription (soft delete)',
      params: SubscriptionParams,
      response: { 200: DeleteResult, ...errorResponses(...TENANT_ERRORS) }
    }
  }, async (request) => ({ ok: true, modified: await app.webhookSubscriptions.remove(request.principal!, request.params.subscriptionId) }))

  app.get(`${base}/:subscriptionId/deliveries`, {
    schema: {
      tags, security, summary: 'Delivery attempts of a subscription, newest first',
      params: SubscriptionParams,
      querystring: AttemptLogQuery,
      response: { 200: AttemptLog, ...errorResponses(...TENANT_ERRORS, 400, 404) }
    }
  }, async (request) => {
    const s = await app.webhookSubscriptions.findOwned(request.principal!, request.params.subscriptionId)
    if (!s) throw errors.notFound('No such subscription among yours.')
    const log = await app.webhookQueue.attempts(s.id, request.query.limit ?? 50)
    return { attempts: log.map(attemptView) }
  })

  app.post(`${base}/:subscriptionId/deliveries/:deliveryId/retry`, {
    schema: {
      tags, security, summary: 'Attempt a delivery again now',
      params: DeliveryParams,
      response: { 202: RetryAccepted, ...errorResponses(...TENANT_ERRORS, 404, 409) }
    }
  }, async (request, reply) => {
    const s = await app.webhookSubscriptions.findOwned(request.principal!, request.params.subscriptionId)
    if (!s) throw errors.notFound('No such subscription among yours.')
    if (!s.isActive) throw errors.conflict('The subscription is not active; create a new one.')
    if (!await app.webhookQueue.retryNow(s.id, request.params.deliveryId)) throw errors.notFound('No such delivery for this subscription.')
    return reply.code(202).send({ delivery_id: request.params.deliveryId, status: 'pending' as const })
  })
}

export default webhooks
