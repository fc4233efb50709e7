import fp from 'fastify-plugin'
import { createEmbedded } from './embedded.js'
import { migrate } from './migrate.js'
import { createPostgres } from './postgres.js'
import type { Db } from './types.js'

export type { Db, Queryable } from './types.js'
export { notify } from './types.js'

declare module 'fastify' {
  interface FastifyInstance {
    db: Db
  }
}

/** Opens Postgres (`DATABASE_URL`) or the embedded database, migrates it, and closes it with the app. */
export default fp(
  async app => {
    const db = await openDb(app.config, app.log)
    app.decorate('db', db)
    app.addHook('onClose', async () => {
      await db.close()
    })
    const applied = await migrate(db)
    if (applied.length > 0) app.log.info({ applied }, 'migrations applied')
  },
  { name: 'db', dependencies: ['config'] }
)

export async function openDb (
  config: { databaseUrl: string | undefined, embeddedDataDir: string },
  log: Parameters<typeof createPostgres>[1]
): Promise<Db> {
  return config.databaseUrl ? createPostgres(config.databaseUrl, log) : createEmbedded(config.embeddedDataDir)
}
