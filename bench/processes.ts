import { spawn, type ChildProcess } from 'node:child_process'
import { existsSync, readdirSync, readFileSync, statSync } from 'node:fs'
import { createServer } from 'node:net'
import { join } from 'node:path'
import { ROOT } from '../lib/root.js'
import { sleep, type Cleanup } from './lib.js'

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

/**
 * The build that `npm start` runs, made again when a source file is newer than it. The build is incremental: it
 * rewrites only the outputs that changed, and its `.tsbuildinfo` whenever any did, so that is the file to compare
 * with (a file touched but not changed costs a 3 s build that writes nothing).
 */
export async function ensureBuilt (): Promise<void> {
  const built = join(ROOT, 'dist', '.tsbuildinfo')
  const newest = (dir: string): number => readdirSync(dir, { withFileTypes: true }).reduce((n, e) => {
    const path = join(dir, e.name)
    if (e.isDirectory()) return Math.max(n, newest(path))
    return e.name.endsWith('.ts') ? Math.max(n, statSync(path).mtimeMs) : n
  }, 0)
  const sources = Math.max(...['app.ts', 'server.ts', 'cli.ts'].map(f => statSync(join(ROOT, f)).mtimeMs),
    ...['cli', 'lib', 'plugins', 'routes', 'schemas'].map(d => newest(join(ROOT, d))))
  if (existsSync(built) && statSync(built).mtimeMs >= sources) return
  process.stdout.write('building dist/ (npm run build)… ')
  await new Promise<void>((resolve, reject) => {
    const child = spawn('npm', ['run', 'build', '--silent'], { cwd: ROOT, stdio: ['ignore', 'ignore', 'inherit'] })
    child.once('error', reject)
    child.once('exit', code => code === 0 ? resolve() : reject(new Error(`npm run build exited ${code}`)))
  })
  process.stdout.write('done\n')
}

/** A process started by a benchmark, in a process group of its own, with what it costs the machine. */
export interface BenchProcess {
  readonly name: string
  readonly pid: number
  /** CPU seconds (user + system) used so far by the process and its descendants. */
  cpuSeconds(): number
  /** Resident memory, in KiB, of the processes of its tree that start none (the server, not the npm above it). */
  rssKiB(): number
  /** SIGTERM to the whole process group, then SIGKILL if it has not exited within 10 s. */
  stop(): Promise<void>
}

export interface ServerProcess extends BenchProcess {
  readonly url: string
}

interface StartOptions {
  name: string
  /** The benchmark's cleanups: the process is stopped with them, whatever happens after it was spawned. */
  cleanups: Cleanup[]
  command: string
  args: string[]
  env: NodeJS.ProcessEnv
  timeoutMs?: number
}

/**
 * Spawns `command args` in a process group of its own and waits until `ready` resolves true (polled every 50 ms).
 * Standard output is dropped, as a log collector that keeps up would take it, unless `onOutput` reads it.
 */
async function start (
  opts: StartOptions, ready: () => Promise<boolean>, onOutput?: (text: string) => void
): Promise<BenchProcess> {
  const child: ChildProcess = spawn(opts.command, opts.args, {
    cwd: ROOT, env: opts.env, detached: true, stdio: ['ignore', onOutput ? 'pipe' : 'ignore', 'pipe']
  })
  let tail = ''
  child.stderr!.on('data', (chunk: Buffer) => { tail = (tail + chunk.toString()).slice(-4000) })
  child.stdout?.on('data', (chunk: Buffer) => onOutput!(chunk.toString()))
  let exited: number | null | undefined
  child.once('exit', code => { exited = code })
  const pid = child.pid!
  const stop = (): Promise<void> => stopGroup(pid)
  // Registered before it is ready: an interrupted start-up stops it too.
  opts.cleanups.push(stop)
  const timeoutMs = opts.timeoutMs ?? 60_000
  const deadline = Date.now() + timeoutMs
  while (!(await ready())) {
    if (exited !== undefined) throw new Error(`${opts.name} exited (${exited}) before it was ready:\n${tail}`)
    if (Date.now() > deadline) {
      await stop()
      throw new Error(`${opts.name} not ready within ${timeoutMs} ms:\n${tail}`)
    }
    await sleep(50)
  }
  return {
    name: opts.name,
    pid,
    cpuSeconds: () => tree(pid).reduce((s, p) => s + p.cpuSeconds, 0),
    rssKiB: () => leaves(tree(pid)).reduce((s, p) => s + p.rssKiB, 0),
    stop
  }
}

/**
 * A server, ready when `http://127.0.0.1:port` + `readyPath` answers 200; its standard output is dropped, or read
 * through a pipe by `onOutput` (as a log collector reads it).
 */
export async function startServer (
  opts: StartOptions & { port: number, readyPath: string, onOutput?: (text: string) => void }
): Promise<ServerProcess> {
  const url = `http://127.0.0.1:${opts.port}`
  const ready = () => fetch(url + opts.readyPath).then(r => r.ok, () => false)
  return { ...await start(opts, ready, opts.onOutput), url }
}

/**
 * The service as users start it, `npm start`, in production mode on `port`; with `nodeArgs` (a profiler's flags,
 * which Node refuses in NODE_OPTIONS) it is what `npm start` runs, `node <nodeArgs> dist/cli.js serve`. Its log
 * lines (standard output) are dropped, or read by `onOutput`.
 */
export function startService (opts: {
  cleanups: Cleanup[]
  env: Record<string, string>
  port: number
  logLevel: string
  nodeArgs?: string[]
  onOutput?: (text: string) => void
}): Promise<ServerProcess> {
  return startServer({
    name: 'service',
    cleanups: opts.cleanups,
    ...(opts.onOutput && { onOutput: opts.onOutput }),
    ...(opts.nodeArgs
      ? { command: process.execPath, args: [...opts.nodeArgs, 'dist/cli.js', 'serve'] }
      : { command: 'npm', args: ['start', '--silent'] }),
    env: cleanEnv({
      ...opts.env, NODE_ENV: 'production', HOST: '127.0.0.1', PORT: String(opts.port), LOG_LEVEL: opts.logLevel
    }),
    port: opts.port,
    readyPath: '/health/ready'
  })
}

/** A process without HTTP (a delivery worker), ready once its output has shown `readyText`. */
export async function startProcess (opts: StartOptions & { readyText: string }): Promise<BenchProcess> {
  let output = ''
  let seen = false
  return start(opts, async () => seen, text => {
    if (seen) return
    output = (output + text).slice(-4000)
    seen = output.includes(opts.readyText)
  })
}

const groupAlive = (pid: number): boolean => {
  try {
    process.kill(-pid, 0)
    return true
  } catch {
    return false
  }
}

/**
 * SIGTERM to the process group, then SIGKILL to what is left of it after 10 s; returns once no process of the group
 * is left (npm may exit before the node process under it).
 */
async function stopGroup (pid: number): Promise<void> {
  try { process.kill(-pid, 'SIGTERM') } catch { return }
  const deadline = Date.now() + 10_000
  while (groupAlive(pid) && Date.now() < deadline) await sleep(25)
  if (!groupAlive(pid)) return
  try { process.kill(-pid, 'SIGKILL') } catch {}
  while (groupAlive(pid)) await sleep(25)
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

/** The processes of a tree that have no children in it. */
const leaves = (procs: ProcStat[]): ProcStat[] => procs.filter(p => !procs.some(q => q.ppid === p.pid))

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

/** What the receiver process counted since its last reset. `firstAt`/`lastAt`: `now()` of bench/lib.ts (ms). */
export interface ReceiverCounts { unique: number, duplicates: number, firstAt: number, lastAt: number }

export interface ReceiverProcess {
  readonly port: number
  counts(): Promise<ReceiverCounts>
  reset(): Promise<void>
  cpuSeconds(): number
  stop(): Promise<void>
}

/**
 * An HTTPS webhook receiver in a process of its own: answers 200 "ok" to every POST and counts the deliveries by
 * (path, X-Service-Event-Id), so that duplicates show. Asked over IPC for its counts.
 */
const RECEIVER_SOURCE = `
const { createServer } = require('node:https')
const seen = new Set()
const zero = () => ({ unique: 0, duplicates: 0, firstAt: 0, lastAt: 0 })
let counts = zero()
const { key, cert } = JSON.parse(process.env.RECEIVER_TLS)
const server = createServer({ key, cert, keepAliveTimeout: 65000 }, (req, res) => {
  req.on('data', () => {})
  req.on('end', () => {
    const id = req.url + ' ' + req.headers['x-service-event-id']
    const t = Number(process.hrtime.bigint()) / 1e6
    if (seen.has(id)) counts.duplicates++
    else {
      seen.add(id)
      counts.unique++
      if (counts.unique === 1) counts.firstAt = t
      counts.lastAt = t
    }
    res.end('ok')
  })
})
process.on('message', m => {
  if (m === 'counts') process.send({ counts })
  if (m === 'reset') { seen.clear(); counts = zero(); process.send({ reset: true }) }
})
server.listen(0, '127.0.0.1', () => process.send({ port: server.address().port }))`

export async function startReceiver (tls: { key: string, cert: string }): Promise<ReceiverProcess> {
  const env = cleanEnv({ RECEIVER_TLS: JSON.stringify(tls) })
  const stdio = ['ignore', 'inherit', 'inherit', 'ipc'] as const
  const child = spawn(process.execPath, ['-e', RECEIVER_SOURCE], { env, stdio: [...stdio] })
  const ask = <T>(message: string, field: string): Promise<T> => new Promise(resolve => {
    const listen = (m: Record<string, unknown>): void => {
      if (!(field in m)) return
      child.off('message', listen)
      resolve(m[field] as T)
    }
    child.on('message', listen)
    child.send(message)
  })
  const port = await new Promise<number>((resolve, reject) => {
    child.once('message', (m: { port: number }) => resolve(m.port))
    child.once('exit', code => reject(new Error(`the receiver exited (${code})`)))
  })
  const pid = child.pid!
  return {
    port,
    counts: () => ask<ReceiverCounts>('counts', 'counts'),
    reset: async () => { await ask('reset', 'reset') },
    cpuSeconds: () => tree(pid).reduce((s, p) => s + p.cpuSeconds, 0),
    stop: () => new Promise<void>(resolve => {
      if (child.exitCode !== null) return resolve()
      child.once('exit', () => resolve())
      child.kill('SIGTERM')
    })
  }
}
