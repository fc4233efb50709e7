import { existsSync } from 'node:fs'
import { join } from 'node:path'
import { setTimeout as sleep } from 'node:timers/promises'
import fp from 'fastify-plugin'
import type { FastifyBaseLogger } from 'fastify'
import { maskUrl, StartupError, type Config } from '../config/index.js'
import { createEmbedded } from './embedded.js'
import { cachedInitialCluster } from './initial-cluster.js'
import { migrate } from './migrate.js'
import { createPostgres, unavailableKind, type PostgresOptions } from './postgres.js'
import type { Db } from './types.js'

export type { Db, Queryable } from './types.js'
export { notify, DatabaseUnavailableError } from './types.js'

declare module 'fastify' {
  interface FastifyInstance {
    db: Db
  }
}

/** Opens Postgres (`DATABASE_URL`) or the embedded database, migrates it, and closes it with the app. */
export default fp(
  async app => {
    const db = await openDb(app.config, app.log, {
      onUnavailable: kind => { app.metrics?.dependencyError('postgres', kind) }
    })
    app.decorate('db', db)
    const pool = db.poolStats
    if (pool && app.hasDecorator('metrics')) {
      for (const state of ['total', 'idle', 'waiting'] as const) {
        app.metrics.gauge(`db_pool_${state}`, `Postgres pool connections: ${state}.`, () => pool()[state])
      }
    }
    app.addHook('onClose', async () => {
      await db.close()
    })
    const applied = await migrate(db)
    if (applied.length > 0) app.log.info({ applied }, 'migrations applied')
  },
  { name: 'db', dependencies: ['config'] }
)

/**
 * Postgres when DATABASE_URL is set, else the embedded database. Postgres that is not up yet (refused, starting,
 * not resolvable: containers start together) is retried with backoff for DATABASE_STARTUP_WAIT_SECONDS; anything
 * else (a wrong password, a missing database) fails at once. Either way the error is one line naming DATABASE_URL,
 * password masked, and the cause.
 */
export async function openDb (
  config: Pick<Config, 'databaseUrl' | 'embeddedDataDir' | 'embeddedSnapshot' | 'databaseStartupWaitSeconds'>,
  log: FastifyBaseLogger,
  opts: PostgresOptions = {}
): Promise<Db> {
  const url = config.databaseUrl
  if (!url) {
    // A directory that holds no cluster yet starts from the prepared one, when there is one (initial-cluster.ts).
    const fresh = !existsSync(join(config.embeddedDataDir, 'PG_VERSION'))
    const snapshot = config.embeddedSnapshot ??
      (fresh && !config.embeddedDataDir.startsWith('memory://') ? cachedInitialCluster() : undefined)
    return createEmbedded(config.embeddedDataDir, snapshot)
  }
  const deadline = Date.now() + config.databaseStartupWaitSeconds * 1000
  for (let attempt = 1; ; attempt++) {
    try {
      return await createPostgres(url, log, opts)
    } catch (err) {
      const e = err as { message?: string, code?: string }
      const cause = `${e.message ?? String(err)}${e.code && !e.message?.includes(e.code) ? ` (${e.code})` : ''}`
      const wait = Math.min(250 * 2 ** (attempt - 1), 5_000)
      if (!unavailableKind(err) || Date.now() + wait > deadline) {
        const waited = attempt > 1 ? `, after ${attempt} attempts` : ''
        throw new StartupError(`Cannot use the database at DATABASE_URL=${maskUrl(url)}: ${cause}${waited}.`)
      }
      log.warn({ database: maskUrl(url), cause, retry_in_ms: wait, attempt }, 'database not ready; retrying')
      await sleep(wait)
    }
  }
}
