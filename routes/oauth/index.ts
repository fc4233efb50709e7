import formbody from '@fastify/formbody'
import rateLimit from '@fastify/rate-limit'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { anyOrigin, preflight } from '../../lib/open-cors.js'
import type { App } from '../../plugins/apps.js'
import { ApiError, errors, wantsHtml } from '../../plugins/errors.js'
import { errorResponses } from '../../schemas/errors.js'
import {
  AuthorizeDecision, AuthorizeQuery, RegistrationRequest, RegistrationResponse, RevokeRequest, TokenRequest,
  TokenResponse
} from '../../schemas/oauth.js'
import { consentHeaders, renderConsent, renderErrorPage } from './consent-page.js'

const GRANT_TYPES = ['authorization_code', 'refresh_token']

/** RFC 7591 3.2.1: the client as registered. */
function registered (a: App, authMethod: string, clientSecret: string | undefined) {
  return {
    client_id: a.clientId,
    ...(clientSecret === undefined ? {} : { client_secret: clientSecret, client_secret_expires_at: 0 }),
    client_id_issued_at: Math.floor(a.createdAt.getTime() / 1000),
    client_name: a.name,
    ...(a.websiteUrl === null ? {} : { client_uri: a.websiteUrl }),
    redirect_uris: a.redirectUris,
    token_endpoint_auth_method: authMethod as 'none',
    grant_types: GRANT_TYPES,
    response_types: ['code'],
    scope: a.scopes.join(' ')
  }
}

/**
 * A browser's cross-site form post carries the user's cookie; refuse it (CSRF). Clients that send the session
 * in the Authorization header are not exposed: browsers never add that header across sites.
 */
function refuseCrossSite (request: FastifyRequest, ownOrigin: string): void {
  if (request.headers.authorization) return
  const site = request.headers['sec-fetch-site']
  const origin = request.headers.origin
  // The browser's own verdict when it gives one; otherwise the Origin header (older browsers).
  const crossSite =
    site !== undefined ? site !== 'same-origin' && site !== 'none' : origin !== undefined && origin !== ownOrigin
  if (crossSite) throw errors.crossSiteRequest()
}

/** The OAuth endpoints (docs/rules.md#oauth-install-flow): consent, token, revocation, and the signing keys. */
const oauth: FastifyPluginAsyncTypebox = async app => {
  await app.register(formbody)
  const { publicBaseUrl, loginUrl, registrationRateLimit } = app.config
  const ownOrigin = new URL(publicBaseUrl).origin
  const tags = ['oauth']

  /**
   * The consent page needs a signed-in user. A browser without a session goes to the accounting system's sign-in
   * page when LOGIN_URL is set, with a `return_to` that brings it back here; otherwise it gets a page that says so.
   */
  async function requireUserOrSignIn (request: FastifyRequest, reply: FastifyReply): Promise<void> {
    try {
      request.sessionUser = app.userSessions.authenticate(request)
    } catch (err) {
      if (!(loginUrl && err instanceof ApiError && err.statusCode === 401 && wantsHtml(request))) throw err
      const to = new URL(loginUrl)
      to.searchParams.set('return_to', `${publicBaseUrl}${request.url}`)
      return reply.redirect(to.toString(), 302)
    }
  }
  // The pages' errors are pages too, for the person in front of them; programs still get JSON.
  const htmlErrors = (e: ApiError) => renderErrorPage(e)

  app.get(
    '/oauth/authorize',
    {
      onRequest: requireUserOrSignIn,
      config: { htmlErrors },
      schema: {
        tags,
        summary: 'Consent page (browser, signed-in user)',
        querystring: AuthorizeQuery,
        response: {
          200: { type: 'string', description: 'HTML consent page' },
          302: { type: 'null', description: 'Back to redirect_uri with an error, or to LOGIN_URL to sign in' },
          ...errorResponses(400, 401, 403, 503)
        }
      }
    },
    async (request, reply) => {
      const outcome = await app.oauth.authorize(request.query, request.sessionUser!)
      if ('redirect' in outcome) return reply.redirect(outcome.redirect, 302)
      return reply.headers(consentHeaders(outcome.consent)).send(renderConsent(outcome.consent, request.sessionUser!))
    }
  )

  app.post(
    '/oauth/authorize',
    {
      onRequest: app.userSessions.requireUser,
      config: { htmlErrors },
      schema: {
        tags,
        summary: "The user's decision (form or JSON)",
        body: AuthorizeDecision,
        response: {
          302: { type: 'null', description: 'To redirect_uri with code and state, or error=access_denied' },
          ...errorResponses(400, 401, 403, 413, 415, 503)
        }
      }
    },
    async (request, reply) => {
      refuseCrossSite(request, ownOrigin)
      const { decision, ...params } = request.body
      return reply.redirect(await app.oauth.decide(params, request.sessionUser!, decision === 'allow'), 302)
    }
  )

  preflight(app, '/oauth/token', 'POST')
  app.post(
    '/oauth/token',
    {
      onSend: anyOrigin,
      config: { oauthErrors: true },
      schema: {
        tags,
        summary: 'Exchange a code, or rotate a refresh token',
        security: [{ clientCredentials: [] }],
        body: TokenRequest,
        response: { 200: TokenResponse, ...errorResponses(400, 401, 413, 415, 503) }
      }
    },
    async (request, reply) => {
      const client = await app.clientAuth.authenticate(request)
      const body = request.body
      reply.cacheControl('no-store').header('pragma', 'no-cache')
      if (!body.grant_type) throw errors.oauthInvalidRequest('grant_type is required.')
      switch (body.grant_type) {
        case 'authorization_code':
          return app.oauth.exchangeCode(client, body)
        case 'refresh_token':
          return app.oauth.refresh(client, body, reply.elapsedTime)
        default:
          throw errors.oauthUnsupportedGrantType()
      }
    }
  )

  preflight(app, '/oauth/revoke', 'POST')
  app.post(
    '/oauth/revoke',
    {
      onSend: anyOrigin,
      config: { oauthErrors: true },
      schema: {
        tags,
        summary: 'Revoke a refresh token (RFC 7009)',
        security: [{ clientCredentials: [] }],
        body: RevokeRequest,
        response: {
          200: { type: 'null', description: 'Always, whether the token was known or not' },
          ...errorResponses(400, 401, 413, 415, 503)
        }
      }
    },
    async (request, reply) => {
      const client = await app.clientAuth.authenticate(request)
      await app.oauth.revoke(client, request.body.token)
      return reply.code(200).send()
    }
  )

  // Dynamic Client Registration (RFC 7591): what MCP clients do when they meet a server for the first time.
  await app.register(rateLimit, {
    global: false,
    redis: app.redis ?? undefined,
    nameSpace: 'mg-register-rl-',
    skipOnError: true,
    allowList: () => app.redisBypassed()
  })
  const perIp = app.createRateLimit({
    max: registrationRateLimit,
    timeWindow: 60_000,
    keyGenerator: r => `ip:${r.ip}`
  })
  preflight(app, '/oauth/register', 'POST')
  app.post(
    '/oauth/register',
    {
      onSend: anyOrigin,
      config: { oauthErrors: 'invalid_client_metadata' },
      async onRequest (request) {
        const verdict = await perIp(request)
        if (!verdict.isAllowed && verdict.isExceeded) throw errors.rateLimited(verdict.ttlInSeconds)
      },
      schema: {
        tags,
        summary: 'Register a client (RFC 7591)',
        body: RegistrationRequest,
        response: {
          201: RegistrationResponse,
          200: { ...RegistrationResponse, description: 'An identical public client was registered before: that one' },
          ...errorResponses(400, 413, 415, 429, 503)
        }
      }
    },
    async (request, reply) => {
      const b = request.body
      if (b.grant_types && (b.grant_types.some(g => !GRANT_TYPES.includes(g)) ||
          !b.grant_types.includes('authorization_code'))) {
        throw errors.invalidClientMetadata(
          'grant_types may hold authorization_code and refresh_token, and must hold authorization_code.')
      }
      if (b.response_types?.some(r => r !== 'code')) {
        throw errors.invalidClientMetadata('response_types must be ["code"].')
      }
      const authMethod = b.token_endpoint_auth_method ?? 'client_secret_basic'
      const { app: client, clientSecret, existing } = await app.apps.registerDynamic({
        name: b.client_name,
        websiteUrl: b.client_uri,
        redirectUris: b.redirect_uris,
        scope: b.scope,
        authMethod
      })
      reply.cacheControl('no-store').header('pragma', 'no-cache')
      return reply.code(existing ? 200 : 201).send(registered(client, authMethod, clientSecret))
    }
  )

  preflight(app, '/.well-known/jwks.json', 'GET')
  app.get(
    '/.well-known/jwks.json',
    {
      onSend: anyOrigin,
      schema: {
        tags,
        summary: 'Public keys that verify access tokens',
        response: { 200: { type: 'object', additionalProperties: true } }
      }
    },
    async (_request, reply) => {
      reply.cacheControl('public').cacheControl('max-age', 300)
      return app.accessTokens.jwks
    }
  )
}

export default oauth
