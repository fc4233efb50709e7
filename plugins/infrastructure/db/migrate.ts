import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { ROOT } from '../../../lib/root.js'
import type { Db } from './types.js'

const MIGRATIONS_DIR = join(ROOT, 'migrations')
// Any fixed number: every instance that starts at once takes the same lock, so one migrates and the rest wait.
const MIGRATION_LOCK = 7_274_311

/** Applies every `migrations/NNN_name.sql` not applied yet, each in its own transaction. Returns the names applied. */
export async function migrate (db: Db): Promise<string[]> {
  const files = readdirSync(MIGRATIONS_DIR)
    .filter(f => /^\d+_.+\.sql$/.test(f))
    .sort()
  return db.withAdvisoryLock(MIGRATION_LOCK, async q => {
    await q.exec(`create table if not exists schema_migrations (
      version text primary key,
      applied_at timestamptz not null default now()
    )`)
    const done = new Set(
      (await q.query<{ version: string }>('select version from schema_migrations')).map(r => r.version)
    )
    const applied: string[] = []
    for (const file of files) {
      if (done.has(file)) continue
      const sql = readFileSync(join(MIGRATIONS_DIR, file), 'utf8')
      await q.exec('begin')
      try {
        await q.exec(sql)
        await q.query('insert into schema_migrations (version) values ($1)', [file])
        await q.exec('commit')
      } catch (err) {
        await q.exec('rollback')
        throw new Error(`migration ${file} failed: ${(err as Error).message}`, { cause: err })
      }
      applied.push(file)
    }
    return applied
  })
}
