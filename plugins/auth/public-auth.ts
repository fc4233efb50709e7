import fp from 'fastify-plugin'
import type { FastifyRequest } from 'fastify'
import { errors } from '../errors.js'
import type { AccessState } from './access-state.js'

/** The install a request acts for, as the database says it is right now (scopes included, not the token's). */
export type Principal = Omit<AccessState, 'status' | 'apiKeyEnabled' | 'keyDisabledAt'>

declare module 'fastify' {
  interface FastifyInstance {
    publicAuth: {
      /** Rows 1 to 5 of the public pipeline (contract 3.4) for an Authorization header value. */
      authenticate(authorization: string | undefined): Promise<Principal>
    }
  }
  interface FastifyRequest {
    principal: Principal | null
  }
}

const BEARER_SCHEME = /^Bearer(?:[ \t]+(.*))?$/i
// RFC 6750 b64token; a JWT always fits it.
const B64TOKEN = /^[A-Za-z0-9_.~+/-]+=*$/

/** Authenticates marketplace access tokens. Install and key state always come from the database. */
export default fp(async (app) => {
  app.decorateRequest('principal', null)
  app.decorate('publicAuth', {
    async authenticate (authorization: string | undefined): Promise<Principal> {
      // Row 1 is a missing Bearer credential; a Bearer credential that is malformed is row 2.
      const token = authorization?.match(BEARER_SCHEME)?.[1]?.trim()
      if (!token) throw errors.missingBearer()
      if (!B64TOKEN.test(token)) throw errors.invalidAccessToken()
      const claims = app.accessTokens.verify(token)
      const state = await app.accessState.get(claims.sub)
      if (!state || state.clientId !== claims.client_id || state.orgRefId !== claims.org_ref_id ||
          state.entityRefId !== claims.entity_ref_id) {
        throw errors.invalidAccessToken()
      }
      if (!state.apiKeyEnabled || (state.keyDisabledAt !== null && claims.issuedAtMs <= state.keyDisabledAt)) {
        throw errors.apiKeyDisabled()
      }
      if (state.status !== 'active') throw errors.installNotActive()
      const { status: _status, apiKeyEnabled: _enabled, keyDisabledAt: _disabledAt, ...principal } = state
      return principal
    }
  })
}, { name: 'public-auth', dependencies: ['access-tokens', 'access-state'] })

/**
 * Registered inside a route context: every route declared after it there needs a marketplace access token.
 * The hook is attached per route (onRoute) so that it runs before the rate limit, tenant guard and scope hooks
 * that are attached the same way after it.
 */
export const requireAccessToken = fp(async (app) => {
  const hook = async (request: FastifyRequest): Promise<void> => {
    request.principal = await app.publicAuth.authenticate(request.headers.authorization)
  }
  app.addHook('onRoute', route => {
    route.onRequest = [hook, ...[route.onRequest ?? []].flat()]
  })
}, { dependencies: ['public-auth'] })
