import { createHmac, hkdfSync } from 'node:crypto'
import type { Static } from '@sinclair/typebox'
import fp from 'fastify-plugin'
import { pkceChallenge, randomToken, sha256 } from '../../../lib/crypto.js'
import { redirectUriMatches } from '../../../lib/redirect-uris.js'
import type { App } from '../apps/index.js'
import type { SessionUser } from '../auth/user-session.js'
import { ACCESS_TOKEN_TTL_S, knownResources } from '../auth/tokens.js'
import { ClientMetadataError } from './client-metadata.js'
import type { Queryable } from '../../infrastructure/db/index.js'
import { ApiError, errors } from '../../infrastructure/errors.js'
import type { Install } from '../installs/index.js'
import type { AuthorizeQuery, TokenResponse as TokenResponseSchema } from '../../../schemas/oauth.js'

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

interface CodeRow {
  created_at: Date
  client_id: string
  install_id: string
  redirect_uri: string
  code_challenge: string
  resource: string | null
  expired: boolean
  used_at: Date | null
}

interface RefreshRow {
  token_hash: string
  install_id: string
  client_id: string
  code_hash: string
  resource: string | null
  created_at: Date
  expired: boolean
  replaced_at: Date | null
  replaced_by: string | null
  revoked_at: Date | null
  revoked_reason: string | null
}

declare module 'fastify' {
  interface FastifyInstance {
    oauth: {
      /** Checks an authorization request for this user. Throws for errors that must not redirect. */
      authorize(params: AuthorizeParams, user: SessionUser): Promise<AuthorizeOutcome>
      /** The user's Allow or Deny: a redirect carrying a code, or `access_denied`. */
      decide(params: AuthorizeParams, user: SessionUser, allow: boolean): Promise<string>
      exchangeCode(
        client: App,
        p: { code?: string, redirect_uri?: string, code_verifier?: string, resource?: string }
      ): Promise<TokenResponse>
      /**
       * `sinceArrival`: how many ms ago the request arrived, which tells a racing duplicate from a retry. A function,
       * read once the transaction holds its connection: the wait for one belongs to the request's time too.
       */
      refresh(
        client: App,
        p: { refresh_token?: string, resource?: string },
        sinceArrival: () => number
      ): Promise<TokenResponse>
      revoke(client: App, token: string): Promise<void>
    }
  }
}

function redirectTo (base: string, params: Record<string, string | undefined>): string {
  const url = new URL(base)
  for (const [k, v] of Object.entries(params)) if (v !== undefined) url.searchParams.set(k, v)
  return url.toString()
}

/** The OAuth authorization-code flow with PKCE, refresh rotation and revocation (docs/rules.md#oauth-install-flow). */
export default fp(
  async app => {
    const { db } = app
    const issuer = app.config.publicBaseUrl

    const resources = knownResources(app.config)
    /** RFC 8707: the canonical form of a resource this server knows (a trailing slash is forgiven), or undefined. */
    const knownResource = (r: string): string | undefined =>
      [resources.publicApi, resources.mcp].find(k => r === k || r === `${k}/`)

    async function clientOf (clientId: string | undefined): Promise<App | undefined> {
      if (!clientId) return undefined
      try {
        return await app.apps.resolve(clientId)
      } catch (err) {
        if (err instanceof ClientMetadataError) throw errors.clientMetadataRefused(err.message)
        throw err
      }
    }

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
    const successorKey = hkdfSync('sha256', app.config.tokenSigningKey, '', 'marketplace-gateway refresh successor', 32)
    const successorOf = (presentedHash: string): string =>
      'mrt_' + createHmac('sha256', Buffer.from(successorKey)).update(presentedHash).digest('base64url')

    /** The answer of a token request: an access token for the install, with a refresh token that is stored. */
    function tokensFor (install: Install, refreshToken: string, issuedMs: number, resource: string | null):
    TokenResponse {
      return {
        access_token: app.accessTokens.issue(install, Math.floor(issuedMs), resource),
        token_type: 'Bearer',
        expires_in: ACCESS_TOKEN_TTL_S,
        refresh_token: refreshToken,
        scope: install.scopes.join(' '),
        install_id: install.installId
      }
    }

    /**
     * Issues an access token and a new refresh token for the install, in the caller's transaction: a random one for
     * a code, the derived successor (`successorOf`) for a refresh.
     */
    async function issueTokens (
      q: Queryable,
      install: Install,
      codeHash: string,
      resource: string | null,
      refreshToken = randomToken('mrt_')
    ): Promise<TokenResponse & { hash: string }> {
      const hash = sha256(refreshToken)
      const [{ issued_ms: issuedMs }] = (await q.query<{ issued_ms: number }>(
        `insert into refresh_tokens (token_hash, install_id, client_id, code_hash, resource, created_at, expires_at)
       values ($1, $2, $3, $4, $5, clock_timestamp(), clock_timestamp() + make_interval(secs => $6))
       returning (extract(epoch from created_at) * 1000)::float8 as issued_ms`,
        [hash, install.installId, install.clientId, codeHash, resource, REFRESH_TTL_S]
      )) as [{ issued_ms: number }]
      return { hash, ...tokensFor(install, refreshToken, issuedMs, resource) }
    }

    /**
     * Reuse detected: every refresh token of the install is revoked, and its access tokens issued until now are
     * refused, so that whoever holds a copy of the chain is cut off with the rightful client (who re-authorizes).
     */
    async function revokeFamily (hash: string): Promise<void> {
      const [t] = await db.query<{ install_id: string }>(
        'select install_id from refresh_tokens where token_hash = $1', [hash])
      await app.accessState.change({ installId: t!.install_id }, async q => {
        await q.query(
          `update refresh_tokens set revoked_at = now(), revoked_reason = 'family'
            where install_id = $1 and revoked_at is null`,
          [t!.install_id]
        )
        await q.query('update installs set tokens_revoked_at = clock_timestamp() where install_id = $1',
          [t!.install_id])
      })
    }

    interface SuccessorRow {
      unused: boolean
      in_grace: boolean
      raced: boolean
      resource: string | null
      issued_ms: number
    }
    const tokenResponse = ({ hash: _hash, ...response }: TokenResponse & { hash: string }): TokenResponse => response

    /**
     * RFC 8707 at the token endpoint: no `resource` keeps the grant's; one that names another resource than the
     * grant's, or one this server does not know, is `invalid_target`.
     */
    function tokenResource (granted: string | null, asked: string | undefined): string | null | ApiError {
      if (asked === undefined) return granted
      const known = knownResource(asked)
      if (!known || (granted !== null && known !== granted)) {
        return errors.oauthInvalidTarget(granted === null
          ? `resource must be ${resources.mcp} or ${resources.publicApi}.`
          : `resource must be ${granted}, the resource this grant was made for.`)
      }
      return known
    }

    app.decorate('oauth', {
      authorize,

      async decide (p: AuthorizeParams, user: SessionUser, allow: boolean) {
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
        await app.accessState.change({ clientId: c.app.clientId }, async q => {
          const install = await app.installs.grant(
            {
              clientId: c.app.clientId,
              orgRefId: c.orgRefId,
              entityRefId: c.entityRefId!,
              scopes: c.scopes,
              userSub: user.sub
            },
            q
          )
          await q.query(
            `insert into authorization_codes
               (code_hash, client_id, install_id, redirect_uri, code_challenge, scopes, resource, expires_at)
             values ($1, $2, $3, $4, $5, $6, $7, now() + make_interval(secs => $8))`,
            [sha256(code), c.app.clientId, install.installId, c.redirectUri, c.codeChallenge, c.scopes,
              c.resource === undefined ? null : knownResource(c.resource), CODE_TTL_S]
          )
        })
        return redirectTo(c.redirectUri, { code, state: c.state, iss: issuer })
      },

      async exchangeCode (
        client: App,
        p: { code?: string, redirect_uri?: string, code_verifier?: string, resource?: string }
      ) {
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
          const [code] = await q.query<CodeRow>(
            `select client_id, install_id, redirect_uri, code_challenge, resource, expires_at <= now() as expired,
                    used_at,
                  expires_at - make_interval(secs => $2) as created_at
             from authorization_codes where code_hash = $1 for update`,
            [codeHash, CODE_TTL_S]
          )
          if (!code || code.client_id !== client.clientId) {
            return errors.oauthInvalidGrant('The authorization code is invalid.')
          }
          if (code.used_at) {
            // RFC 6749 4.1.2: a replayed code revokes what was issued with it.
            await q.query('update refresh_tokens set revoked_at = now() where code_hash = $1 and revoked_at is null', [
              codeHash
            ])
            return errors.oauthInvalidGrant('The authorization code was already used.')
          }
          if (code.expired) return errors.oauthInvalidGrant('The authorization code has expired.')
          if (client.keyDisabledAt && code.created_at <= client.keyDisabledAt) {
            return errors.oauthInvalidGrant('The authorization code was issued before the API key was disabled.')
          }
          if (code.redirect_uri !== p.redirect_uri) {
            return errors.oauthInvalidGrant('redirect_uri does not match the authorization request.')
          }
          if (pkceChallenge(verifier) !== code.code_challenge) {
            return errors.oauthInvalidGrant('code_verifier does not match the code_challenge.')
          }
          const resource = tokenResource(code.resource, p.resource)
          if (resource instanceof ApiError) return resource
          await q.query('update authorization_codes set used_at = now() where code_hash = $1', [codeHash])
          const install = await app.installs.find(code.install_id, q)
          if (install?.status !== 'active') return errors.oauthInvalidGrant('The install is no longer active.')
          return tokenResponse(await issueTokens(q, install, codeHash, resource))
        })
        if (result instanceof ApiError) throw result
        return result
      },

      async refresh (client: App, p: { refresh_token?: string, resource?: string }, sinceArrival: () => number) {
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
          const [{ arrived }] = (await q.query<{ arrived: Date }>(
            'select clock_timestamp() - make_interval(secs => $1) as arrived',
            [sinceArrival() / 1000]
          )) as [{ arrived: Date }]
          const [t] = await q.query<RefreshRow>(
            `select token_hash, install_id, client_id, code_hash, resource, created_at, expires_at <= now() as expired,
                    replaced_at, replaced_by, revoked_at, revoked_reason
               from refresh_tokens where token_hash = $1 for update`,
            [hash]
          )
          // The successor in a statement of its own: one that waited for the lock above must see the successor
          // the lock holder has just committed (a join would still read the snapshot from before the wait).
          const [s] = t?.replaced_by
            ? await q.query<SuccessorRow>(
              `select replaced_at is null and revoked_at is null as unused,
                      $2::timestamptz > now() - make_interval(secs => $3) as in_grace,
                      created_at >= $4 as raced, resource,
                      (extract(epoch from clock_timestamp()) * 1000)::float8 as issued_ms
                 from refresh_tokens where token_hash = $1`,
              [t.replaced_by, t.replaced_at, REFRESH_GRACE_S, arrived]
            )
            : []
          if (!t || t.client_id !== client.clientId || t.expired) return invalid
          if (client.keyDisabledAt && t.created_at <= client.keyDisabledAt) return invalid
          // Revoked by a grace re-issue (how earlier versions answered a retry), and presented again: its holder and
          // the re-issue's are two parties.
          if (t.revoked_at) return t.revoked_reason === 'reissued' ? 'reused' : invalid
          if (t.replaced_by) {
            if (!s?.unused) {
              // Rotated while this request was on its way, and rotated on since: a duplicate, not a theft.
              if (s?.raced) return invalid
              // Its successor used: somebody else holds a copy of the chain.
              return 'reused'
            }
            // Rotated, the successor unused: a duplicate of the winning presentation or a retry after a lost answer,
            // within the grace window. The same successor again (it is derived from this token), with a new access
            // token: whichever answer the client keeps, its chain is the one that lives.
            if (!s.raced && !s.in_grace) return 'reused'
            // A successor not derived from this token (drawn by an earlier version, or under an earlier signing
            // key) cannot be given again; the client that got it keeps it, nothing is revoked.
            const successor = successorOf(hash)
            if (sha256(successor) !== t.replaced_by) return invalid
            const install = await app.installs.find(t.install_id, q)
            if (install?.status !== 'active') return invalid
            const resource = tokenResource(s.resource, p.resource)
            if (resource instanceof ApiError) return resource
            return tokensFor(install, successor, s.issued_ms, resource)
          }
          const install = await app.installs.find(t.install_id, q)
          if (install?.status !== 'active') return invalid
          const resource = tokenResource(t.resource, p.resource)
          if (resource instanceof ApiError) return resource
          const issued = await issueTokens(q, install, t.code_hash, resource, successorOf(hash))
          await q.query(
            `update refresh_tokens set replaced_at = coalesce(replaced_at, now()), replaced_by = $2
              where token_hash = $1`,
            [hash, issued.hash]
          )
          return tokenResponse(issued)
        })
        if (result === 'reused') {
          await revokeFamily(hash)
          throw invalid
        }
        if (result instanceof ApiError) throw result
        return result
      },

      async revoke (client: App, token: string) {
        // RFC 7009: unknown tokens, access tokens and other clients' tokens are all answered 200 and left alone.
        await db.query(
          `update refresh_tokens set revoked_at = now()
          where revoked_at is null and client_id = $2
            and code_hash = (select code_hash from refresh_tokens where token_hash = $1 and client_id = $2)`,
          [sha256(token), client.clientId]
        )
      }
    })
  },
  { name: 'oauth', dependencies: ['db', 'apps', 'installs', 'access-state', 'access-tokens'] }
)
