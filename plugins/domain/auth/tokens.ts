import { createHash, createPublicKey } from 'node:crypto'
import fp from 'fastify-plugin'
import fastifyJwt, { type JWT } from '@fastify/jwt'
import { uuidv7, uuidv7Time } from '../../../lib/crypto.js'
import { errors } from '../../infrastructure/errors.js'

export const ACCESS_TOKEN_AUDIENCE = 'marketplace_app'
export const ACCESS_TOKEN_TYPE = 'at+jwt'
export const ACCESS_TOKEN_TTL_S = 3600
const MAX_CLOCK_SKEW_MS = 60_000
/** Verified tokens remembered; at about 1 KB a token, 10 MB at most. */
const VERIFIED_CACHE_SIZE = 10_000
/** Of a token's RS256 signature (342 characters, 2,048 random-looking bits), enough to tell tokens apart. */
const CACHE_KEY_CHARS = 32
// RFC 6750 b64token; a JWT always fits it.
const B64TOKEN = /^[A-Za-z0-9_.~+/-]+=*$/

/** Claims of a marketplace access token (RFC 9068 profile; the rules are in docs/rules.md#access-tokens). */
export interface AccessClaims {
  iss: string
  /** `marketplace_app`, and the MCP endpoint's URL when the token was requested for it (RFC 8707). */
  aud: string | string[]
  sub: string
  client_id: string
  org_ref_id: string
  entity_ref_id: string
  scope: string
  iat: number
  exp: number
  /** A UUIDv7 whose timestamp is the issue time in milliseconds, on the database clock. */
  jti: string
}

/** Verified claims, plus the precise issue time that `iat` (whole seconds) cannot give. */
export type VerifiedClaims = AccessClaims & { issuedAtMs: number }

/** A verified token as the cache keeps it: its claims, and which surfaces its audience admits. */
interface Verified {
  token: string
  claims: Readonly<VerifiedClaims>
  forPublic: boolean
  forMcp: boolean
}

export interface TokenSubject {
  installId: string
  clientId: string
  orgRefId: string
  entityRefId: string
  scopes: string[]
}

declare module 'fastify' {
  interface FastifyInstance {
    accessTokens: {
      readonly kid: string
      readonly jwks: { keys: Array<{ kty: string, kid: string } & Record<string, unknown>> }
      /**
       * `issuedAtMs` comes from the database clock, the same clock that stamps a key disable, so that
       * "issued before the last disable" is decided without clock skew between instances.
       */
      /** `resource`: the RFC 8707 resource the token is for; the MCP endpoint's URL joins the audience. */
      issue(subject: TokenSubject, issuedAtMs: number, resource?: string | null): string
      /** Steps 2 and 3 of docs/rules.md#public-request-pipeline: throws the catalog error, or returns the claims. */
      verify(token: string, surface?: TokenSurface): VerifiedClaims
    }
  }
}

/** RFC 7638 JWK thumbprint: the `kid` follows the key, so a new key gets a new kid without configuration. */
function thumbprint (jwk: { e?: string, kty?: string, n?: string }): string {
  return createHash('sha256')
    .update(JSON.stringify({ e: jwk.e, kty: jwk.kty, n: jwk.n }))
    .digest('base64url')
}

const isString = (v: unknown): v is string => typeof v === 'string' && v.length > 0

/** The resources (RFC 8707) this server issues tokens for: the public API and the MCP endpoint. */
export function knownResources (config: { publicBaseUrl: string, mcpBaseUrl: string }) {
  return { publicApi: `${config.publicBaseUrl}/public/v1`, mcp: `${config.mcpBaseUrl}/mcp` }
}

/** Where a token may be used: `/public/v1` takes `marketplace_app`; `/mcp` also its own URL as audience. */
export type TokenSurface = 'public' | 'mcp'

/** Signs and verifies marketplace access tokens: RS256 only, `typ` at+jwt, pinned `aud` and `iss`. */
export default fp(
  async app => {
    const { tokenSigningKey, publicBaseUrl, accessTokenMaxLifetime } = app.config
    const { clock } = app
    const mcpResource = knownResources(app.config).mcp
    const publicJwk = createPublicKey(tokenSigningKey).export({ format: 'jwk' })
    const kid = thumbprint(publicJwk)
    const publicPem = createPublicKey(tokenSigningKey).export({ format: 'pem', type: 'spki' }).toString()

    await app.register(fastifyJwt, {
      namespace: 'marketplace',
      secret: { private: tokenSigningKey, public: publicPem },
      sign: {
        algorithm: 'RS256',
        kid,
        header: { alg: 'RS256', typ: ACCESS_TOKEN_TYPE },
        iss: publicBaseUrl
      },
      verify: {
        algorithms: ['RS256'],
        // Any of these; which one a surface needs is checked in verify() below.
        allowedAud: [ACCESS_TOKEN_AUDIENCE, mcpResource],
        allowedIss: publicBaseUrl,
        requiredClaims: ['iss', 'aud', 'sub', 'exp', 'iat'],
        // Time is checked below, on the app's clock alone (fast-jwt would read the system clock): expiry after
        // audience and issuer, so that the pipeline's rows keep their order.
        ignoreExpiration: true,
        ignoreNotBefore: true,
        complete: true
      }
    })
    const jwt = (app.jwt as unknown as { marketplace: JWT }).marketplace
    // RS256 verification dominates a cold request's cost, so a verified token is remembered: found by the last
    // characters of its signature, then compared whole. (@fastify/jwt's own cache hashes every token with SHA-256
    // first, and a Map keyed by the whole token hashes all its 800 or so characters on every lookup: BENCHMARKS.md.)
    // Oldest first out; the clock and the surface are checked again on every use.
    const verified = new Map<string, Verified>()

    app.decorate('accessTokens', {
      kid,
      jwks: { keys: [{ ...publicJwk, kty: 'RSA', kid, use: 'sig', alg: 'RS256' }] },
      issue (s: TokenSubject, issuedAtMs: number, resource?: string | null) {
        const iat = Math.floor(issuedAtMs / 1000)
        return jwt.sign({
          aud: resource === mcpResource ? [ACCESS_TOKEN_AUDIENCE, mcpResource] : ACCESS_TOKEN_AUDIENCE,
          sub: s.installId,
          client_id: s.clientId,
          org_ref_id: s.orgRefId,
          entity_ref_id: s.entityRefId,
          scope: s.scopes.join(' '),
          iat,
          exp: iat + ACCESS_TOKEN_TTL_S,
          jti: uuidv7(issuedAtMs)
        })
      },
      verify (token: string, surface: TokenSurface = 'public'): VerifiedClaims {
        const key = token.slice(-CACHE_KEY_CHARS)
        let entry = verified.get(key)
        if (entry?.token !== token) {
          entry = verifySignature(token)
          if (!verified.has(key) && verified.size >= VERIFIED_CACHE_SIZE) verified.delete(verified.keys().next().value!)
          verified.set(key, entry)
        }
        // Checked on every use: the surface asked for, and the time (the app's clock).
        if (surface === 'mcp' ? !entry.forMcp : !entry.forPublic) {
          throw surface === 'mcp' ? errors.accessTokenNotForMcp(mcpResource) : errors.invalidAccessToken()
        }
        if (entry.claims.exp * 1000 <= clock.now()) throw errors.accessTokenExpired()
        return entry.claims
      }
    })

    /** Everything about a token that does not change with time or surface: signature, header, claims. */
    function verifySignature (token: string): Verified {
      if (!B64TOKEN.test(token)) throw errors.invalidAccessToken()
      let decoded: { header: { typ?: unknown, kid?: unknown }, payload: Record<string, unknown> }
      try {
        decoded = jwt.verify(token)
      } catch {
        throw errors.invalidAccessToken()
      }
      const { header, payload: c } = decoded
      const aud = Array.isArray(c.aud) ? c.aud : [c.aud]
      if (
        header.typ !== ACCESS_TOKEN_TYPE ||
        header.kid !== kid ||
        !isString(c.sub) ||
        !isString(c.client_id) ||
        !isString(c.org_ref_id) ||
        !isString(c.entity_ref_id) ||
        typeof c.iat !== 'number' ||
        typeof c.exp !== 'number' ||
        // A ceiling on the lifetime, so that no token, however it came to be signed, lives for long.
        c.exp - c.iat > accessTokenMaxLifetime
      ) {
        throw errors.invalidAccessToken()
      }
      const issuedAtMs = typeof c.jti === 'string' ? uuidv7Time(c.jti) : undefined
      const now = clock.now()
      // A token "issued" in the future was not issued by this service's clock.
      if (issuedAtMs === undefined || c.iat * 1000 > now + MAX_CLOCK_SKEW_MS) throw errors.invalidAccessToken()
      // RFC 7519 4.1.5, as fast-jwt checks it: a number of seconds, inclusive. The service never sets it.
      if ('nbf' in c && (typeof c.nbf !== 'number' || c.nbf * 1000 > now)) throw errors.invalidAccessToken()
      // The MCP endpoint takes only tokens issued for it (its URL in the audience: RFC 8707 `resource`); such a
      // token also carries the API's audience, so one token serves an app on both surfaces.
      return {
        token,
        claims: Object.freeze({ ...(c as unknown as AccessClaims), issuedAtMs }),
        forPublic: aud.includes(ACCESS_TOKEN_AUDIENCE),
        forMcp: aud.includes(mcpResource)
      }
    }
  },
  { name: 'access-tokens', dependencies: ['config'] }
)
