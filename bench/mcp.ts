/**
 * Benchmark: the MCP endpoint of the real app on real Postgres, both revisions.
 *
 *   npx tsx bench/mcp.ts
 *
 * Needs Postgres at 127.0.0.1:5432 with trust auth for user `postgres`: a fresh database `mg_bench_mcp_<random>` is
 * created for the run and dropped at the end. Environment:
 *
 *   BENCH_DATABASE_URL   use this database as it is instead (migrated, never dropped)
 *   BENCH_ADMIN_URL      where to create the fresh database (default postgres://postgres@127.0.0.1:5432/postgres)
 *   BENCH_SESSIONS       sessions held open at once (default 1000)
 *   BENCH_WARM_SESSIONS  sessions opened, used and deleted before the baseline reading (default 100; 0 = none)
 *   BENCH_OPEN_CONCURRENCY  initialize handshakes in flight while opening sessions (default 16)
 *   BENCH_SECONDS        seconds of measurement per side, in total (default 10)
 *   BENCH_ROUNDS         slices each side's seconds are cut into, alternating the sides (default 5)
 *   BENCH_WARMUP         seconds of warm-up per side (default 2)
 *   BENCH_CONNECTIONS    concurrent connections (default 50)
 *   BENCH_WHOAMI_SESSIONS  sessions the whoami connections are spread over (default: one per connection)
 *   BENCH_PHASES         sessions,load (default both; `load` alone opens only the sessions the load needs)
 *   BENCH_SIDES          whoami,stateless,me (default all three; one side alone is for profiling)
 *   BENCH_LOG_LEVEL      the server's LOG_LEVEL (default info: one request line per request, serialised then
 *                        dropped)
 *   BENCH_CPU_PROF=DIR   run the server with --cpu-prof --cpu-prof-dir=DIR
 *   BENCH_HEAP_SNAPSHOT=DIR  write heap snapshots of the server at the baseline and with all sessions open (writing
 *                        one inflates RSS, so that run's RSS verdicts read n/a; diff the two snapshots instead)
 *
 * The server is `bench/mcp-server.ts`, a child process (`node --expose-gc --import tsx`) that builds the app,
 * listens on 127.0.0.1, makes one install and reports its RSS after forced full GCs when asked over IPC. The
 * sessions' clients live in this process and autocannon in a process of its own per slice, so none of their
 * memory is counted.
 *
 * 1. Sessions. RSS of the server with no session ever opened ("cold"), then after BENCH_WARM_SESSIONS sessions were
 *    opened, each used for one tools/call whoami and DELETEd ("baseline": code loaded and compiled, pools grown),
 *    then with BENCH_SESSIONS sessions open. Each session: POST initialize (with the access token) and the
 *    notifications/initialized notification, raw HTTP through an undici Agent of BENCH_OPEN_CONCURRENCY
 *    connections, closed before each reading so no client socket is held on the server. /health must read
 *    active_sessions = BENCH_SESSIONS. Target: RSS growth <= 50 KiB per session (from the baseline; the growth
 *    from cold is printed too).
 * 2. Load, with all sessions still open. First one tools/call whoami on each revision whose structuredContent must
 *    equal the body of GET /public/v1/me. Then autocannon, BENCH_CONNECTIONS connections, three sides in
 *    alternating slices after a warm-up of each (same token, same connections, same seconds):
 *    - `whoami`: POST /mcp tools/call whoami on 2025-11-25, each connection on a session of its own, a fresh
 *      JSON-RPC id per request;
 *    - `stateless`: POST /mcp tools/call whoami on 2026-07-28, no session: the `_meta` envelope and the
 *      MCP-Protocol-Version, Mcp-Method and Mcp-Name headers on every request;
 *    - `me`: GET /public/v1/me, the exact body expected.
 *    Every whoami answer must be 200 and contain that structuredContent, whether it comes back as JSON or SSE.
 *    Target: req/s of each whoami / req/s of /me >= 0.5. Server CPU time per request is shown for each side.
 *
 * Exits non-zero only when the run itself fails (setup error, a wrong answer, a session count that is off), never
 * for a missed target.
 */
import { spawn, type ChildProcess } from 'node:child_process'
import { mkdirSync } from 'node:fs'
import { loadavg } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { isDeepStrictEqual } from 'node:util'
import autocannon from 'autocannon'
import { Agent, request } from 'undici'
import {
  benchDatabase, fmt, list, loadSlice, mergeSlices, nodeAndCpus, positiveInt, printTable, runBench, tempDir, verdict,
  summary as summaryLine, type Cleanup, type RawResult, type SliceFigures
} from './lib.js'

const SESSIONS = positiveInt('BENCH_SESSIONS', 1000)
const WARM_SESSIONS = positiveInt('BENCH_WARM_SESSIONS', 100, true)
const OPEN_CONCURRENCY = positiveInt('BENCH_OPEN_CONCURRENCY', 16)
const SECONDS = positiveInt('BENCH_SECONDS', 10)
const WARMUP = positiveInt('BENCH_WARMUP', 2, true)
const CONNECTIONS = positiveInt('BENCH_CONNECTIONS', 50)
const ROUNDS = positiveInt('BENCH_ROUNDS', 5)
const WHOAMI_SESSIONS = positiveInt('BENCH_WHOAMI_SESSIONS', CONNECTIONS)
const PHASES = list('BENCH_PHASES', ['sessions', 'load'])
const SIDES = list('BENCH_SIDES', ['whoami', 'stateless', 'me'])
const LOG_LEVEL = process.env.BENCH_LOG_LEVEL || 'info'
const CPU_PROF = process.env.BENCH_CPU_PROF ? resolve(process.env.BENCH_CPU_PROF) : undefined
const HEAP_SNAPSHOT = process.env.BENCH_HEAP_SNAPSHOT ? resolve(process.env.BENCH_HEAP_SNAPSHOT) : undefined
const PROTOCOL = '2025-11-25'
const STATELESS = '2026-07-28'
const TARGET_KIB_PER_SESSION = 50
const TARGET_RATIO = 0.5

const HERE = dirname(fileURLToPath(import.meta.url))
const kib = (bytes: number, digits = 0): string => fmt(bytes / 1024, digits)

// ---------------------------------------------------------------------------------------------------------------
// The server process

interface Memory { rss: number, heapTotal: number, heapUsed: number, external: number, arrayBuffers: number }
interface Ready { type: 'ready', port: number, accessToken: string, me: string }

class ServerProcess {
  private nextId = 1
  private readonly pending = new Map<number, { resolve: (v: any) => void, reject: (e: Error) => void }>()
  private exited: Promise<number | null>

  private constructor (readonly child: ChildProcess, readonly ready: Ready) {
    this.exited = new Promise(resolve => child.once('exit', code => resolve(code)))
    child.on('message', (msg: { id?: number, error?: string }) => {
      const waiter = msg.id === undefined ? undefined : this.pending.get(msg.id)
      if (!waiter) return
      this.pending.delete(msg.id!)
      if (msg.error) waiter.reject(new Error(`server: ${msg.error}`))
      else waiter.resolve(msg)
    })
    child.once('exit', code => {
      for (const w of this.pending.values()) w.reject(new Error(`server exited (${code})`))
      this.pending.clear()
    })
  }

  static async start (env: Record<string, string>): Promise<ServerProcess> {
    const args = ['--expose-gc']
    if (CPU_PROF) args.push('--cpu-prof', `--cpu-prof-dir=${CPU_PROF}`)
    args.push('--import', 'tsx', join(HERE, 'mcp-server.ts'))
    const childEnv: NodeJS.ProcessEnv = { ...process.env, ...env }
    // test/support/helper.ts makes a database of its own when DATABASE_URL is set.
    delete childEnv.DATABASE_URL
    const child = spawn(process.execPath, args, {
      stdio: ['ignore', 'inherit', 'inherit', 'ipc'], env: childEnv, cwd: join(HERE, '..')
    })
    const ready = await new Promise<Ready>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('the server did not start within 60 s')), 60_000)
      child.once('error', reject)
      child.once('exit', code => {
        clearTimeout(timer)
        reject(new Error(`the server exited (${code}) before it was ready`))
      })
      child.on('message', (msg: { type?: string }) => {
        if (msg.type === 'ready') { clearTimeout(timer); resolve(msg as Ready) }
      })
    })
    return new ServerProcess(child, ready)
  }

  call<T> (msg: Record<string, unknown>): Promise<T> {
    const id = this.nextId++
    return new Promise<T>((resolve, reject) => {
      this.pending.set(id, { resolve, reject })
      this.child.send({ ...msg, id })
    })
  }

  async measure (): Promise<{ memory: Memory, sessions: number }> { return this.call({ type: 'measure' }) }
  async cpuMicros (): Promise<number> {
    const { cpu } = await this.call<{ cpu: { user: number, system: number } }>({ type: 'cpu' })
    return cpu.user + cpu.system
  }

  async close (): Promise<void> {
    if (this.child.exitCode !== null) return
    const timer = setTimeout(() => this.child.kill('SIGKILL'), 15_000)
    await this.call({ type: 'close' }).catch(() => {})
    await this.exited
    clearTimeout(timer)
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Raw MCP over HTTP

const MCP_HEADERS = { accept: 'application/json, text/event-stream', 'content-type': 'application/json' }
const INITIALIZE = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: PROTOCOL, capabilities: {}, clientInfo: { name: 'bench', version: '1' } }
})
const INITIALIZED = JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' })
const whoamiBody = (id: number | string): string =>
  JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'whoami', arguments: {} } })
/** The same call on the stateless revision: the request carries its revision, and its client, itself. */
const statelessWhoamiBody = (id: number | string): string => JSON.stringify({
  jsonrpc: '2.0',
  id,
  method: 'tools/call',
  params: {
    name: 'whoami',
    arguments: {},
    _meta: {
      'io.modelcontextprotocol/protocolVersion': STATELESS,
      'io.modelcontextprotocol/clientInfo': { name: 'bench', version: '1' },
      'io.modelcontextprotocol/clientCapabilities': {}
    }
  }
})
const STATELESS_HEADERS = { 'mcp-protocol-version': STATELESS, 'mcp-method': 'tools/call', 'mcp-name': 'whoami' }

/** The one JSON-RPC message of an answer, sent as JSON or as an SSE stream of one `data:` event. */
function jsonRpcOf (contentType: string | undefined, text: string): any {
  if (contentType?.startsWith('text/event-stream')) {
    const data = text.split('\n').filter(l => l.startsWith('data:')).map(l => l.slice(5).trim()).filter(Boolean)
    if (data.length !== 1) throw new Error(`expected one SSE data line, got ${data.length}: ${text.slice(0, 300)}`)
    return JSON.parse(data[0]!)
  }
  return JSON.parse(text)
}

class McpClient {
  readonly agent: Agent
  constructor (readonly base: string, readonly token: string, connections: number) {
    this.agent = new Agent({ connections, pipelining: 1 })
  }

  private async post (body: string, headers: Record<string, string>) {
    const res = await request(`${this.base}/mcp`, {
      method: 'POST',
      dispatcher: this.agent,
      body,
      headers: { ...MCP_HEADERS, authorization: `Bearer ${this.token}`, ...headers }
    })
    const text = await res.body.text()
    return { status: res.statusCode, headers: res.headers, text }
  }

  /** initialize, then notifications/initialized: a session ready for calls. */
  async open (): Promise<string> {
    const init = await this.post(INITIALIZE, {})
    const id = init.headers['mcp-session-id']
    if (init.status !== 200 || typeof id !== 'string') {
      throw new Error(`initialize: ${init.status} ${init.text.slice(0, 300)}`)
    }
    const answer = jsonRpcOf(init.headers['content-type'] as string | undefined, init.text)
    if (answer.result?.protocolVersion !== PROTOCOL) throw new Error(`initialize answered ${init.text.slice(0, 300)}`)
    const note = await this.post(INITIALIZED, { 'mcp-session-id': id, 'mcp-protocol-version': PROTOCOL })
    if (note.status !== 202) {
      throw new Error(`notifications/initialized: ${note.status} ${note.text.slice(0, 300)}`)
    }
    return id
  }

  /** tools/call whoami in a session, or (session undefined) on the stateless revision. */
  async whoami (session: string | undefined, id: number): Promise<{ raw: string, message: any }> {
    const res = session === undefined
      ? await this.post(statelessWhoamiBody(id), STATELESS_HEADERS)
      : await this.post(whoamiBody(id), { 'mcp-session-id': session, 'mcp-protocol-version': PROTOCOL })
    if (res.status !== 200) throw new Error(`tools/call whoami: ${res.status} ${res.text.slice(0, 300)}`)
    return { raw: res.text, message: jsonRpcOf(res.headers['content-type'] as string | undefined, res.text) }
  }

  async remove (session: string): Promise<void> {
    const res = await request(`${this.base}/mcp`, {
      method: 'DELETE',
      dispatcher: this.agent,
      headers: { 'mcp-session-id': session, 'mcp-protocol-version': PROTOCOL, authorization: `Bearer ${this.token}` }
    })
    await res.body.text()
    if (res.statusCode !== 200) throw new Error(`DELETE /mcp: ${res.statusCode}`)
  }

  /** Opens `n` sessions, `concurrency` handshakes in flight. */
  async openMany (n: number, concurrency: number): Promise<string[]> {
    const ids: string[] = []
    let started = 0
    const lane = async (): Promise<void> => {
      while (started < n) {
        started++
        ids.push(await this.open())
      }
    }
    await Promise.all(Array.from({ length: Math.min(concurrency, n) }, lane))
    return ids
  }
}

async function activeSessions (base: string): Promise<number> {
  const res = await fetch(`${base}/health`, { headers: { connection: 'close' } })
  if (res.status !== 200) throw new Error(`/health: ${res.status}`)
  return ((await res.json()) as { active_sessions: number }).active_sessions
}

// ---------------------------------------------------------------------------------------------------------------
// Load

interface Side {
  name: string
  opts: autocannon.Options
  /** whoami: each connection gets one of these session ids, in turn. */
  sessions?: string[]
  /** whoami: every answer must contain this (its structuredContent, serialised). */
  expect?: string
}

interface Figures extends SliceFigures { cpuPerRequest: number }

function slice (side: Side, seconds: number): Promise<RawResult> {
  return loadSlice(
    { ...side.opts, connections: CONNECTIONS, duration: seconds },
    { sessions: side.sessions, expect: side.expect }
  )
}

function figures (side: Side, results: RawResult[], cpuMicros: number): Figures {
  const merged = mergeSlices(side.name, side.opts.url, CONNECTIONS, results)
  return { ...merged, cpuPerRequest: cpuMicros / merged.total }
}

// ---------------------------------------------------------------------------------------------------------------

async function main (cleanups: Cleanup[]): Promise<void> {
  const summary: string[] = []
  const markdown: string[] = []
  const database = await benchDatabase('mg_bench_mcp')
  cleanups.push(database.drop)
  const databaseUrl = database.url
  const dataDir = tempDir('mg-bench-mcp-', cleanups)
  if (CPU_PROF) mkdirSync(CPU_PROF, { recursive: true })
  if (HEAP_SNAPSHOT) mkdirSync(HEAP_SNAPSHOT, { recursive: true })

  const started = Date.now()
  const server = await ServerProcess.start({
    BENCH_SERVER_DATABASE_URL: databaseUrl, BENCH_SERVER_DATA_DIR: dataDir, BENCH_SERVER_LOG_LEVEL: LOG_LEVEL
  })
  cleanups.push(() => server.close())
  const { port, accessToken, me } = server.ready
  const base = `http://127.0.0.1:${port}`
  const identity: unknown = JSON.parse(me)

  console.log('marketplace-gateway bench: MCP sessions, tools/call whoami on both revisions vs GET /public/v1/me')
  console.log(`  server: bench/mcp-server.ts in its own process (pid ${server.child.pid}), ` +
    `buildApp on Postgres ${new URL(databaseUrl).host}, ` +
    `LOG_LEVEL ${LOG_LEVEL} (lines dropped), all rate limits 1,000,000/min; ` +
    `ready in ${fmt((Date.now() - started) / 1000, 1)} s`)
  console.log(`  ${nodeAndCpus()}, load average ${loadavg()[0]!.toFixed(2)}`)

  /** Has the server write a heap snapshot into HEAP_SNAPSHOT; answers its path. */
  const heapSnapshot = async (file: string): Promise<string> =>
    (await server.call<{ path: string }>({ type: 'snapshot', path: join(HEAP_SNAPSHOT!, file) })).path

  let sessionIds: string[] = []
  if (PHASES.has('sessions')) {
    console.log('')
    console.log(`sessions: ${fmt(SESSIONS)} held open ` +
      `(raw HTTP initialize + notifications/initialized, ${OPEN_CONCURRENCY} in flight)`)
    const cold = await server.measure()
    if (cold.sessions !== 0) throw new Error(`${cold.sessions} sessions before any was opened`)

    if (WARM_SESSIONS > 0) {
      const warm = new McpClient(base, accessToken, OPEN_CONCURRENCY)
      const ids = await warm.openMany(WARM_SESSIONS, OPEN_CONCURRENCY)
      let n = 0
      await Promise.all(ids.map(async id => { await warm.whoami(id, ++n); await warm.remove(id) }))
      await warm.agent.close()
    }
    if (HEAP_SNAPSHOT) console.log(`  heap snapshot: ${await heapSnapshot('baseline.heapsnapshot')}`)
    const baseline = await server.measure()
    if (baseline.sessions !== 0) throw new Error(`${baseline.sessions} sessions left after the warm-up`)

    const client = new McpClient(base, accessToken, OPEN_CONCURRENCY)
    const t0 = Date.now()
    sessionIds = await client.openMany(SESSIONS, OPEN_CONCURRENCY)
    const openSeconds = (Date.now() - t0) / 1000
    await client.agent.close()
    const health = await activeSessions(base)
    if (health !== SESSIONS) throw new Error(`/health active_sessions reads ${health}, expected ${SESSIONS}`)
    if (HEAP_SNAPSHOT) console.log(`  heap snapshot: ${await heapSnapshot('open.heapsnapshot')}`)
    const open = await server.measure()
    if (open.sessions !== SESSIONS) {
      throw new Error(`the server counts ${open.sessions} sessions, expected ${SESSIONS}`)
    }

    const row = (label: string, m: Memory): string =>
      `  ${label.padEnd(38)} rss ${kib(m.rss).padStart(8)} KiB   heapUsed ${kib(m.heapUsed).padStart(8)} KiB   ` +
      `heapTotal ${kib(m.heapTotal).padStart(8)} KiB   external ${kib(m.external).padStart(7)} KiB`
    console.log(row('cold (no session yet)', cold.memory))
    console.log(row(`baseline (${WARM_SESSIONS} sessions opened, closed)`, baseline.memory))
    console.log(row(`${fmt(SESSIONS)} sessions open`, open.memory))
    const growth = open.memory.rss - baseline.memory.rss
    const perSession = growth / SESSIONS / 1024
    const perSessionCold = (open.memory.rss - cold.memory.rss) / SESSIONS / 1024
    const heapPerSession = (open.memory.heapUsed - baseline.memory.heapUsed) / SESSIONS / 1024
    console.log(`  opened in ${fmt(openSeconds, 1)} s (${fmt(SESSIONS / openSeconds)} sessions/s); ` +
      `/health active_sessions = ${health}`)
    console.log(`  RSS growth ${kib(growth)} KiB from the baseline = ${fmt(perSession, 1)} KiB per session ` +
      `(heapUsed ${fmt(heapPerSession, 1)} KiB per session); ` +
      `from cold ${kib(open.memory.rss - cold.memory.rss)} KiB = ${fmt(perSessionCold, 1)} KiB per session`)
    // Writing a heap snapshot takes far more memory than the sessions do: the RSS readings of such a run mean
    // nothing.
    const rssVerdict = (perKiB: number): string =>
      HEAP_SNAPSHOT ? 'n/a (heap snapshots were written)' : verdict(perKiB <= TARGET_KIB_PER_SESSION)
    summary.push(`  RSS per session    ${fmt(perSession, 1)} KiB  target <= ${TARGET_KIB_PER_SESSION} KiB  ` +
      `${rssVerdict(perSession)}` +
      `   (from cold: ${fmt(perSessionCold, 1)} KiB, ${rssVerdict(perSessionCold)}; /health active_sessions ${health})`)
    const met = perSession <= TARGET_KIB_PER_SESSION
    summaryLine(`MCP: RSS per session, ${fmt(SESSIONS)} open`, `${fmt(perSession, 1)} KiB (heapUsed ` +
      `${fmt(heapPerSession, 1)} KiB)`, { text: `<= ${TARGET_KIB_PER_SESSION} KiB`, met })
    markdown.push(`sessions: ${kib(baseline.memory.rss)} → ${kib(open.memory.rss)} KiB RSS, ` +
      `growth ${kib(growth)} KiB, ${fmt(perSession, 1)} KiB/session ` +
      `(${rssVerdict(perSession)}; from cold ${fmt(perSessionCold, 1)}), ` +
      `heapUsed ${fmt(heapPerSession, 1)} KiB/session, active_sessions ${health}`)
  }

  if (PHASES.has('load')) {
    const needed = Math.min(WHOAMI_SESSIONS, CONNECTIONS)
    if (sessionIds.length < needed) {
      const client = new McpClient(base, accessToken, OPEN_CONCURRENCY)
      sessionIds.push(...await client.openMany(needed - sessionIds.length, OPEN_CONCURRENCY))
      await client.agent.close()
    }
    const loadSessions = sessionIds.slice(0, needed)

    // One call first on each revision: the structuredContent must be /me's body exactly.
    const probeClient = new McpClient(base, accessToken, 1)
    const expect = JSON.stringify(identity)
    const probes = []
    for (const session of [loadSessions[0]!, undefined]) {
      const probe = await probeClient.whoami(session, 1)
      const structured = probe.message.result?.structuredContent
      if (!isDeepStrictEqual(structured, identity)) {
        throw new Error(`whoami's structuredContent ${JSON.stringify(structured)} is not /me's body ${me}`)
      }
      if (probe.message.result?.isError) throw new Error(`whoami answered a tool error: ${probe.raw}`)
      if (!probe.raw.includes(expect)) {
        throw new Error('the serialised structuredContent is not found verbatim in the answer')
      }
      probes.push(probe)
    }
    await probeClient.agent.close()

    const auth = { authorization: `Bearer ${accessToken}` }
    const whoami: Side = {
      name: `tools/call whoami ${PROTOCOL}`,
      opts: {
        url: `${base}/mcp`,
        method: 'POST',
        headers: { ...MCP_HEADERS, 'mcp-protocol-version': PROTOCOL, ...auth },
        // A fresh JSON-RPC id per request (autocannon's [<id>]): ids are per session and must not be reused.
        body: whoamiBody('[<id>]'),
        idReplacement: true
      },
      sessions: loadSessions,
      expect
    }
    const stateless: Side = {
      name: `tools/call whoami ${STATELESS}`,
      opts: {
        url: `${base}/mcp`,
        method: 'POST',
        headers: { ...MCP_HEADERS, ...STATELESS_HEADERS, ...auth },
        body: statelessWhoamiBody('[<id>]'),
        idReplacement: true
      },
      expect
    }
    const meSide: Side = {
      name: 'GET /public/v1/me',
      opts: { url: `${base}/public/v1/me`, headers: auth, expectBody: me }
    }
    const named = new Map<string, Side>([['whoami', whoami], ['stateless', stateless], ['me', meSide]])
    const sides = [...named].filter(([name]) => SIDES.has(name)).map(([, side]) => side)

    console.log('')
    const spread = loadSessions.length < CONNECTIONS ? 'shared by the connections in turn' : 'one per connection'
    console.log(`load: ${CONNECTIONS} connections, ${SECONDS} s per side in ${ROUNDS} alternating slice(s) ` +
      `(warm-up ${WARMUP} s each), autocannon in a process of its own; ` +
      `whoami over ${loadSessions.length} session(s) (${spread}), ${sessionIds.length} sessions open`)
    for (const [revision, probe] of [[PROTOCOL, probes[0]!], [STATELESS, probes[1]!]] as const) {
      const framing = probe.raw.startsWith('event:') || probe.raw.includes('\ndata:') ? 'SSE' : 'JSON'
      console.log(`  whoami answer, ${revision} (${framing}): ${probe.raw.trim().replace(/\n/g, '\\n')}`)
    }
    console.log(`  /me body: ${me}`)
    if (WARMUP > 0) {
      process.stdout.write('  warming up… ')
      for (const side of sides) figures(side, [await slice(side, WARMUP)], 0)
      process.stdout.write('done\n')
    }
    const perSlice = SECONDS / ROUNDS
    const raw = new Map<Side, RawResult[]>(sides.map(s => [s, []]))
    const cpuUsed = new Map<Side, number>(sides.map(s => [s, 0]))
    for (let round = 0; round < ROUNDS; round++) {
      const order = round % 2 === 0 ? sides : [...sides].reverse()
      const parts: string[] = []
      for (const side of order) {
        const before = await server.cpuMicros()
        const r = await slice(side, perSlice)
        cpuUsed.set(side, cpuUsed.get(side)! + await server.cpuMicros() - before)
        raw.get(side)!.push(r)
        parts.push(`${side.name} ${fmt(r.totalCompletedRequests / r.duration)} req/s`)
      }
      console.log(`  round ${round + 1}/${ROUNDS} (${fmt(perSlice, 1)} s each, ` +
        `load average ${loadavg()[0]!.toFixed(2)}): ${parts.join(', ')}`)
    }
    const results = new Map(sides.map(s => [s, figures(s, raw.get(s)!, cpuUsed.get(s)!)]))
    console.log('')
    const rows = [['side', 'req/s', 'p50 ms', 'p99 ms', 'requests', 'server CPU µs/req']]
    for (const [s, f] of results) {
      rows.push([s.name, fmt(f.rps), fmt(f.p50), fmt(f.p99), fmt(f.total), fmt(f.cpuPerRequest)])
    }
    printTable(rows)

    const after = await server.measure()
    if (after.sessions !== sessionIds.length) {
      throw new Error(`after the load the server counts ${after.sessions} sessions, expected ${sessionIds.length}`)
    }
    console.log(`  after the load: rss ${kib(after.memory.rss)} KiB, heapUsed ${kib(after.memory.heapUsed)} KiB, ` +
      `${after.sessions} sessions`)

    const m = results.get(meSide)
    for (const [side, revision] of [[whoami, PROTOCOL], [stateless, STATELESS]] as const) {
      const w = results.get(side)
      if (!w || !m) continue
      const ratio = w.rps / m.rps
      summary.push(`  ratio whoami ${revision} / me  ${ratio.toFixed(3)}  target >= ${TARGET_RATIO}  ` +
        `${verdict(ratio >= TARGET_RATIO)}` +
        `   (whoami ${fmt(w.rps)} req/s p50 ${w.p50} ms p99 ${w.p99} ms, ${fmt(w.cpuPerRequest)} µs/call; ` +
        `/me ${fmt(m.rps)} req/s p50 ${m.p50} ms p99 ${m.p99} ms, ${fmt(m.cpuPerRequest)} µs/req)`)
      summaryLine(`MCP: tools/call whoami ${revision} / GET /public/v1/me`, ratio.toFixed(3),
        { text: `>= ${TARGET_RATIO}`, met: ratio >= TARGET_RATIO })
      const cells = [revision, fmt(w.rps), w.p50, w.p99, fmt(w.cpuPerRequest), fmt(m.rps), m.p50, m.p99,
        fmt(m.cpuPerRequest), ratio.toFixed(3), verdict(ratio >= TARGET_RATIO)]
      markdown.push(`| ${cells.join(' | ')} |`)
    }
  }

  console.log('')
  console.log('summary:')
  for (const line of summary) console.log(line)
  console.log(`  total time ${fmt((Date.now() - started) / 1000, 0)} s`)
  if (markdown.length > 0) {
    console.log('')
    for (const line of markdown) console.log(`markdown: ${line}`)
  }
  if (CPU_PROF) console.log(`cpu profile: written to ${CPU_PROF} when the server exits`)
}

runBench(main)
