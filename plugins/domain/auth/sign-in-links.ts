import { randomUUID } from 'node:crypto'
import fp from 'fastify-plugin'
import { createSigner, createVerifier } from 'fast-jwt'
import { errors } from '../../infrastructure/errors.js'
import { createSignInLinkStore } from './sign-in-link-store.js'
import type { SessionUser } from './user-session.js'

/**
 * A sign-in link's token has an audience of its own: it is not a session, so neither the session cookie nor the
 * user routes accept it, and a session token is not a link.
 */
export const SIGN_IN_LINK_AUDIENCE = 'dashboard_sign_in'
export const SIGN_IN_LINK_TTL_SECONDS = 600
export const SIGN_IN_PATH = '/dashboard/sign-in'

declare module 'fastify' {
  interface FastifyInstance {
    signInLinks: {
      /**
       * A link for the user, valid SIGN_IN_LINK_TTL_SECONDS from now on `app.clock`; with `returnTo` (a path of the
       * service), the browser goes there once signed in rather than to the dashboard.
       */
      issue(user: SessionUser, baseUrl?: string, returnTo?: string): string
      /** The user a link signs in, once; the catalog's `signInLinkRefused` for anything else. */
      redeem(token: string): Promise<SessionUser>
    }
  }
}

/** The token of a dashboard sign-in link: HS256 with USER_SESSION_SECRET, a `jti` that makes it usable once. */
export function signSignInToken (secret: string, user: SessionUser, nowMs = Date.now()): string {
  const sign = createSigner({
    key: secret,
    algorithm: 'HS256',
    aud: SIGN_IN_LINK_AUDIENCE,
    jti: randomUUID(),
    expiresIn: SIGN_IN_LINK_TTL_SECONDS * 1000,
    clockTimestamp: nowMs
  })
  return sign({ sub: user.sub, org_ref_id: user.orgRefId, entity_ref_ids: user.entityRefIds })
}

/** `BASE/dashboard/sign-in?token=…[&return_to=…]`: what `marketplace-gateway dashboard-link` prints. */
export function signInLink (baseUrl: string, token: string, returnTo?: string): string {
  const url = new URL(SIGN_IN_PATH, baseUrl.endsWith('/') ? baseUrl : `${baseUrl}/`)
  url.searchParams.set('token', token)
  if (returnTo !== undefined) url.searchParams.set('return_to', returnTo)
  return url.toString()
}

/**
 * Where a signed-in browser may be sent by a link's `return_to`: a path (with its query) on the service's own
 * origin, given as a path or as an absolute URL of that origin; undefined for anything else, so that a link can
 * never send the browser to another site.
 */
export function returnPath (returnTo: string | undefined, ownOrigin: string): string | undefined {
  if (returnTo === undefined) return undefined
  let url: URL
  try {
    url = new URL(returnTo, ownOrigin)
  } catch {
    return undefined
  }
  // `//host` and `/\host` resolve to another origin; a path that still starts with `//` would be read as one by the
  // browser, so it is refused too.
  if (url.origin !== ownOrigin || url.pathname.startsWith('//')) return undefined
  return url.pathname + url.search
}

/** Dashboard sign-in links: signed here or by `dashboard-link`, redeemed once for a user session. */
export default fp(
  async app => {
    const secret = app.config.userSessionSecret
    const store = createSignInLinkStore(app.db)

    function verify (token: string): SessionUser & { jti: string, exp: number } {
      const verifier = createVerifier({
        key: secret,
        algorithms: ['HS256'],
        allowedAud: SIGN_IN_LINK_AUDIENCE,
        requiredClaims: ['sub', 'aud', 'exp', 'jti'],
        clockTimestamp: app.clock.now()
      })
      let claims: { sub?: unknown, org_ref_id?: unknown, entity_ref_ids?: unknown, jti?: unknown, exp?: unknown }
      try {
        claims = verifier(token)
      } catch {
        throw errors.signInLinkRefused()
      }
      const { sub, org_ref_id: org, entity_ref_ids: entities, jti, exp } = claims
      if (
        typeof sub !== 'string' || typeof org !== 'string' || typeof jti !== 'string' || typeof exp !== 'number' ||
        !Array.isArray(entities) || !entities.every(e => typeof e === 'string')
      ) {
        throw errors.signInLinkRefused()
      }
      return { sub, orgRefId: org, entityRefIds: entities, jti, exp }
    }

    app.decorate('signInLinks', {
      issue: (user: SessionUser, baseUrl = app.config.publicBaseUrl, returnTo?: string) =>
        signInLink(baseUrl, signSignInToken(secret, user, app.clock.now()), returnTo),
      async redeem (token: string): Promise<SessionUser> {
        const { jti, exp, ...user } = verify(token)
        await store.deleteExpired(new Date(app.clock.now()))
        if (!await store.markUsed(jti, new Date(exp * 1000))) throw errors.signInLinkRefused()
        return user
      }
    })
  },
  { name: 'sign-in-links', dependencies: ['config', 'db'] }
)
