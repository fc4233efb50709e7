import { createHmac } from 'node:crypto'
import csrf from '@fastify/csrf-protection'
import formbody from '@fastify/formbody'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import type { FastifyError, FastifyRequest } from 'fastify'
import { returnPath, SIGN_IN_PATH } from '../../plugins/domain/auth/sign-in-links.js'
import { SESSION_COOKIE } from '../../plugins/domain/auth/user-session.js'
import { errors, toApiError } from '../../plugins/infrastructure/errors.js'
import { eventCatalog } from '../../schemas/webhooks.js'
import { eventTypesMain } from '../../views/event-types.js'
import { CSRF_FIELD } from '../../views/forms.js'
import { pageTitle } from '../../views/layout.js'
import { errorMain, errorTitle, signInMain } from '../../views/messages.js'
import { ICON_SVG, STYLESHEET_CSS, STYLESHEET_VERSION } from '../../views/stylesheet.js'
import connectionPages from './connections.js'
import developerPages from './developer.js'
import { createPageKit, PAGE_HEADERS } from './page-kit.js'

const SESSION_TTL_SECONDS = 12 * 3600
/** The hidden route schema of a page: pages are not part of the API's OpenAPI document. */
const schema = { hide: true }

/** The server-rendered marketplace dashboard (docs/dashboard.md): sign-in, its pages and its actions. */
const dashboard: FastifyPluginAsyncTypebox = async app => {
  const { publicBaseUrl, userSessionSecret } = app.config
  const ownOrigin = new URL(publicBaseUrl).origin
  const secure = new URL(publicBaseUrl).protocol === 'https:'

  await app.register(formbody)
  await app.register(csrf, {
    sessionPlugin: '@fastify/cookie',
    cookieKey: CSRF_FIELD,
    cookieOpts: { path: '/dashboard', httpOnly: true, sameSite: 'strict', secure },
    // A token is good only with the session it was made for: another user's page cannot lend its forms.
    getUserInfo: (request: FastifyRequest) => request.sessionUser?.sub ?? '',
    csrfOpts: { hmacKey: createHmac('sha256', userSessionSecret).update('dashboard csrf tokens').digest() }
  })

  app.addHook('onRequest', async (_request, reply) => {
    reply.headers(PAGE_HEADERS)
  })

  const kit = createPageKit(app, { ownOrigin, secure })
  const { sendPage, sessionOf, requirePageUser } = kit
  const action = { onRequest: kit.requireActionUser, preHandler: app.csrfProtection }

  app.setErrorHandler((err: FastifyError, request, reply) => {
    const e = err.code?.startsWith('FST_CSRF_')
      ? errors.formTokenRefused()
      : toApiError(err, request, request.routeOptions.bodyLimit ?? app.initialConfig.bodyLimit ?? 1_048_576)
    if (e.code === 'internal_error') request.log.error({ err }, 'request failed')
    reply.header('x-request-id', request.id)
    return sendPage(request, reply, {
      title: pageTitle(errorTitle(e)),
      main: errorMain({ statusCode: e.statusCode, code: e.code, message: e.message, details: e.extra.details }),
      narrow: true
    }, e.statusCode)
  })
  app.setNotFoundHandler((request, reply) => {
    const e = errors.notFound(`There is no page at ${request.url.split('?')[0]}.`)
    return sendPage(request, reply, { title: pageTitle(errorTitle(e)), main: errorMain(e), narrow: true }, 404)
  })

  app.get('/style.css', { schema }, async (request, reply) => {
    const current = (request.query as { v?: string }).v === STYLESHEET_VERSION
    // A URL with the current hash never changes; any other may, once the stylesheet does.
    reply.header('cache-control', current ? 'public, max-age=31536000, immutable' : 'public, max-age=300')
    return reply.type('text/css; charset=utf-8').send(STYLESHEET_CSS)
  })

  app.get('/icon.svg', { schema }, async (_request, reply) =>
    reply.header('cache-control', 'public, max-age=86400').type('image/svg+xml').send(ICON_SVG))

  app.get('/', { schema, onRequest: requirePageUser }, async (request, reply) => {
    const owns = await app.apps.ownsAny(request.sessionUser!.sub)
    return reply.redirect(owns ? '/dashboard/apps' : '/dashboard/connections', 303)
  })

  // `return_to`: where the browser goes once signed in (the consent page it came from), a path of this service only.
  app.get('/sign-in', {
    schema: {
      ...schema,
      querystring: Type.Object({ token: Type.Optional(Type.String()), return_to: Type.Optional(Type.String()) })
    }
  }, async (request, reply) => {
    const { token, return_to: returnTo } = request.query
    if (token === undefined) {
      const user = sessionOf(request)
      return sendPage(request, reply, { title: pageTitle('Sign in'), main: signInMain(user?.sub), narrow: true })
    }
    const user = await app.signInLinks.redeem(token)
    reply.setCookie(SESSION_COOKIE, app.userSessions.sign(user, SESSION_TTL_SECONDS), {
      path: '/', httpOnly: true, sameSite: 'lax', secure, maxAge: SESSION_TTL_SECONDS
    })
    return reply.redirect(returnPath(returnTo, ownOrigin) ?? '/dashboard', 303)
  })

  app.post('/sign-out', { schema, ...action }, async (_request, reply) => {
    reply.clearCookie(SESSION_COOKIE, { path: '/', httpOnly: true, sameSite: 'lax', secure })
    reply.clearCookie(CSRF_FIELD, { path: '/dashboard', httpOnly: true, sameSite: 'strict', secure })
    return reply.redirect(SIGN_IN_PATH, 303)
  })

  const catalog = eventCatalog()
  app.get('/event-types', { schema, onRequest: requirePageUser }, async (request, reply) =>
    sendPage(request, reply, {
      title: pageTitle('Event types'),
      current: 'event-types',
      main: eventTypesMain(catalog.event_types)
    }))

  await app.register(developerPages, { kit, action })
  await app.register(connectionPages, { kit, action })
}

export default dashboard
