/**
 * The server side of bench/mcp.ts, in a process of its own so that RSS readings count the service and nothing of
 * the load generator. Not meant to be run by hand: bench/mcp.ts spawns it as
 *
 *   node --expose-gc --import tsx bench/mcp-server.ts
 *
 * with an IPC channel and these environment variables (DATABASE_URL is deliberately not used, so that
 * test/support/helper.ts, imported for `install()`, does not create a database of its own):
 *
 *   BENCH_SERVER_DATABASE_URL   the (fresh, empty) Postgres database of the run
 *   BENCH_SERVER_DATA_DIR       a temporary DATA_DIR (generated development secrets)
 *   BENCH_SERVER_LOG_LEVEL      LOG_LEVEL (lines are serialised, then dropped)
 *
 * It builds the real app (`buildApp`) with high rate limits, listens on 127.0.0.1, makes one install through the
 * public OAuth journey and sends {type: 'ready', port, accessToken, me} to the parent. Then it answers messages
 * {id, type} with {id, ...}:
 *
 *   measure    global.gc() several times with short pauses, then process.memoryUsage() and the number of sessions
 *   cpu        process.cpuUsage() and process.resourceUsage().maxRSS
 *   snapshot   v8.writeHeapSnapshot(path) (after the same GCs), answers the path
 *   close      app.close(), then exits
 */
import { Writable } from 'node:stream'
import { setTimeout as sleep } from 'node:timers/promises'
import { writeHeapSnapshot } from 'node:v8'
import { buildApp } from '../app.js'
import { loadConfig } from '../plugins/infrastructure/config/index.js'
import { install } from '../test/support/helper.js'

type Message = { id: number, type: 'measure' | 'cpu' | 'close' } | { id: number, type: 'snapshot', path: string }

const gc = (globalThis as { gc?: () => void }).gc
if (!gc || !process.send) {
  console.error('bench/mcp-server.ts: run it from bench/mcp.ts (needs --expose-gc and an IPC channel)')
  process.exit(2)
}
const send = (msg: unknown, then?: () => void): void => { process.send!(msg, undefined, undefined, then) }

/** Full GCs until the heap stops shrinking (at most 8), with pauses for finalizers and freed pages to settle. */
async function settle (): Promise<void> {
  let last = Infinity
  for (let i = 0; i < 8; i++) {
    gc!()
    await sleep(50)
    const used = process.memoryUsage().heapUsed
    if (i >= 3 && used >= last - 4096) break
    last = used
  }
  await sleep(200)
  gc!()
}

const databaseUrl = process.env.BENCH_SERVER_DATABASE_URL
const dataDir = process.env.BENCH_SERVER_DATA_DIR
if (!databaseUrl || !dataDir) throw new Error('BENCH_SERVER_DATABASE_URL and BENCH_SERVER_DATA_DIR are required')

const config = loadConfig({
  NODE_ENV: 'test',
  HOST: '127.0.0.1',
  DATA_DIR: dataDir,
  DATABASE_URL: databaseUrl,
  LOG_LEVEL: process.env.BENCH_SERVER_LOG_LEVEL ?? 'info',
  // The schema's maximum for each: the bench opens 1,000 sessions from one IP and calls far beyond 60 a minute.
  PUBLIC_RATE_LIMIT: '1000000',
  MCP_RATE_LIMIT_IP: '1000000',
  MCP_RATE_LIMIT_SESSION: '1000000'
})
const app = await buildApp(config, { logStream: new Writable({ write (_chunk, _encoding, cb) { cb() } }) })
await app.ready()
const installed = await install(app)
const probe = await app.inject({
  method: 'GET',
  url: '/public/v1/me',
  headers: { authorization: `Bearer ${installed.accessToken}` }
})
if (probe.statusCode !== 200) throw new Error(`GET /public/v1/me: ${probe.statusCode} ${probe.body}`)
await app.listen({ host: '127.0.0.1', port: 0 })
const address = app.server.address()
if (!address || typeof address === 'string') throw new Error('no TCP address')

/** Answers one message from the parent; a failure is sent back as `error`. */
async function answer (msg: Message): Promise<void> {
  try {
    switch (msg.type) {
      case 'measure':
        await settle()
        send({ id: msg.id, memory: process.memoryUsage(), sessions: app.mcp.activeSessions() })
        break
      case 'cpu':
        send({ id: msg.id, cpu: process.cpuUsage(), maxRss: process.resourceUsage().maxRSS })
        break
      case 'snapshot':
        await settle()
        send({ id: msg.id, path: writeHeapSnapshot(msg.path) })
        break
      case 'close':
        await shutdown()
        send({ id: msg.id }, () => process.exit(0))
        break
    }
  } catch (err) {
    send({ id: msg.id, error: String((err as Error)?.stack ?? err) })
  }
}
// Only a failure to send the error back can reject: as an unhandled rejection would, it ends the process.
process.on('message', (msg: Message) => {
  answer(msg).catch(err => { console.error('bench/mcp-server.ts:', err); process.exit(1) })
})
let closing: Promise<void> | undefined
const shutdown = (): Promise<void> => (closing ??= app.close())
// The parent went away without saying close: do not linger (whether or not the close went well).
process.on('disconnect', () => { shutdown().then(() => process.exit(0), () => process.exit(0)) })

send({ type: 'ready', port: address.port, accessToken: installed.accessToken, me: probe.body })
