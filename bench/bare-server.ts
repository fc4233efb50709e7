/**
 * The baseline of bench/me.ts: a bare Fastify route in a process of its own, answering a constant JSON body, with
 * the service's logger settings and its one log line per request (plugins/request-log.ts) at the same LOG_LEVEL,
 * written to standard output as the service writes its own. Not meant to be run by hand: bench/me.ts starts it as
 *
 *   node --import tsx bench/bare-server.ts
 *
 * with PORT, LOG_LEVEL, BARE_PATH (the route) and BARE_BODY (the JSON it answers). `GET /health` answers 200.
 */
import Fastify, { LogController } from 'fastify'
import requestLog, { genReqId, loggerOptions } from '../plugins/request-log.js'

const { PORT, LOG_LEVEL, BARE_PATH, BARE_BODY } = process.env
if (!PORT || !LOG_LEVEL || !BARE_PATH || !BARE_BODY) {
  console.error('bench/bare-server.ts: run it from bench/me.ts (PORT, LOG_LEVEL, BARE_PATH, BARE_BODY)')
  process.exit(2)
}
const body: unknown = JSON.parse(BARE_BODY)

const app = Fastify({
  logger: loggerOptions(LOG_LEVEL),
  logController: new LogController({ disableRequestLogging: true }),
  requestIdHeader: false,
  genReqId
})
await app.register(requestLog)
app.get(BARE_PATH, async () => body)
app.get('/health', async () => ({ status: 'ok' }))
await app.listen({ host: '127.0.0.1', port: Number(PORT) })
process.once('SIGTERM', () => { app.close().then(() => process.exit(0), () => process.exit(1)) })
