import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { errorResponses, TENANT_ERRORS } from '../../../../schemas/errors.js'
import { TenantParams } from '../../../../schemas/identity.js'
import {
  AttemptLog, AttemptLogQuery, CreateSubscriptionBody, CreatedSubscription, DeleteResult, DeliveryParams,
  IdempotencyHeaders, ListQuery, ReplayAccepted, ReplayBody, RetryAccepted, RotatedSecret, RotateQuery,
  SubscriptionListing, SubscriptionParams, TestSent
} from '../../../../schemas/webhooks.js'

/** Webhook subscriptions of the calling install, each a call into `app.webhooks` (plugins/webhooks). */
const webhooks: FastifyPluginAsyncTypebox = async (app) => {
  const base = '/webhooks'
  const tags = ['webhooks']
  const security = [{ accessToken: [] }]

  app.post(base, {
    schema: {
      tags,
      security,
      summary: 'Subscribe to topics',
      params: TenantParams,
      body: CreateSubscriptionBody,
      response: { 201: CreatedSubscription, ...errorResponses(...TENANT_ERRORS, 400, 413, 415, 422) }
    }
  }, async (request, reply) => reply.code(201).send(await app.webhooks.subscribe(request.principal!, request.body)))

  app.get(base, {
    schema: {
      tags,
      security,
      summary: 'List your subscriptions (active only unless include_inactive)',
      params: TenantParams,
      querystring: ListQuery,
      response: { 200: SubscriptionListing, ...errorResponses(...TENANT_ERRORS, 400) }
    }
  }, async (request) => app.webhooks.list(request.principal!, request.query.include_inactive === true))

  app.delete(`${base}/:subscriptionId`, {
    schema: {
      tags,
      security,
      summary: 'Delete a subscription (soft delete)',
      params: SubscriptionParams,
      response: { 200: DeleteResult, ...errorResponses(...TENANT_ERRORS) }
    }
  }, async (request) => app.webhooks.remove(request.principal!, request.params.subscriptionId))

  app.get(`${base}/:subscriptionId/deliveries`, {
    schema: {
      tags,
      security,
      summary: 'Delivery attempts of a subscription, newest first',
      params: SubscriptionParams,
      querystring: AttemptLogQuery,
      response: { 200: AttemptLog, ...errorResponses(...TENANT_ERRORS, 400, 404) }
    }
  }, async (request) => app.webhooks.attempts(request.principal!, request.params.subscriptionId, request.query.limit,
    request.query.cursor))

  app.post(`${base}/:subscriptionId/rotate-secret`, {
    schema: {
      tags,
      security,
      summary: 'Rotate the signing secret, with an overlap',
      params: SubscriptionParams,
      querystring: RotateQuery,
      response: { 200: RotatedSecret, ...errorResponses(...TENANT_ERRORS, 400, 404, 409) }
    }
  }, async (request) =>
    app.webhooks.rotateSecret(request.principal!, request.params.subscriptionId, request.query.overlap_hours ?? 24))

  app.post(`${base}/:subscriptionId/test`, {
    schema: {
      tags,
      security,
      summary: 'Send a webhook.test delivery to this subscription',
      params: SubscriptionParams,
      response: { 202: TestSent, ...errorResponses(...TENANT_ERRORS, 404, 409) }
    }
  }, async (request, reply) => reply.code(202).send(
    await app.webhooks.sendTest(request.principal!, request.params.subscriptionId)))

  app.post(`${base}/:subscriptionId/replay`, {
    schema: {
      tags,
      security,
      summary: 'Send again what was delivered (or failed) in a time range',
      params: SubscriptionParams,
      headers: IdempotencyHeaders,
      body: ReplayBody,
      response: { 202: ReplayAccepted, ...errorResponses(...TENANT_ERRORS, 400, 404, 409, 413, 415) }
    }
  }, async (request, reply) => reply.code(202).send(await app.webhooks.replay(request.principal!,
    request.params.subscriptionId, request.body, request.headers['idempotency-key'])))

  app.post(`${base}/:subscriptionId/deliveries/:deliveryId/retry`, {
    schema: {
      tags,
      security,
      summary: 'Attempt a delivery again now',
      params: DeliveryParams,
      response: { 202: RetryAccepted, ...errorResponses(...TENANT_ERRORS, 404, 409) }
    }
  }, async (request, reply) => {
    const { subscriptionId, deliveryId } = request.params
    return reply.code(202).send(await app.webhooks.retry(request.principal!, subscriptionId, deliveryId))
  })
}

export default webhooks
