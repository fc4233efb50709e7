import type { Static } from '@sinclair/typebox'
import fp from 'fastify-plugin'
import { Identity } from '../../../schemas/identity.js'
import { NoInput } from '../../../schemas/mcp.js'
import { errors } from '../../infrastructure/errors.js'
import { READ_ONLY } from '../common/tool-annotations.js'
import type { Principal } from './access-state.js'
import type { TokenSurface } from './tokens.js'

declare module 'fastify' {
  interface FastifyInstance {
    publicAuth: {
      /**
       * The first five checks of the public pipeline (docs/rules.md#public-request-pipeline) for an Authorization
       * header value: a Bearer credential, a valid token, its install and app as the database holds them now, a key
       * that was not disabled after the token was issued, an active install.
       */
      authenticate(authorization: string | undefined, surface?: TokenSurface): Promise<Principal>
      /** Who the principal is, as `GET /public/v1/me` and the `whoami` tool answer it. */
      identity(p: Principal): Static<typeof Identity>
    }
  }
  interface FastifyRequest {
    principal: Principal | null
  }
}

// The scheme alone: a pattern run over the whole header would cost more than the rest of a cached request's checks.
const BEARER_SCHEME = /^Bearer(?:[ \t]+|$)/i

function identity (p: Principal): Static<typeof Identity> {
  return {
    install_id: p.installId,
    client_id: p.clientId,
    app_slug: p.appSlug,
    org_ref_id: p.orgRefId,
    entity_ref_id: p.entityRefId,
    scopes: [...p.scopes]
  }
}

/** Authenticates marketplace access tokens. Install and key state always come from the database. */
export default fp(async (app) => {
  app.decorateRequest('principal', null)
  app.decorate('publicAuth', {
    async authenticate (authorization: string | undefined, surface: TokenSurface = 'public'): Promise<Principal> {
      // Row 1 is a missing Bearer credential; a Bearer credential that is malformed is row 2.
      const scheme = authorization === undefined ? null : BEARER_SCHEME.exec(authorization)
      const token = scheme && authorization!.slice(scheme[0].length).trim()
      if (!token) throw errors.missingBearer()
      const claims = app.accessTokens.verify(token, surface)
      const state = await app.accessState.get(claims.sub)
      if (!state || state.principal.clientId !== claims.client_id || state.principal.orgRefId !== claims.org_ref_id ||
          state.principal.entityRefId !== claims.entity_ref_id) {
        throw errors.invalidAccessToken()
      }
      if (!state.apiKeyEnabled || (state.keyDisabledAt !== null && claims.issuedAtMs <= state.keyDisabledAt)) {
        throw errors.apiKeyDisabled()
      }
      if (state.status !== 'active') throw errors.installNotActive()
      // Its refresh-token family was revoked on reuse: a copy of the chain was in other hands
      // (plugins/domain/oauth).
      if (state.tokensRevokedAt !== null && claims.issuedAtMs <= state.tokensRevokedAt) {
        throw errors.invalidAccessToken()
      }
      app.installs.noteUse(state.principal.installId)
      return state.principal
    },
    identity
  })

  app.mcp.addTool({
    name: 'whoami',
    title: 'Who am I',
    description: 'The install behind the access token: app, organisation, entity and granted scopes (same as ' +
      'GET /public/v1/me).',
    inputSchema: NoInput,
    outputSchema: Identity,
    annotations: READ_ONLY,
    requiredScopes: [],
    public: false,
    tags: ['identity']
  }, async (_args, p) => identity(p))
}, { name: 'public-auth', dependencies: ['access-tokens', 'access-state', 'installs', 'mcp'] })
