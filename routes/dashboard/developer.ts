import { randomUUID } from 'node:crypto'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type, type TProperties } from '@sinclair/typebox'
import type { FastifyRequest, onRequestHookHandler, preHandlerHookHandler } from 'fastify'
import { parseTypedInstant } from '../../lib/dates.js'
import { errors } from '../../plugins/infrastructure/errors.js'
import type { AttemptFilter, AttemptOutcome } from '../../plugins/domain/webhooks/attempt-log-store.js'
import { eventCatalog } from '../../schemas/webhooks.js'
import { appMain, appsMain, installsMain } from '../../views/apps.js'
import { attemptsLogMain, deliveryMain, rotatedMain, type LogFilterFields } from '../../views/attempts.js'
import { lastHours } from '../../views/chart.js'
import { appWebhooksMain, subscriptionPath } from '../../views/webhooks.js'
import type { PageKit } from './page-kit.js'

export interface DashboardRouteOptions {
  kit: PageKit
  action: { onRequest: onRequestHookHandler, preHandler: preHandlerHookHandler }
}

const schema = { hide: true }
const HOUR_MS = 3_600_000
/** Rows a page of a list shows. */
const PAGE_SIZE = 50
/** How long the replaced secret signs beside a new one when a page rotates it (what the API does by default). */
const ROTATION_OVERLAP_HOURS = 24
/** An id in a path: any length the router takes (a longer segment is 414), unknown ones are the same 404 page. */
const Id = Type.String({ minLength: 1 })
const Cursor = Type.Optional(Type.String({ maxLength: 1000 }))
/** A form's fields: the form token and whatever else the form carries, as text. */
const Form = <T extends TProperties>(fields: T) => Type.Object({ _csrf: Type.Optional(Type.String()), ...fields })
const Text = (maxLength = 200) => Type.Optional(Type.String({ maxLength }))

const LogQuery = Type.Object({
  status: Text(), topic: Text(), since: Text(), until: Text(), event_id: Text(), cursor: Cursor
})
const LOG_FIELDS = ['status', 'topic', 'since', 'until', 'event_id'] as const
const OUTCOMES: readonly string[] = ['succeeded', 'failed', 'pending'] satisfies AttemptOutcome[]

type Detail = { location: string, path: string, message: string }

const INSTANT_FORMAT = 'must be a date and time: ISO 8601 (2026-11-28T09:30:00Z), or as the date field sends it ' +
  '(2026-11-28T09:30, read as UTC)'

/** A typed instant of a form or a query; an empty field is none, anything else unreadable is a problem noted. */
function readInstant (value: string | undefined, at: Omit<Detail, 'message'>, problems: Detail[]): Date | undefined {
  if (value === undefined || value.trim() === '') return undefined
  const d = parseTypedInstant(value)
  if (!d) problems.push({ ...at, message: INSTANT_FORMAT })
  return d
}

/** The log's filters as typed, and as the store reads them; a filter that is not valid is a 400 page. */
function readLogFilter (q: Record<string, string | undefined>, topics: ReadonlySet<string>): {
  fields: LogFilterFields
  filter: AttemptFilter
} {
  const fields = Object.fromEntries(LOG_FIELDS.map(k => [k, (q[k] ?? '').trim()])) as unknown as LogFilterFields
  const problems: Detail[] = []
  const instant = (name: 'since' | 'until') =>
    readInstant(fields[name], { location: 'query', path: `/${name}` }, problems)
  const since = instant('since')
  const until = instant('until')
  if (since && until && !(since < until)) {
    problems.push({ location: 'query', path: '/since', message: 'must be before until' })
  }
  if (fields.status !== '' && !OUTCOMES.includes(fields.status)) {
    problems.push({ location: 'query', path: '/status', message: 'must be succeeded, failed or pending' })
  }
  if (fields.topic !== '' && !topics.has(fields.topic)) {
    problems.push({ location: 'query', path: '/topic', message: 'must be a topic of the event catalog' })
  }
  if (problems.length > 0) throw errors.validation(problems, 'The filters of the attempts log are not valid.')
  return {
    fields,
    filter: {
      outcome: fields.status === '' ? undefined : fields.status as AttemptOutcome,
      topic: fields.topic || undefined,
      eventId: fields.event_id || undefined,
      since,
      until
    }
  }
}

/** A query string of the log's filters (and a cursor), empty fields left out. */
function logQuery (fields: LogFilterFields, cursor?: string): string {
  const q = new URLSearchParams()
  for (const k of LOG_FIELDS) if (fields[k] !== '') q.set(k, fields[k])
  if (cursor !== undefined) q.set('cursor', cursor)
  return q.toString()
}

/** Where an action on the log returns: the subscription's page with the query it was on (only the log's fields). */
function backTo (subscriptionId: string, back: string | undefined): string {
  const given = new URLSearchParams(back ?? '')
  const kept = new URLSearchParams()
  for (const k of [...LOG_FIELDS, 'cursor']) {
    const v = given.get(k)
    if (v) kept.set(k, v)
  }
  const query = kept.toString()
  return subscriptionPath(subscriptionId) + (query ? `?${query}` : '')
}

/** The pages and actions of app developers: their apps, installs, webhooks and each subscription's log. */
const developerPages: FastifyPluginAsyncTypebox<DashboardRouteOptions> = async (app, { kit, action }) => {
  const { sendPage, requirePageUser, formToken, redirectWithNotice, title } = kit
  const page = { onRequest: requirePageUser }
  const topics = eventCatalog().event_types.map(t => t.name)
  const topicSet = new Set(topics)
  const sub = (request: FastifyRequest): string => request.sessionUser!.sub

  async function ownedApp (request: FastifyRequest, clientId: string) {
    const found = await app.apps.findOwned(sub(request), clientId)
    if (!found) throw errors.appNotFound()
    return found
  }

  /** The last 24 whole hours, the current one included, as the figures are kept. */
  const dayStart = (): Date => new Date(Math.floor(app.clock.now() / HOUR_MS) * HOUR_MS - 23 * HOUR_MS)

  app.get('/apps', { schema, ...page }, async (request, reply) => {
    const apps = await app.apps.listOwnedBy(sub(request))
    const ids = apps.map(a => a.clientId)
    const [installs, activity] = await Promise.all([
      app.installs.countActive(ids),
      app.webhooks.activity(ids, dayStart())
    ])
    const summaries = apps.map(a => {
      const hours = activity.filter(h => h.clientId === a.clientId)
      return {
        app: a,
        activeInstalls: installs.get(a.clientId) ?? 0,
        succeeded: hours.reduce((n, h) => n + h.succeeded, 0),
        failed: hours.reduce((n, h) => n + h.exhausted, 0)
      }
    })
    return sendPage(request, reply, { title: title('Your apps'), current: 'apps', main: appsMain(summaries) })
  })

  app.get('/apps/:clientId', { schema: { ...schema, params: Type.Object({ clientId: Id }) }, ...page },
    async (request, reply) => {
      const found = await ownedApp(request, request.params.clientId)
      return sendPage(request, reply, {
        title: title(found.name), current: 'apps', main: appMain(found, formToken(request, reply, request.sessionUser!))
      })
    })

  app.get('/apps/:clientId/installs', {
    schema: { ...schema, params: Type.Object({ clientId: Id }), querystring: Type.Object({ cursor: Cursor }) },
    ...page
  }, async (request, reply) => {
    const found = await ownedApp(request, request.params.clientId)
    const { installs, nextCursor } =
      await app.installs.listForApp(found.clientId, { limit: PAGE_SIZE, cursor: request.query.cursor })
    return sendPage(request, reply, {
      title: title(`Installs of ${found.name}`), current: 'apps', main: installsMain(found, installs, nextCursor)
    })
  })

  app.get('/apps/:clientId/webhooks', {
    schema: { ...schema, params: Type.Object({ clientId: Id }), querystring: Type.Object({ cursor: Cursor }) },
    ...page
  }, async (request, reply) => {
    const found = await ownedApp(request, request.params.clientId)
    const [activity, listing] = await Promise.all([
      app.webhooks.activity([found.clientId], dayStart()),
      app.webhooks.appSubscriptions(found.clientId, { limit: PAGE_SIZE, cursor: request.query.cursor })
    ])
    return sendPage(request, reply, {
      title: title(`Webhooks of ${found.name}`),
      current: 'apps',
      main: appWebhooksMain(found, lastHours(app.clock.now(), 24, activity), listing.subscriptions, listing.nextCursor)
    })
  })

  app.get('/webhooks/:subscriptionId', {
    schema: { ...schema, params: Type.Object({ subscriptionId: Id }), querystring: LogQuery },
    ...page
  }, async (request, reply) => {
    const { fields, filter } = readLogFilter(request.query, topicSet)
    const owned = await app.webhooks.ownedByDeveloper(sub(request), request.params.subscriptionId)
    const log = await app.webhooks.attemptLog(owned.principal, owned.subscription.id,
      { limit: PAGE_SIZE, cursor: request.query.cursor, filter })
    return sendPage(request, reply, {
      title: title(`Subscription ${owned.subscription.id}`),
      current: 'apps',
      main: attemptsLogMain({
        subscription: owned.subscription,
        app: { clientId: owned.install.clientId, name: owned.install.appName },
        entries: log.entries,
        fields,
        query: logQuery(fields, request.query.cursor),
        nextQuery: log.nextCursor === null ? null : logQuery(fields, log.nextCursor),
        searchedTo: log.searchedTo,
        topics,
        csrfToken: formToken(request, reply, request.sessionUser!),
        recoverSince: new Date(app.clock.now() - 24 * HOUR_MS),
        replayKey: randomUUID()
      })
    })
  })

  app.get('/webhooks/:subscriptionId/deliveries/:deliveryId', {
    schema: { ...schema, params: Type.Object({ subscriptionId: Id, deliveryId: Id }) },
    ...page
  }, async (request, reply) => {
    const owned = await app.webhooks.ownedByDeveloper(sub(request), request.params.subscriptionId)
    const { delivery, attempts } =
      await app.webhooks.delivery(owned.principal, owned.subscription.id, request.params.deliveryId)
    return sendPage(request, reply, {
      title: title(`Delivery ${delivery.id}`),
      current: 'apps',
      main: deliveryMain(owned.subscription, delivery, attempts, formToken(request, reply, request.sessionUser!))
    })
  })

  app.post('/apps/:clientId/api-key', {
    schema: {
      ...schema,
      params: Type.Object({ clientId: Id }),
      body: Form({ enabled: Type.Union([Type.Literal('true'), Type.Literal('false')]) })
    },
    ...action
  }, async (request, reply) => {
    const enabled = request.body.enabled === 'true'
    const changed = await app.apps.setKeyEnabled(sub(request), request.params.clientId, enabled)
    if (!changed) throw errors.appNotFound()
    return redirectWithNotice(reply, `/dashboard/apps/${encodeURIComponent(changed.clientId)}`,
      [enabled ? 'key-enabled' : 'key-disabled', changed.name])
  })

  app.post('/webhooks/:subscriptionId/deliveries/:deliveryId/retry', {
    schema: {
      ...schema, params: Type.Object({ subscriptionId: Id, deliveryId: Id }), body: Form({ back: Text(2000) })
    },
    ...action
  }, async (request, reply) => {
    const owned = await app.webhooks.ownedByDeveloper(sub(request), request.params.subscriptionId)
    const retried = await app.webhooks.retry(owned.principal, owned.subscription.id, request.params.deliveryId)
    return redirectWithNotice(reply, backTo(owned.subscription.id, request.body.back),
      ['retried', retried.delivery_id])
  })

  app.post('/webhooks/:subscriptionId/replay', {
    schema: {
      ...schema,
      params: Type.Object({ subscriptionId: Id }),
      body: Form({ since: Text(), until: Text(), status: Text(), replay_key: Text(), back: Text(2000) })
    },
    ...action
  }, async (request, reply) => {
    const body = request.body
    const problems: Detail[] = []
    const since = readInstant(body.since, { location: 'body', path: '/since' }, problems)
    if (!since && !problems.length) problems.push({ location: 'body', path: '/since', message: 'is required' })
    const until = readInstant(body.until, { location: 'body', path: '/until' }, problems)
    const status = body.status ?? 'failed'
    if (status !== 'failed' && status !== 'all') {
      problems.push({ location: 'body', path: '/status', message: 'must be failed or all' })
    }
    if (problems.length > 0) throw errors.validation(problems, 'The recovery cannot start: a field is not valid.')
    const owned = await app.webhooks.ownedByDeveloper(sub(request), request.params.subscriptionId)
    const replayed = await app.webhooks.replay(owned.principal, owned.subscription.id, {
      since: since!.toISOString(), until: until?.toISOString(), status: status as 'failed' | 'all'
    }, body.replay_key || undefined)
    return redirectWithNotice(reply, backTo(owned.subscription.id, body.back),
      ['replayed', String(replayed.replayed), String(replayed.truncated)])
  })

  app.post('/webhooks/:subscriptionId/test', {
    schema: { ...schema, params: Type.Object({ subscriptionId: Id }), body: Form({ back: Text(2000) }) },
    ...action
  }, async (request, reply) => {
    const owned = await app.webhooks.ownedByDeveloper(sub(request), request.params.subscriptionId)
    const sent = await app.webhooks.sendTest(owned.principal, owned.subscription.id)
    return redirectWithNotice(reply, backTo(owned.subscription.id, request.body.back),
      ['test-sent', sent.event_id])
  })

  app.post('/webhooks/:subscriptionId/rotate-secret', {
    schema: { ...schema, params: Type.Object({ subscriptionId: Id }), body: Form({}) },
    ...action
  }, async (request, reply) => {
    const owned = await app.webhooks.ownedByDeveloper(sub(request), request.params.subscriptionId)
    const rotated = await app.webhooks.rotateSecret(owned.principal, owned.subscription.id, ROTATION_OVERLAP_HOURS)
    const expires = rotated.previous_secret_expires_at
    return sendPage(request, reply, {
      title: title('New signing secret'),
      current: 'apps',
      narrow: true,
      main: rotatedMain(owned.subscription, rotated.signing_secret, expires === null ? null : new Date(expires))
    })
  })
}

export default developerPages
