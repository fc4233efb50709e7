import fp from 'fastify-plugin'
import { createOAuthService, type OAuthService } from './service.js'
import { createOAuthStore } from './store.js'

declare module 'fastify' {
  interface FastifyInstance {
    oauth: OAuthService
  }
}

/** The OAuth authorization-code flow with PKCE, refresh rotation and revocation (docs/rules.md#oauth-install-flow). */
export default fp(
  async app => {
    app.decorate('oauth', createOAuthService({
      store: createOAuthStore(app.db),
      db: app.db,
      config: app.config,
      apps: app.apps,
      installs: app.installs,
      changeAccess: (key, fn) => app.accessState.change(key, fn),
      issueAccessToken: (subject, issuedAtMs, resource) => app.accessTokens.issue(subject, issuedAtMs, resource),
      clock: app.clock
    }))
  },
  { name: 'oauth', dependencies: ['db', 'apps', 'installs', 'access-state', 'access-tokens'] }
)
