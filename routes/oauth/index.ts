import formbody from '@fastify/formbody'
import rateLimit from '@fastify/rate-limit'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { anyOrigin, preflight } from '../../lib/open-cors.js'
import { isCrossSite } from '../../lib/same-origin.js'
import type { App } from '../../plugins/domain/common/clients.js'
import { returnPath } from '../../plugins/domain/auth/sign-in-links.js'
import { knownResources } from '../../plugins/domain/auth/tokens.js'
import { ApiError, errors, wantsHtml } from '../../plugins/infrastructure/errors.js'
import { BODY_ERRORS, errorResponses, SERVICE_ERRORS } from '../../schemas/error-responses.js'
import { SAMPLE } from '../../schemas/examples.js'
import { counters } from '../../plugins/infrastructure/rate-limit.js'
import {
  AuthorizeDecision, AuthorizeQuery, Jwks, RegistrationRequest, RegistrationResponse, RevokeRequest, TokenRequest,
  TokenResponse
} from '../../schemas/oauth.js'
import { consentHeaders, renderConsent, renderErrorPage, type SignIn } from './consent-page.js'

const GRANT_TYPES = ['authorization_code', 'refresh_token']
/** The development user: the one a development start prints a dashboard sign-in link for. */
const DEVELOPMENT_SUB = 'dev-user'
/** Addresses of this machine: the development sign-in is offered to a browser on it, never to one elsewhere. */
const LOOPBACK_IP = /^(127\.|::1$|::ffff:127\.)/

/** RFC 6749 endpoints take forms (what OAuth libraries send); JSON is accepted too. */
const FORM_OR_JSON = ['application/x-www-form-urlencoded', 'application/json']
/** The consent page's own answers, for the document: a signed-in user is needed, of the right organisation. */
const CONSENT_ERRORS = [
  errors.missingUserSession(),
  errors.invalidUserSession(),
  errors.notMemberOfTenant(),
  errors.oauthInvalidRequest('Unknown client_id.'),
  errors.oauthInvalidRequest('redirect_uri is not registered for this app.'),
  errors.clientMetadataRefused('The client metadata document is at a private or reserved address.'),
  ...SERVICE_ERRORS
]
/** Client authentication at the token and revocation endpoints. */
const CLIENT_ERRORS = [
  errors.oauthInvalidClient('Client authentication failed.', true),
  errors.oauthInvalidClient("The app's API key is disabled."),
  errors.oauthInvalidRequest('Use one client authentication method, not two.'),
  ...BODY_ERRORS.filter(e => e.statusCode !== 400),
  ...SERVICE_ERRORS
]
const redirect = (description: string) => ({
  type: 'null',
  description,
  headers: { location: { type: 'string', format: 'uri', description: 'Where the browser goes next.' } }
})

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
  if (isCrossSite(request.headers, ownOrigin)) throw errors.crossSiteRequest()
}

/** The OAuth endpoints (docs/rules.md#oauth-install-flow): consent, token, revocation, and the signing keys. */
const oauth: FastifyPluginAsyncTypebox = async app => {
  await app.register(formbody)
  const { publicBaseUrl, loginUrl, registrationRateLimit, nodeEnv } = app.config
  const resources = knownResources(app.config)
  const ownOrigin = new URL(publicBaseUrl).origin
  const tags = ['oauth']

  /** LOGIN_URL with `return_to`, the absolute URL of `path` (an authorization request), when there is one. */
  function loginHref (login: string, path: string | undefined): string {
    const to = new URL(login)
    if (path !== undefined) to.searchParams.set('return_to', `${publicBaseUrl}${path}`)
    return to.toString()
  }

  /**
   * The consent page needs a signed-in user. A browser without a session goes to the accounting system's sign-in
   * page when LOGIN_URL is set, with a `return_to` that brings it back here; otherwise it gets a page that says how
   * to sign in (signInFor).
   */
  async function requireUserOrSignIn (request: FastifyRequest, reply: FastifyReply): Promise<void> {
    try {
      request.sessionUser = app.userSessions.authenticate(request)
    } catch (err) {
      if (!(loginUrl && err instanceof ApiError && err.statusCode === 401 && wantsHtml(request))) throw err
      return reply.redirect(loginHref(loginUrl, request.url), 302)
    }
  }

  /**
   * The authorization request a sign-in comes back to, as a path: this one; for the form's post, the consent page it
   * was posted from (its Referer, which the page sends to its own origin).
   */
  function authorizationRequestOf (request: FastifyRequest): string | undefined {
    if (request.method === 'GET') return request.url
    const page = returnPath(request.headers.referer, ownOrigin)
    return page?.startsWith('/oauth/authorize?') ? page : undefined
  }

  /**
   * Where the 401 page sends a visitor to sign in, and back to the authorization request: LOGIN_URL; else, outside
   * production, a one-time sign-in link of the development user, in the organisation and entity the request names
   * (by default the tenant of the reference page's examples, so that "Try it out" works as prefilled there).
   * Production without LOGIN_URL has nowhere to send them; nor has a development instance reached from another
   * machine: the link signs anyone in, so it is offered only to a browser on the machine the service runs on.
   */
  function signInFor (request: FastifyRequest): SignIn | undefined {
    const back = authorizationRequestOf(request)
    if (loginUrl) return { kind: 'accounting-system', href: loginHref(loginUrl, back) }
    if (nodeEnv === 'production' || !LOOPBACK_IP.test(request.ip)) return undefined
    const named = new URL(back ?? '/', ownOrigin).searchParams
    const user = {
      sub: DEVELOPMENT_SUB,
      orgRefId: named.get('org_ref_id') || SAMPLE.orgId,
      entityRefIds: [named.get('entity_ref_id') || SAMPLE.entityId]
    }
    return { kind: 'development', user, href: app.signInLinks.issue(user, publicBaseUrl, back) }
  }

  // The pages' errors are pages too, for the person in front of them; programs still get JSON.
  const htmlErrors = (e: ApiError, request: FastifyRequest) =>
    renderErrorPage(e, e.statusCode === 401 ? signInFor(request) : undefined)

  app.get(
    '/oauth/authorize',
    {
      onRequest: requireUserOrSignIn,
      config: { htmlErrors },
      schema: {
        tags,
        operationId: 'openConsentPage',
        summary: 'The consent page',
        description: 'Where an app sends the user to install it: an HTML page (for a signed-in user of the ' +
          'accounting system) that names the app, its publisher and the scopes in plain words, lets the user ' +
          'pick the entity, and posts the decision. Errors the app cannot be trusted with (unknown client, ' +
          'unregistered redirect_uri) are shown on the page; the others go back to redirect_uri as ' +
          '`error=...` (RFC 6749 4.1.2.1). A browser gets every error as a page; other clients get JSON.',
        security: [{ userSession: [] }, { sessionCookie: [] }],
        querystring: AuthorizeQuery,
        response: {
          200: {
            description: 'The consent page.',
            content: {
              'text/html': {
                schema: { type: 'string' },
                example: '<!doctype html><html lang="en"><title>Install Acme Invoicing</title>…' +
                  '<form method="post" action="/oauth/authorize">…</form></html>'
              }
            }
          },
          302: redirect('Back to redirect_uri with `error` and `state` (invalid_scope, ' +
            'unsupported_response_type, invalid_request, invalid_target), or to LOGIN_URL to sign in.'),
          ...errorResponses(...CONSENT_ERRORS)
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
        operationId: 'decideConsent',
        summary: "Post the user's decision",
        description: 'What the consent page posts: the authorization request again, the entity, and `decision`. ' +
          'Allow redirects to redirect_uri with a one-time `code` (60 s) and `state`; Deny with ' +
          '`error=access_denied`. Cross-site form posts are refused.',
        security: [{ userSession: [] }, { sessionCookie: [] }],
        consumes: FORM_OR_JSON,
        body: AuthorizeDecision,
        response: {
          302: redirect('To redirect_uri with `code`, `state` and `iss`, or with `error=access_denied`.'),
          ...errorResponses(
            ...CONSENT_ERRORS,
            errors.oauthInvalidRequest('Choose an entity to install into.'),
            errors.crossSiteRequest(),
            ...BODY_ERRORS
          )
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
        operationId: 'createToken',
        summary: 'Exchange a code, or rotate a refresh token',
        description: '`authorization_code` (with the PKCE `code_verifier`) gives the install\'s first access token ' +
          '(1 hour) and refresh token; `refresh_token` gives new ones, and the old refresh token stops working. ' +
          'Confidential clients authenticate with HTTP Basic (or both credentials in the body); public clients ' +
          'send only `client_id`.',
        security: [{ clientCredentials: [] }, {}],
        consumes: FORM_OR_JSON,
        body: TokenRequest,
        response: {
          200: TokenResponse,
          ...errorResponses(
            errors.oauthInvalidGrant('code_verifier does not match the code_challenge.'),
            errors.oauthInvalidGrant('The refresh token is invalid, expired or revoked.'),
            errors.oauthInvalidRequest('code, redirect_uri and code_verifier are required.'),
            errors.oauthUnsupportedGrantType(),
            errors.oauthInvalidTarget(`resource must be ${resources.mcp} or ${resources.publicApi}.`),
            ...CLIENT_ERRORS
          )
        }
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
          return app.oauth.refresh(client, body, () => reply.elapsedTime)
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
        operationId: 'revokeToken',
        summary: 'Revoke a refresh token',
        description: 'RFC 7009: the refresh token stops working, and so does the install\'s grant through it. ' +
          'Answers 200 whether the token was known or not, so that it tells nothing about other tokens.',
        security: [{ clientCredentials: [] }, {}],
        consumes: FORM_OR_JSON,
        body: RevokeRequest,
        response: {
          200: { type: 'null', description: 'Revoked, or was not a token of this client.' },
          ...errorResponses(
            errors.oauthInvalidRequest('Request validation failed. body must have required property \'token\'.'),
            ...CLIENT_ERRORS
          )
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
    ...counters(app, 'mg-register-rl-'),
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
        operationId: 'registerClient',
        summary: 'Register a client',
        description: 'Dynamic Client Registration (RFC 7591), what MCP clients do when they first meet the ' +
          'service: the client becomes an app without an owner. Redirect URIs may be https, loopback http on any ' +
          'port, or a private scheme such as `cursor://`. Limited per IP address.',
        security: [],
        body: RegistrationRequest,
        response: {
          201: { ...RegistrationResponse, 'x-response-description': 'Registered: a new client.' },
          ...errorResponses(
            errors.registrationInvalidRedirectUri('"javascript:alert(1)": the javascript: scheme cannot receive a ' +
              'redirect.'),
            errors.invalidClientMetadata('response_types must be ["code"].'),
            errors.invalidClientMetadata('Unknown scope: payroll:read'),
            errors.rateLimited(42),
            ...BODY_ERRORS.filter(e => e.statusCode !== 400),
            ...SERVICE_ERRORS
          )
        }
      }
    },
    async (request, reply) => {
      const b = request.body
      // Grant types this server does not support (older VS Code asks for device_code too) are dropped, as RFC 7591
      // 3.2.1 allows, and the answer says what was registered; without authorization_code nothing can be.
      if (b.grant_types && !b.grant_types.includes('authorization_code')) {
        throw errors.invalidClientMetadata('grant_types must hold authorization_code.')
      }
      if (b.response_types?.some(r => r !== 'code')) {
        throw errors.invalidClientMetadata('response_types must be ["code"].')
      }
      const authMethod = b.token_endpoint_auth_method ?? 'client_secret_basic'
      const { app: client, clientSecret } = await app.apps.registerDynamic({
        name: b.client_name,
        websiteUrl: b.client_uri,
        redirectUris: b.redirect_uris,
        scope: b.scope,
        authMethod
      })
      reply.cacheControl('no-store').header('pragma', 'no-cache')
      return reply.code(201).send(registered(client, authMethod, clientSecret))
    }
  )

  preflight(app, '/.well-known/jwks.json', 'GET')
  app.get(
    '/.well-known/jwks.json',
    {
      onSend: anyOrigin,
      schema: {
        tags,
        operationId: 'getJwks',
        summary: 'Public keys that verify access tokens',
        description: 'The JSON Web Key Set of the access tokens\' RS256 signatures (by `kid`); cached 5 minutes.',
        security: [],
        response: { 200: Jwks }
      }
    },
    async (_request, reply) => {
      reply.cacheControl('public').cacheControl('max-age', 300)
      return app.accessTokens.jwks
    }
  )
}

export default oauth
