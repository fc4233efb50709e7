import { mkdirSync } from 'node:fs'
import { PGlite } from '@electric-sql/pglite'
import { lockDataDir } from './embedded-lock.js'
import type { Db, Queryable } from './types.js'

/**
 * PGlite: Postgres compiled to WebAssembly, in this process, on one connection. Notifications never drop. With a
 * snapshot (a `dumpDataDir` of another), it starts from that instead of an empty cluster.
 */
export async function createEmbedded (dataDir: string, snapshot?: Blob): Promise<Db> {
  let release = (): void => {}
  if (!dataDir.startsWith('memory://')) {
    mkdirSync(dataDir, { recursive: true })
    // One process per data directory: PGlite itself would let a second open it and both would diverge.
    release = lockDataDir(dataDir)
  }
  let pglite: PGlite
  try {
    pglite = await PGlite.create(dataDir, snapshot ? { loadDataDir: snapshot } : {})
  } catch (err) {
    release()
    throw err
  }
  const queryable = (q: Pick<PGlite, 'query'>): Queryable => ({
    async query<T> (sql: string, params?: unknown[]) {
      const res = await q.query<T>(sql, params)
      return res.rows
    }
  })
  return {
    kind: 'embedded',
    ...queryable(pglite),
    // In-process: it answers unless a long transaction holds its one connection, which the bound covers.
    ping: timeoutMs => Promise.race([
      pglite.query('select 1').then(() => true, () => false),
      new Promise<boolean>(resolve => setTimeout(() => resolve(false), timeoutMs).unref())
    ]),
    tx: fn => pglite.transaction(tx => fn(queryable(tx))),
    async exec (sql) { await pglite.exec(sql) },
    async withAdvisoryLock (_key, fn) {
      // One process owns the embedded database, so there is nobody to race with.
      return fn({ ...queryable(pglite), exec: async (sql: string) => { await pglite.exec(sql) } })
    },
    async listen (channel, onMessage) {
      await pglite.listen(channel, onMessage)
    },
    onNotificationsLost () {},
    notificationsHealthy: true,
    async close () {
      try {
        await pglite.close()
      } finally {
        release()
      }
    }
  }
}
