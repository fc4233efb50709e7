import formbody from '@fastify/formbody'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyRequest } from 'fastify'
import { errors } from '../../plugins/errors.js'
import { errorResponses } from '../../schemas/errors.js'
import { AuthorizeDecision, AuthorizeQuery, RevokeRequest, TokenRequest, TokenResponse } from '../../schemas/oauth.js'
import { consentHeaders, renderConsent } from './consent-page.js'

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
  const ownOrigin = new URL(app.config.publicBaseUrl).origin
  const tags = ['oauth']

  app.get(
    '/oauth/authorize',
    {
      onRequest: app.userSessions.requireUser,
      schema: {
        tags,
        summary: 'Consent page (browser, signed-in user)',
        querystring: AuthorizeQuery,
        response: {
          200: { type: 'string', description: 'HTML consent page' },
          302: { type: 'null', description: 'Back to redirect_uri with an error' },
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

  app.post(
    '/oauth/token',
    {
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
          return app.oauth.refresh(client, body.refresh_token, reply.elapsedTime)
        default:
          throw errors.oauthUnsupportedGrantType()
      }
    }
  )

  app.post(
    '/oauth/revoke',
    {
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

  app.get(
    '/.well-known/jwks.json',
    {
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
