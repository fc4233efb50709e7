import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { createServer } from 'node:net'
import { join } from 'node:path'
import { ROOT } from '../lib/root.js'
import { sleep } from './lib.js'

/**
 * Servers in processes of their own, started the way users start them, and what they cost the machine: CPU time
 * and RSS read from /proc for the process and its children (`npm start` is npm, then node under it).
 */

/** A port nobody listens on now (the kernel's choice), for a server that is told its port. */
export function freePort (): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createServer()
    probe.once('error', reject)
    probe.listen(0, '127.0.0.1', () => {
      const address = probe.address()
      probe.close(() => typeof address === 'object' && address ? resolve(address.port) : reject(new Error('no port')))
    })
  })
}

/** The environment a child should see: this one without the loaders of tsx or tap (they would slow it). */
export function cleanEnv (extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env, ...extra }
  delete env.NODE_OPTIONS
  for (const key of Object.keys(env)) if (key.startsWith('TAP') || key.startsWith('_TAPJS')) delete env[key]
  return env
}

/** The build that `npm start` runs, made again when a source file is newer than it. */
export async function ensureBuilt (): Promise<void> {
  const built = join(ROOT, 'dist', 'cli.js')
  const newest = (dir: string): number => readdirSync(dir, { withFileTypes: true }).reduce((n, e) => {
    const path = join(dir, e.name)
    if (e.isDirectory()) return Math.max(n, newest(path))
    return e.name.endsWith('.ts') ? Math.max(n, statSync(path).mtimeMs) : n
  }, 0)
  const sources = Math.max(...['app.ts', 'server.ts', 'cli.ts'].map(f => statSync(join(ROOT, f)).mtimeMs),
    ...['lib', 'plugins', 'routes', 'schemas'].map(d => newest(join(ROOT, d))))
  if (existsSync(built) && statSync(built).mtimeMs >= sources) return
  process.stdout.write('building dist/ (npm run build)… ')
  await new Promise<void>((resolve, reject) => {
    const child = spawn('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] })
    child.once('error', reject)
    child.once('exit', code => code === 0 ? resolve() : reject(new Error(`npm run build exited ${code}`)))
  })
  process.stdout.write('done\n')
}

export interface ServerProcess {
  readonly name: string
  readonly url: string
  readonly pid: number
  /** CPU seconds (user + system) used so far by the process and its descendants. */
  cpuSeconds(): number
  /** Resident memory of the process and its descendants, in KiB. */
  rssKiB(): number
  /** SIGTERM to the whole process group, then SIGKILL if it has not exited within 10 s. */
  stop(): Promise<void>
}

/**
 * Starts `command args` in a process group of its own, its output thrown away (`stdout: 'ignore'`, as a log
 * collector that keeps up would), and waits until `readyPath` answers 200.
 */
export async function startServer (opts: {
  name: string
  command: string
  args: string[]
  env: NodeJS.ProcessEnv
  port: number
  readyPath: string
  timeoutMs?: number
}): Promise<ServerProcess> {
  const child: ChildProcess = spawn(opts.command, opts.args, {
    cwd: ROOT, env: opts.env, detached: true, stdio: ['ignore', 'ignore', 'pipe']
  })
  let stderr = ''
  child.stderr!.on('data', (chunk: Buffer) => { stderr = (stderr + chunk.toString()).slice(-4000) })
  let exited: number | null | undefined
  const exit = new Promise<void>(resolve => child.once('exit', code => { exited = code; resolve() }))
  const url = `http://127.0.0.1:${opts.port}`
  const deadline = Date.now() + (opts.timeoutMs ?? 60_000)
  for (;;) {
    if (exited !== undefined) throw new Error(`${opts.name} exited (${exited}) before it was ready:\n${stderr}`)
    const ok = await fetch(url + opts.readyPath).then(r => r.ok, () => false)
    if (ok) break
    if (Date.now() > deadline) {
      process.kill(-child.pid!, 'SIGKILL')
      throw new Error(`${opts.name} not ready within ${opts.timeoutMs ?? 60_000} ms:\n${stderr}`)
    }
    await sleep(50)
  }
  const pid = child.pid!
  return {
    name: opts.name,
    url,
    pid,
    cpuSeconds: () => tree(pid).reduce((s, p) => s + p.cpuSeconds, 0),
    rssKiB: () => tree(pid).reduce((s, p) => s + p.rssKiB, 0),
    async stop () {
      if (exited !== undefined) return
      try { process.kill(-pid, 'SIGTERM') } catch { return }
      const timer = setTimeout(() => { try { process.kill(-pid, 'SIGKILL') } catch {} }, 10_000)
      await exit
      clearTimeout(timer)
    }
  }
}

interface ProcStat { pid: number, ppid: number, cpuSeconds: number, rssKiB: number }

const PAGE_KIB = 4
const TICKS = 100

function procStat (pid: string): ProcStat | undefined {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
    return {
      pid: Number(pid),
      ppid: Number(fields[1]),
      cpuSeconds: (Number(fields[11]) + Number(fields[12])) / TICKS,
      rssKiB: Number(fields[21]) * PAGE_KIB
    }
  } catch {
    return undefined
  }
}

/** `pid` and every process under it (Linux; empty elsewhere). */
function tree (pid: number): ProcStat[] {
  let all: ProcStat[]
  try {
    all = readdirSync('/proc').filter(p => /^\d+$/.test(p)).map(procStat).filter((s): s is ProcStat => !!s)
  } catch {
    return []
  }
  const found = all.filter(s => s.pid === pid)
  for (let i = 0; i < found.length; i++) found.push(...all.filter(s => s.ppid === found[i]!.pid))
  return found
}
