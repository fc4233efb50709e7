import { createHmac, hkdfSync } from 'node:crypto'
import type { Static } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import type { Clock } from '../../../lib/clock.js'
import { pkceChallenge, randomToken, sha256 } from '../../../lib/crypto.js'
import { redirectUriMatches } from '../../../lib/redirect-uris.js'
import type { AuthorizeQuery, TokenResponse as TokenResponseSchema } from '../../../schemas/oauth.js'
import type { Db, Queryable } from '../../infrastructure/db/types.js'
import { ApiError, errors } from '../../infrastructure/errors.js'
import type { AppService } from '../apps/service.js'
import type { SessionUser } from '../auth/user-session.js'
import { ACCESS_TOKEN_TTL_S, knownResources } from '../auth/tokens.js'
import type { InstallService } from '../installs/service.js'
import type { Install } from '../installs/store.js'
import { ClientMetadataError, type App } from '../common/clients.js'
import type { OAuthStore } from './store.js'

const CODE_TTL_S = 60
const REFRESH_TTL_S = 90 * 24 * 3600
const REFRESH_GRACE_S = 30
const CODE_CHALLENGE = /^[A-Za-z0-9_-]{43}$/
const CODE_VERIFIER = /^[A-Za-z0-9._~-]{43,128}$/

/** Query or form parameters of an authorization request (RFC 6749 4.1.1 with PKCE, RFC 7636 4.3). */
export type AuthorizeParams = Static<typeof AuthorizeQuery>

/** A request that passed every check: what the consent page shows and what approval grants. */
export interface ConsentRequest {
  app: App
  redirectUri: string
  scopes: string[]
  state: string | undefined
  codeChallenge: string
  /** The RFC 8707 resource asked for, as it was written; undefined: the public API. */
  resource: string | undefined
  orgRefId: string
  /** The entity the request named, if any: preselected on the page, required by the decision to allow. */
  entityRefId: string | undefined
  /** The entities the user may choose from: those of their session. */
  entities: string[]
}

/** The outcome of an authorization request: the consent to ask for, or where to send the browser. */
export type AuthorizeOutcome = { consent: ConsentRequest } | { redirect: string }

type TokenResponse = Static<typeof TokenResponseSchema>

export interface OAuthServiceDeps {
  store: OAuthStore
  db: Pick<Db, 'tx'>
  config: { publicBaseUrl: string, mcpBaseUrl: string, tokenSigningKey: string }
  apps: Pick<AppService, 'resolve'>
  installs: Pick<InstallService, 'grant' | 'find' | 'revokeAccessTokens'>
  /** The access-state transaction: changes to installs are announced to every instance's cache. */
  changeAccess: FastifyInstance['accessState']['change']
  issueAccessToken: FastifyInstance['accessTokens']['issue']
  /** What lifetimes are judged on: codes, refresh tokens, the grace window. */
  clock: Clock
}

function redirectTo (base: string, params: Record<string, string | undefined>): string {
  const url = new URL(base)
  for (const [k, v] of Object.entries(params)) if (v !== undefined) url.searchParams.set(k, v)
  return url.toString()
}

/**
 * The OAuth authorization-code flow with PKCE, refresh rotation and revocation (docs/rules.md#oauth-install-flow):
 * what the OAuth routes call. Codes and refresh tokens are stamped on the database clock; whether one has expired,
 * or is within the grace window, is judged on the app's clock.
 */
export function createOAuthService (deps: OAuthServiceDeps) {
  const { store, db, config, apps, installs, changeAccess, issueAccessToken, clock } = deps
  const issuer = config.publicBaseUrl

  const resources = knownResources(config)
  /** RFC 8707: the canonical form of a resource this server knows (a trailing slash is forgiven), or undefined. */
  const knownResource = (r: string): string | undefined =>
    [resources.publicApi, resources.mcp].find(k => r === k || r === `${k}/`)

  async function clientOf (clientId: string | undefined): Promise<App | undefined> {
    if (!clientId) return undefined
    try {
      return await apps.resolve(clientId)
    } catch (err) {
      if (err instanceof ClientMetadataError) throw errors.clientMetadataRefused(err.message)
      throw err
    }
  }

  /** Checks an authorization request for this user. Throws for errors that must not redirect. */
  async function authorize (p: AuthorizeParams, user: SessionUser): Promise<AuthorizeOutcome> {
    // Until the client and its redirect URI are known to be right, errors are shown here, never redirected.
    const client = await clientOf(p.client_id)
    if (!client) throw errors.oauthInvalidRequest('Unknown client_id.')
    if (!p.redirect_uri || !client.redirectUris.some(r => redirectUriMatches(r, p.redirect_uri!))) {
      throw errors.oauthInvalidRequest('redirect_uri is not registered for this app.')
    }
    const fail = (error: string, description: string): AuthorizeOutcome => ({
      redirect: redirectTo(p.redirect_uri!, { error, error_description: description, state: p.state, iss: issuer })
    })

    if (!client.apiKeyEnabled) return fail('unauthorized_client', "The app's API key is disabled.")
    if (p.response_type !== undefined && p.response_type !== 'code') {
      return fail('unsupported_response_type', 'response_type must be code.')
    }
    if (!p.code_challenge || !CODE_CHALLENGE.test(p.code_challenge)) {
      return fail('invalid_request', 'code_challenge is required: 43 base64url characters (PKCE S256).')
    }
    if (p.code_challenge_method !== 'S256') return fail('invalid_request', 'code_challenge_method must be S256.')
    if (p.resource !== undefined && !knownResource(p.resource)) {
      return fail('invalid_target', `resource must be ${resources.mcp} or ${resources.publicApi}.`)
    }
    const requested = p.scope === undefined ? client.scopes : p.scope.split(' ').filter(Boolean)
    const scopes = client.scopes.filter(s => requested.includes(s))
    if (scopes.length === 0) return fail('invalid_scope', 'None of the requested scopes is registered for this app.')
    // The tenant: named by the request (the user must belong to it), or picked by the user among their entities.
    if ((p.org_ref_id !== undefined && user.orgRefId !== p.org_ref_id) ||
        (p.entity_ref_id !== undefined && !user.entityRefIds.includes(p.entity_ref_id)) ||
        user.entityRefIds.length === 0) {
      throw errors.notMemberOfTenant()
    }

    return {
      consent: {
        app: client,
        redirectUri: p.redirect_uri,
        scopes,
        state: p.state,
        codeChallenge: p.code_challenge,
        resource: p.resource,
        orgRefId: user.orgRefId,
        entityRefId: p.entity_ref_id,
        entities: user.entityRefIds
      }
    }
  }

  /**
   * The refresh token that replaces a presented one: derived from it with a key of the server's, so that every
   * presentation of one token gets the same successor (a retry, or a second thread of the same client, never
   * forks the chain) while nothing secret is stored and nobody without the key can work it out.
   */
  const successorKey = hkdfSync('sha256', config.tokenSigningKey, '', 'marketplace-gateway refresh successor', 32)
  const successorOf = (presentedHash: string): string =>
    'mrt_' + createHmac('sha256', Buffer.from(successorKey)).update(presentedHash).digest('base64url')

  /** The answer of a token request: an access token for the install, with a refresh token that is stored. */
  function tokensFor (install: Install, refreshToken: string, issuedMs: number, resource: string | null):
  TokenResponse {
    return {
      access_token: issueAccessToken(install, Math.floor(issuedMs), resource),
      token_type: 'Bearer',
      expires_in: ACCESS_TOKEN_TTL_S,
      refresh_token: refreshToken,
      scope: install.scopes.join(' '),
      install_id: install.installId
    }
  }

  /**
   * Issues an access token and a new refresh token for the install, in the caller's transaction: a random one for
   * a code, the derived successor (`successorOf`) for a refresh. The refresh token keeps the grant's resource
   * (`granted`, what a refresh without `resource` falls back on); the access token is bound to `resource`.
   */
  async function issueTokens (
    q: Queryable,
    install: Install,
    grant: { codeHash: string, granted: string | null },
    resource: string | null,
    refreshToken = randomToken('mrt_')
  ): Promise<TokenResponse & { hash: string }> {
    const hash = sha256(refreshToken)
    const issuedMs = await store.insertRefreshToken(q, {
      tokenHash: hash,
      installId: install.installId,
      clientId: install.clientId,
      codeHash: grant.codeHash,
      resource: grant.granted,
      ttlS: REFRESH_TTL_S
    })
    return { hash, ...tokensFor(install, refreshToken, issuedMs, resource) }
  }

  /**
   * Reuse detected: every refresh token of the install is revoked, and its access tokens issued until now are
   * refused, so that whoever holds a copy of the chain is cut off with the rightful client (who re-authorizes).
   */
  async function revokeFamily (hash: string): Promise<void> {
    const installId = (await store.installOfRefreshToken(hash))!
    await changeAccess({ installId }, async q => {
      await store.revokeFamily(q, installId)
      await installs.revokeAccessTokens(installId, q)
    })
  }

  const tokenResponse = ({ hash: _hash, ...response }: TokenResponse & { hash: string }): TokenResponse => response

  /**
   * RFC 8707 at the token endpoint, on either grant: what the access token is bound to. One consent covers both of
   * the service's resources (same app, tenant and scopes), so a `resource` may name either, whichever the grant was
   * made for: a client that consented for the public API and then meets the MCP endpoint refreshes for it, with no
   * second consent. No `resource` keeps the grant's; one of any other host or path is `invalid_target`.
   */
  function tokenResource (granted: string | null, asked: string | undefined): string | null | ApiError {
    if (asked === undefined) return granted
    return knownResource(asked) ??
      errors.oauthInvalidTarget(`resource must be ${resources.mcp} or ${resources.publicApi}.`)
  }

  /** Whether an instant stamped as an expiry has come, on the app's clock. */
  const hasPassed = (expiresAt: Date): boolean => expiresAt.getTime() <= clock.now()

  return {
    authorize,

    /** The user's Allow or Deny: a redirect carrying a code, or `access_denied`. */
    async decide (p: AuthorizeParams, user: SessionUser, allow: boolean): Promise<string> {
      const outcome = await authorize(p, user)
      if ('redirect' in outcome) return outcome.redirect
      const c = outcome.consent
      if (allow && c.entityRefId === undefined) throw errors.oauthInvalidRequest('Choose an entity to install into.')
      if (!allow) {
        return redirectTo(c.redirectUri, {
          error: 'access_denied',
          error_description: 'The user denied the request.',
          state: c.state,
          iss: issuer
        })
      }
      const code = randomToken('mac_')
      await changeAccess({ clientId: c.app.clientId }, async q => {
        const install = await installs.grant(
          {
            clientId: c.app.clientId,
            orgRefId: c.orgRefId,
            entityRefId: c.entityRefId!,
            scopes: c.scopes,
            userSub: user.sub
          },
          q
        )
        await store.insertCode(q, {
          codeHash: sha256(code),
          clientId: c.app.clientId,
          installId: install.installId,
          redirectUri: c.redirectUri,
          codeChallenge: c.codeChallenge,
          scopes: c.scopes,
          resource: (c.resource === undefined ? undefined : knownResource(c.resource)) ?? null,
          ttlS: CODE_TTL_S
        })
      })
      return redirectTo(c.redirectUri, { code, state: c.state, iss: issuer })
    },

    async exchangeCode (
      client: App,
      p: { code?: string, redirect_uri?: string, code_verifier?: string, resource?: string }
    ): Promise<TokenResponse> {
      if (!p.code || !p.redirect_uri || !p.code_verifier) {
        throw errors.oauthInvalidRequest('code, redirect_uri and code_verifier are required.')
      }
      if (!CODE_VERIFIER.test(p.code_verifier)) {
        throw errors.oauthInvalidRequest('code_verifier must be 43 to 128 characters of A-Z a-z 0-9 - . _ ~.')
      }
      const codeHash = sha256(p.code)
      const verifier = p.code_verifier
      // Failures return rather than throw, so that a replayed code's revocation commits.
      const result = await db.tx(async (q): Promise<TokenResponse | ApiError> => {
        const code = await store.lockCode(q, codeHash)
        if (!code || code.clientId !== client.clientId) {
          return errors.oauthInvalidGrant('The authorization code is invalid.')
        }
        if (code.usedAt) {
          // RFC 6749 4.1.2: a replayed code revokes what was issued with it.
          await store.revokeTokensOfCode(q, codeHash)
          return errors.oauthInvalidGrant('The authorization code was already used.')
        }
        if (hasPassed(code.expiresAt)) return errors.oauthInvalidGrant('The authorization code has expired.')
        // The issue time, on the database clock that also stamps a key disable.
        const issuedAt = code.expiresAt.getTime() - CODE_TTL_S * 1000
        if (client.keyDisabledAt && issuedAt <= client.keyDisabledAt.getTime()) {
          return errors.oauthInvalidGrant('The authorization code was issued before the API key was disabled.')
        }
        if (code.redirectUri !== p.redirect_uri) {
          return errors.oauthInvalidGrant('redirect_uri does not match the authorization request.')
        }
        if (pkceChallenge(verifier) !== code.codeChallenge) {
          return errors.oauthInvalidGrant('code_verifier does not match the code_challenge.')
        }
        const resource = tokenResource(code.resource, p.resource)
        if (resource instanceof ApiError) return resource
        await store.markCodeUsed(q, codeHash)
        const install = await installs.find(code.installId, q)
        if (install?.status !== 'active') return errors.oauthInvalidGrant('The install is no longer active.')
        return tokenResponse(await issueTokens(q, install, { codeHash, granted: code.resource }, resource))
      })
      if (result instanceof ApiError) throw result
      return result
    },

    /**
     * `sinceArrival`: how many ms ago the request arrived, which tells a racing duplicate from a retry. A function,
     * read once the transaction holds its connection: the wait for one belongs to the request's time too.
     */
    async refresh (
      client: App,
      p: { refresh_token?: string, resource?: string },
      sinceArrival: () => number
    ): Promise<TokenResponse> {
      const refreshToken = p.refresh_token
      if (!refreshToken) throw errors.oauthInvalidRequest('refresh_token is required.')
      const hash = sha256(refreshToken)
      const invalid = errors.oauthInvalidGrant('The refresh token is invalid, expired or revoked.')
      // The rules, in order, are in docs/decisions.md ("Refresh tokens under concurrency"). The row lock makes
      // presentations of one token take turns, on Postgres as on the embedded database.
      const result = await db.tx(async (q): Promise<TokenResponse | ApiError | 'reused'> => {
        // When the request arrived, on the database's clock, read before waiting for the row lock. The time since
        // arrival is read here, not when the request called refresh: with more presentations at once than pool
        // connections, a loser that waited for a connection after the winner committed looked like a retry (two
        // 200s in 20 on Postgres, in CI).
        const arrived = await store.arrivedAt(q, sinceArrival())
        const t = await store.lockRefreshToken(q, hash)
        const s = t?.replacedBy ? await store.successor(q, t.replacedBy, arrived) : undefined
        if (!t || t.clientId !== client.clientId || hasPassed(t.expiresAt)) return invalid
        if (client.keyDisabledAt && t.createdAt <= client.keyDisabledAt) return invalid
        // Revoked by a grace re-issue (how earlier versions answered a retry), and presented again: its holder and
        // the re-issue's are two parties.
        if (t.revokedAt) return t.revokedReason === 'reissued' ? 'reused' : invalid
        if (t.replacedBy) {
          if (!s?.unused) {
            // Rotated while this request was on its way, and rotated on since: a duplicate, not a theft.
            if (s?.raced) return invalid
            // Its successor used: somebody else holds a copy of the chain.
            return 'reused'
          }
          // Rotated, the successor unused: a duplicate of the winning presentation or a retry after a lost answer,
          // within the grace window. The same successor again (it is derived from this token), with a new access
          // token: whichever answer the client keeps, its chain is the one that lives.
          const inGrace = t.replacedAt !== null && t.replacedAt.getTime() > clock.now() - REFRESH_GRACE_S * 1000
          if (!s.raced && !inGrace) return 'reused'
          // A successor not derived from this token (drawn by an earlier version, or under an earlier signing
          // key) cannot be given again; the client that got it keeps it, nothing is revoked.
          const successor = successorOf(hash)
          if (sha256(successor) !== t.replacedBy) return invalid
          const install = await installs.find(t.installId, q)
          if (install?.status !== 'active') return invalid
          const resource = tokenResource(s.resource, p.resource)
          if (resource instanceof ApiError) return resource
          return tokensFor(install, successor, s.issuedMs, resource)
        }
        const install = await installs.find(t.installId, q)
        if (install?.status !== 'active') return invalid
        const resource = tokenResource(t.resource, p.resource)
        if (resource instanceof ApiError) return resource
        const grant = { codeHash: t.codeHash, granted: t.resource }
        const issued = await issueTokens(q, install, grant, resource, successorOf(hash))
        await store.markReplaced(q, hash, issued.hash)
        return tokenResponse(issued)
      })
      if (result === 'reused') {
        await revokeFamily(hash)
        throw invalid
      }
      if (result instanceof ApiError) throw result
      return result
    },

    /** RFC 7009: unknown tokens, access tokens and other clients' tokens are all answered 200 and left alone. */
    async revoke (client: App, token: string): Promise<void> {
      await store.revokeChainOf(client.clientId, sha256(token))
    }
  }
}

export type OAuthService = ReturnType<typeof createOAuthService>
