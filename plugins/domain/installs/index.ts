import fp from 'fastify-plugin'
import { cursorCodec } from '../../../lib/cursor.js'
import { createInstallService, type InstallService } from './service.js'
import { createInstallStore } from './store.js'

declare module 'fastify' {
  interface FastifyInstance {
    installs: InstallService
  }
}

/** Installs: one app in one (org, entity). Rows are never deleted; an uninstall only changes the status. */
export default fp(
  async app => {
    app.decorate('installs', createInstallService({
      store: createInstallStore(app.db),
      changeAccess: (key, fn) => app.accessState.change(key, fn),
      cursors: cursorCodec(app.config.tokenSigningKey),
      clock: app.clock,
      log: app.log
    }))
  },
  { name: 'installs', dependencies: ['db', 'access-state', 'config'] }
)
