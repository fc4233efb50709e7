import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { errors } from '../../../plugins/errors.js'
import type { Subscription } from '../../../plugins/webhooks/subscriptions.js'
import { errorResponses } from '../../../schemas/errors.js'
import { TenantParams } from '../../../schemas/identity.js'
import {
  AttemptLog, AttemptLogQuery, CreateSubscriptionBody, CreatedSubscription, DeleteResult, DeliveryParams, ListQuery,
  RetryAccepted, SubscriptionListing, SubscriptionParams
} from '../../../schemas/webhooks.js'
import { TENANT_ERRORS } from './index.js'

const iso = (d: Date | null): string | null => d?.toISOString() ?? null

const listItem = (s: Subscription, withReason: boolean) => ({
  _id: s.id,
  Topics: s.topics,
  TargetUrl: s.targetUrl,
  IsActive: s.isActive,
  LastDeliveryAt: iso(s.lastDeliveryAt),
  LastDeliveryStatus: s.lastDeliveryStatus,
  ConsecutiveFailures: s.consecutiveFailures,
  createdAt: s.createdAt.toISOString(),
  ...(withReason ? { DisabledReason: s.disabledReason } : {})
})

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
    return reply.code(201).send({ id: s.id, topics: s.topics, target_url: s.targetUrl, signing_secret: s.signingSecret, created_at: s.createdAt.toISOString() })
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
    return { subscriptions: subs.map(s => listItem(s, all)) }
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
    return {
      attempts: log.map(a => ({
        id: a.id,
        delivery_id: a.deliveryId,
        event_id: a.eventId,
        topic: a.topic,
        attempt: a.attempt,
        attempted_at: a.attemptedAt.toISOString(),
        duration_ms: a.durationMs,
        response_status: a.responseStatus,
        response_body: a.responseBody,
        error: a.error,
        delivery_status: a.deliveryStatus as 'pending'
      }))
    }
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
