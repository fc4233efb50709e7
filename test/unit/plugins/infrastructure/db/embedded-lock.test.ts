import { spawn } from 'node:child_process'
import { existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { DataDirInUseError, LOCK_FILE, lockDataDir } from '../../../../../plugins/infrastructure/db/embedded-lock.js'

const dir = (): string => {
  const d = mkdtempSync(join(tmpdir(), 'mg-lock-'))
  t.teardown(() => rmSync(d, { recursive: true, force: true }))
  return d
}

t.test('one holder at a time; released, it can be taken again', async t => {
  const d = dir()
  const release = lockDataDir(d)
  t.equal(readFileSync(join(d, LOCK_FILE), 'utf8'), `${process.pid}\n`)
  t.throws(() => lockDataDir(d), DataDirInUseError, 'a second open in the same process')
  release()
  t.notOk(existsSync(join(d, LOCK_FILE)), 'the file goes with the release')
  lockDataDir(d)()
})

t.test('a live process holding it: refused, naming the directory, the pid and what to do', async t => {
  const d = dir()
  const other = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' })
  t.teardown(() => other.kill('SIGKILL'))
  writeFileSync(join(d, LOCK_FILE), `${other.pid}\n`)
  let err: unknown
  try {
    lockDataDir(d)
  } catch (e) {
    err = e
  }
  t.ok(err instanceof DataDirInUseError, 'refused')
  t.equal((err as DataDirInUseError).pid, other.pid)
  t.match((err as Error).message, `The embedded database in ${d} is open in another process (pid ${other.pid})`)
  t.match((err as Error).message, /use Postgres \(DATABASE_URL\)/)
  t.equal(readFileSync(join(d, LOCK_FILE), 'utf8'), `${other.pid}\n`, 'its lock is left alone')
})

t.test('a lock left by a process that died, or by an earlier run as this pid, is taken over', async t => {
  for (const stale of ['999999999', String(process.pid), 'garbage']) {
    const d = dir()
    writeFileSync(join(d, LOCK_FILE), `${stale}\n`)
    const release = lockDataDir(d)
    t.equal(readFileSync(join(d, LOCK_FILE), 'utf8'), `${process.pid}\n`, `left by ${stale}`)
    release()
  }
})
