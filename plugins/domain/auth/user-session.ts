import fp from 'fastify-plugin'
import fastifyJwt, { type JWT } from '@fastify/jwt'
import { createSigner } from 'fast-jwt'
import type { FastifyRequest } from 'fastify'
import { errors } from '../../infrastructure/errors.js'
import { ACCESS_TOKEN_AUDIENCE, ACCESS_TOKEN_TYPE } from './tokens.js'

export const USER_SESSION_AUDIENCE = 'user_session'
export const SESSION_COOKIE = 'session'

/** A signed-in user of the accounting system, as its session JWT says. */
export interface SessionUser {
  sub: string
  orgRefId: string
  entityRefIds: string[]
}

declare module 'fastify' {
  interface FastifyInstance {
    userSessions: {
      sign(user: SessionUser, ttlSeconds?: number): string
      /** The user behind the request's session cookie or Bearer header; throws the catalog error. */
      authenticate(request: FastifyRequest): SessionUser
      /** onRequest hook for a route context that needs a signed-in user: sets `request.sessionUser`. */
      requireUser(request: FastifyRequest): Promise<void>
    }
  }
  interface FastifyRequest {
    sessionUser: SessionUser | null
  }
}

function looksLikeMarketplaceToken (jwt: JWT, token: string): boolean {
  try {
    const decoded = jwt.decode<{ header: { typ?: string }, payload: { aud?: unknown } }>(token, { complete: true })
    if (!decoded) return false
    const { header, payload } = decoded
    const aud = Array.isArray(payload.aud) ? payload.aud : [payload.aud]
    return header.typ === ACCESS_TOKEN_TYPE || aud.includes(ACCESS_TOKEN_AUDIENCE)
  } catch {
    return false
  }
}

/** Signs a user session token the way the accounting system issues them (development and tests). */
export function signUserSession (secret: string, user: SessionUser, ttlSeconds = 12 * 3600): string {
  const sign = createSigner({
    key: secret,
    algorithm: 'HS256',
    aud: USER_SESSION_AUDIENCE,
    expiresIn: ttlSeconds * 1000
  })
  return sign({ sub: user.sub, org_ref_id: user.orgRefId, entity_ref_ids: user.entityRefIds })
}

/** User session JWTs issued by the accounting system: HS256 only, `aud` user_session. */
export default fp(
  async app => {
    await app.register(fastifyJwt, {
      namespace: 'user',
      decoratorName: 'jwtUser',
      secret: app.config.userSessionSecret,
      // A session without `exp` would never end: the accounting system must always say when it does.
      verify: {
        algorithms: ['HS256'],
        allowedAud: USER_SESSION_AUDIENCE,
        requiredClaims: ['sub', 'aud', 'exp'],
        cache: 1_000
      }
    })
    const jwt = (app.jwt as unknown as { user: JWT }).user
    app.decorateRequest('sessionUser', null)

    app.decorate('userSessions', {
      sign: (user: SessionUser, ttlSeconds?: number) => signUserSession(app.config.userSessionSecret, user, ttlSeconds),
      authenticate (request: FastifyRequest): SessionUser {
        const auth = request.headers.authorization
        const bearer = auth && /^bearer\s+/i.test(auth) ? auth.replace(/^bearer\s+/i, '').trim() : undefined
        // @fastify/cookie (app.ts): the first `session` cookie, percent-decoded; one whose encoding is broken comes as
        // sent, an invalid session rather than a failure.
        const token = bearer || request.cookies[SESSION_COOKIE]
        if (!token) throw errors.missingUserSession()
        if (looksLikeMarketplaceToken(jwt, token)) throw errors.marketplaceTokenOnUserRoute()
        let claims: { sub?: unknown, org_ref_id?: unknown, entity_ref_ids?: unknown }
        try {
          claims = jwt.verify(token)
        } catch {
          throw errors.invalidUserSession()
        }
        const { sub, org_ref_id: org, entity_ref_ids: entities } = claims
        if (
          typeof sub !== 'string' ||
          typeof org !== 'string' ||
          !Array.isArray(entities) ||
          !entities.every(e => typeof e === 'string')
        ) {
          throw errors.invalidUserSession()
        }
        return { sub, orgRefId: org, entityRefIds: entities }
      },
      async requireUser (request: FastifyRequest) {
        request.sessionUser = app.userSessions.authenticate(request)
      }
    })
  },
  { name: 'user-sessions', dependencies: ['config', '@fastify/cookie'] }
)
