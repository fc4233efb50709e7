import fp from 'fastify-plugin'
import { KNOWN_SCOPES, WIRED_SCOPES } from '../../../lib/scopes.js'
import { ClientMetadataFetcher } from '../oauth/client-metadata.js'
import { createAppService, type AppService } from './service.js'
import { createAppStore } from './store.js'

declare module 'fastify' {
  interface FastifyInstance {
    apps: AppService
  }
}

/** Registered apps and their API keys (docs/rules.md#apps-and-api-keys), and the scopes they may ask for. */
export default fp(
  async app => {
    const metadata = new ClientMetadataFetcher({
      allowPrivate: app.config.webhookAllowPrivateTargets,
      caFile: app.config.webhookCaFile
    }, Math.round(app.config.clientMetadataTimeoutSeconds * 1000), () => app.clock.now())
    app.addHook('onClose', () => metadata.close())

    app.decorate('apps', createAppService({
      store: createAppStore(app.db),
      metadata,
      changeAccess: (key, fn) => app.accessState.change(key, fn),
      clock: app.clock,
      log: app.log
    }))

    app.mcp.addResource({
      uri: 'marketplace://scopes',
      name: 'Scopes',
      description: 'Every scope an app may register, which authorise routes today, and what each allows.',
      mimeType: 'application/json',
      read: () =>
        JSON.stringify(
          {
            scopes: Object.entries(KNOWN_SCOPES).map(([scope, description]) => ({
              scope,
              description,
              wired: Object.hasOwn(WIRED_SCOPES, scope)
            }))
          },
          null,
          2
        )
    })
  },
  { name: 'apps', dependencies: ['db', 'access-state', 'mcp'] }
)
