import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { errors } from '../../../../plugins/infrastructure/errors.js'
import { MAX_ACTIVE_PER_INSTALL } from '../../../../plugins/domain/webhooks/service.js'
import { BODY_ERRORS, errorResponses, invalid, TENANT_ERRORS } from '../../../../schemas/error-responses.js'
import { TenantParams } from '../../../../schemas/identity.js'
import {
  AttemptLog, AttemptLogQuery, CreateSubscriptionBody, CreatedSubscription, DeleteResult, DeliveryParams,
  IdempotencyHeaders, ListQuery, ReplayAccepted, ReplayBody, RetryAccepted, RotatedSecret, RotateQuery,
  SubscriptionListing, SubscriptionParams, TestSent
} from '../../../../schemas/webhooks.js'

/** Answers of the routes on one subscription: not the caller's (or no such one), or no longer active. */
const NOT_YOURS = errors.subscriptionNotFound()
const INACTIVE = errors.subscriptionInactive()

/** Webhook subscriptions of the calling install, each a call into `app.webhooks` (plugins/domain/webhooks). */
const webhooks: FastifyPluginAsyncTypebox = async (app) => {
  const base = '/webhooks'
  const tags = ['webhooks']

  app.post(base, {
    schema: {
      tags,
      operationId: 'createWebhookSubscription',
      summary: 'Subscribe to topics',
      description: 'Deliveries of these topics in your tenant go to `target_url`, signed with the `signing_secret` ' +
        'of the answer, which is shown only here. An install may have ' + MAX_ACTIVE_PER_INSTALL + ' active ' +
        'subscriptions. Send yourself a `webhook.test` next to check your receiver.',
      params: TenantParams,
      body: CreateSubscriptionBody,
      response: {
        201: CreatedSubscription,
        ...errorResponses(
          ...TENANT_ERRORS,
          ...BODY_ERRORS,
          invalid('body', '/topics', 'must NOT have fewer than 1 items'),
          errors.unknownTopic(['invoice.deleted']),
          errors.invalidTargetUrl('target_url must be an HTTPS URL.'),
          errors.limitExceeded(`An install may have at most ${MAX_ACTIVE_PER_INSTALL} active subscriptions.`)
        )
      }
    }
  }, async (request, reply) => reply.code(201).send(await app.webhooks.subscribe(request.principal!, request.body)))

  app.get(base, {
    schema: {
      tags,
      operationId: 'listWebhookSubscriptions',
      summary: 'List your subscriptions',
      description: 'Active subscriptions of the calling install; with `include_inactive=true` also deleted and ' +
        'disabled ones, with the reason. The casing of the fields is fixed by the interface ' +
        '(docs/rules.md#json-casings).',
      params: TenantParams,
      querystring: ListQuery,
      response: {
        200: SubscriptionListing,
        ...errorResponses(...TENANT_ERRORS, invalid('querystring', '/include_inactive', 'must be boolean'))
      }
    }
  }, async (request) => app.webhooks.list(request.principal!, request.query.include_inactive === true))

  app.delete(`${base}/:subscriptionId`, {
    schema: {
      tags,
      operationId: 'deleteWebhookSubscription',
      summary: 'Delete a subscription',
      description: 'A soft delete: no more deliveries; it stays listed with `include_inactive=true`. Deleting ' +
        'one that is already inactive, or that is not yours, answers `modified: 0`.',
      params: SubscriptionParams,
      response: { 200: DeleteResult, ...errorResponses(...TENANT_ERRORS) }
    }
  }, async (request) => app.webhooks.remove(request.principal!, request.params.subscriptionId))

  app.get(`${base}/:subscriptionId/deliveries`, {
    schema: {
      tags,
      operationId: 'listWebhookDeliveryAttempts',
      summary: 'Delivery attempts of a subscription',
      description: 'Newest first, with what was sent and what came back (status, headers, up to 4 KiB of the ' +
        'body, the error class). Page with `next_cursor`.',
      params: SubscriptionParams,
      querystring: AttemptLogQuery,
      response: {
        200: AttemptLog,
        ...errorResponses(
          ...TENANT_ERRORS,
          invalid('querystring', '/limit', 'must be <= 200'),
          errors.invalidCursor(),
          NOT_YOURS
        )
      }
    }
  }, async (request) => app.webhooks.attempts(request.principal!, request.params.subscriptionId, request.query.limit,
    request.query.cursor))

  app.post(`${base}/:subscriptionId/rotate-secret`, {
    schema: {
      tags,
      operationId: 'rotateWebhookSecret',
      summary: 'Rotate the signing secret',
      description: 'A new secret signs from now on; the replaced one keeps signing next to it for ' +
        '`overlap_hours` (default 24), so that your receiver can switch without losing a delivery.',
      params: SubscriptionParams,
      querystring: RotateQuery,
      response: {
        200: RotatedSecret,
        ...errorResponses(
          ...TENANT_ERRORS,
          invalid('querystring', '/overlap_hours', 'must be <= 168'),
          NOT_YOURS,
          INACTIVE
        )
      }
    }
  }, async (request) =>
    app.webhooks.rotateSecret(request.principal!, request.params.subscriptionId, request.query.overlap_hours ?? 24))

  app.post(`${base}/:subscriptionId/test`, {
    schema: {
      tags,
      operationId: 'sendWebhookTest',
      summary: 'Send a test delivery',
      description: 'A `webhook.test` delivery to this subscription only, signed and retried like any other. ' +
        'Look for it in the delivery attempts.',
      params: SubscriptionParams,
      response: { 202: TestSent, ...errorResponses(...TENANT_ERRORS, NOT_YOURS, INACTIVE) }
    }
  }, async (request, reply) => reply.code(202).send(
    await app.webhooks.sendTest(request.principal!, request.params.subscriptionId)))

  app.post(`${base}/:subscriptionId/replay`, {
    schema: {
      tags,
      operationId: 'replayWebhookDeliveries',
      summary: 'Replay deliveries of a time range',
      description: 'Sends again the events of `[since, until)` whose delivery failed for good (or all that ended), ' +
        'up to 10,000 at a time. Repeat a request with the same `Idempotency-Key` to get the first answer again.',
      params: SubscriptionParams,
      headers: IdempotencyHeaders,
      body: ReplayBody,
      response: {
        202: ReplayAccepted,
        ...errorResponses(
          ...TENANT_ERRORS,
          ...BODY_ERRORS,
          invalid('body', '/since', 'must be before until'),
          NOT_YOURS,
          INACTIVE,
          errors.idempotencyConflict()
        )
      }
    }
  }, async (request, reply) => reply.code(202).send(await app.webhooks.replay(request.principal!,
    request.params.subscriptionId, request.body, request.headers['idempotency-key'])))

  app.post(`${base}/:subscriptionId/deliveries/:deliveryId/retry`, {
    schema: {
      tags,
      operationId: 'retryWebhookDelivery',
      summary: 'Retry a delivery now',
      description: 'Makes the delivery pending and due now, whatever it ended as; the worker sends it at once.',
      params: DeliveryParams,
      response: {
        202: RetryAccepted,
        ...errorResponses(...TENANT_ERRORS, NOT_YOURS, errors.deliveryNotFound(), INACTIVE)
      }
    }
  }, async (request, reply) => {
    const { subscriptionId, deliveryId } = request.params
    return reply.code(202).send(await app.webhooks.retry(request.principal!, subscriptionId, deliveryId))
  })
}

export default webhooks
