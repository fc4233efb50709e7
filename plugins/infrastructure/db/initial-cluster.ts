import { createHash } from 'node:crypto'
import { existsSync, mkdirSync, readdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs'
import { join } from 'node:path'
import { PGlite } from '@electric-sql/pglite'
import { ROOT } from '../../../lib/root.js'
import { migrate } from './migrate.js'
import type { Db } from './types.js'

/**
 * A new embedded database starts from a migrated cluster made once, not from an empty one: creating a PGlite cluster
 * costs seconds of CPU (initdb in WebAssembly), loading a dump of one a fraction of that. `npm install` makes it
 * (package.json `prepare`), the first `npm start` and every test of the embedded database load it. It is kept under
 * node_modules/.cache, named by the migrations' content and PGlite's version, so a new migration or a new PGlite
 * makes a new one and never loads a stale one.
 */
export function initialClusterFile (): string {
  const migrations = join(ROOT, 'migrations')
  const key = createHash('sha256')
  for (const f of readdirSync(migrations).sort()) key.update(f).update(readFileSync(join(migrations, f)))
  key.update(JSON.parse(readFileSync(join(ROOT, 'node_modules/@electric-sql/pglite/package.json'), 'utf8')).version)
  return join(ROOT, 'node_modules', '.cache', 'marketplace-gateway', `pglite-${key.digest('hex').slice(0, 16)}.tar`)
}

/** The initial cluster if it has been made; undefined otherwise (a new database is then created from nothing). */
export function cachedInitialCluster (): Blob | undefined {
  const file = initialClusterFile()
  return existsSync(file) ? new Blob([readFileSync(file)]) : undefined
}

/** The initial cluster, made now if it was not; written in one rename, so concurrent makers never see half of one. */
export async function initialCluster (): Promise<Blob> {
  const cached = cachedInitialCluster()
  if (cached) return cached
  const pglite = await PGlite.create('memory://')
  const q = {
    query: async <T>(sql: string, params?: unknown[]) => (await pglite.query<T>(sql, params)).rows,
    exec: async (sql: string) => { await pglite.exec(sql) }
  }
  await migrate({ withAdvisoryLock: async (_key, fn) => fn(q) } as Db)
  const dump = await pglite.dumpDataDir('none')
  await pglite.close()
  const file = initialClusterFile()
  mkdirSync(join(file, '..'), { recursive: true })
  const partial = `${file}.${process.pid}`
  writeFileSync(partial, Buffer.from(await dump.arrayBuffer()))
  renameSync(partial, file)
  return dump
}
