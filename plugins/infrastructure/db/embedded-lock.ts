import { linkSync, readFileSync, rmSync, unlinkSync, writeFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { StartupError } from '../config/index.js'

/** The file that says which process has the embedded database open: its pid, as Postgres' postmaster.pid does. */
export const LOCK_FILE = 'marketplace-gateway.pid'

/** A second process on one embedded database: refused, since two would diverge silently and split the data. */
export class DataDirInUseError extends StartupError {
  override name = 'DataDirInUseError'
  constructor (readonly dataDir: string, readonly pid: number) {
    super(`The embedded database in ${resolve(dataDir)} is open in another process (pid ${pid}), and only one ` +
      'process may open it. Stop that process first (commands that change data, such as client-key, need it ' +
      'stopped), set DATA_DIR to another folder, or use Postgres (DATABASE_URL), which the service and every ' +
      'command share while it runs.')
  }
}

/** The lock files this process holds: its own pid in a file is a lock of this process only if it is here. */
const held = new Set<string>()

/** The pid in a lock file; undefined when there is none or it is not one. */
function readPid (file: string): number | undefined {
  try {
    const pid = Number.parseInt(readFileSync(file, 'utf8'), 10)
    return Number.isSafeInteger(pid) && pid > 0 ? pid : undefined
  } catch {
    return undefined
  }
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    // EPERM: it exists, under another user.
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/**
 * Takes the embedded database in `dataDir` for this process, or throws DataDirInUseError naming the process that
 * has it. A lock left by a process that died (kill -9, a crash, a container's earlier run as the same pid) is taken
 * over. Returns the release, which also runs when the process exits.
 */
export function lockDataDir (dataDir: string): () => void {
  const file = resolve(dataDir, LOCK_FILE)
  if (held.has(file)) throw new DataDirInUseError(dataDir, process.pid)
  // The file appears with its pid in it (written aside, then linked into place), so no other process ever reads it
  // empty and takes it for a stale one.
  const aside = `${file}.${process.pid}`
  writeFileSync(aside, `${process.pid}\n`, { mode: 0o600 })
  try {
    for (let attempt = 0; ; attempt++) {
      try {
        linkSync(aside, file)
        held.add(file)
        break
      } catch (err) {
        if ((err as NodeJS.ErrnoException).code !== 'EEXIST' || attempt > 0) throw err
        const holder = readPid(file)
        if (holder !== undefined && holder !== process.pid && alive(holder)) {
          throw new DataDirInUseError(dataDir, holder)
        }
        // Stale: taken over, unless another process took it over in the meantime.
        if (readPid(file) === holder) rmSync(file, { force: true })
      }
    }
  } finally {
    rmSync(aside, { force: true })
  }
  const release = (): void => {
    process.off('exit', release)
    held.delete(file)
    try {
      if (Number.parseInt(readFileSync(file, 'utf8'), 10) === process.pid) unlinkSync(file)
    } catch {}
  }
  process.on('exit', release)
  return release
}
