/**
 * The baseline of bench/me.ts and bench/records.ts: a bare Fastify route in a process of its own, answering a
 * constant JSON body, with the service's logger settings and its one log line per request
 * (plugins/infrastructure/request-log.ts) at the same LOG_LEVEL, written to standard output as the service writes
 * its own. Not meant to be run by hand: the benchmarks start it as
 *
 *   node --import tsx bench/bare-server.ts
 *
 * with PORT, LOG_LEVEL, BARE_PATH (the route, a Fastify pattern such as `/orgs/:orgId/invoices`) and BARE_BODY (the
 * JSON it answers) or BARE_BODY_FILE (a file holding it, for bodies too large for the environment). With BARE_RAW=1
 * it sends the body's text as it is, as `application/json; charset=utf-8`, the way the service sends stored records;
 * otherwise it returns the parsed object, which Fastify serializes on every request, the way the service answers
 * /me. With BARE_PAGES_FILE instead (bench/dashboard.ts: a JSON array of HTML texts) it answers `GET /page/:n` with
 * the n-th text as `text/html; charset=utf-8`, the way the dashboard sends its pages. `GET /health` answers 200.
 */
import { readFileSync } from 'node:fs'
import Fastify, { LogController } from 'fastify'
import requestLog, { genReqId, loggerOptions } from '../plugins/infrastructure/request-log.js'

const { PORT, LOG_LEVEL, BARE_PATH, BARE_BODY_FILE, BARE_RAW, BARE_PAGES_FILE } = process.env
const BARE_BODY = BARE_BODY_FILE ? readFileSync(BARE_BODY_FILE, 'utf8') : process.env.BARE_BODY
if (!PORT || !LOG_LEVEL || (!BARE_PAGES_FILE && (!BARE_PATH || !BARE_BODY))) {
  console.error('bench/bare-server.ts: run it from bench/me.ts, bench/records.ts or bench/dashboard.ts (PORT, ' +
    'LOG_LEVEL, BARE_PATH and BARE_BODY or BARE_BODY_FILE, or BARE_PAGES_FILE)')
  process.exit(2)
}

const app = Fastify({
  logger: loggerOptions(LOG_LEVEL),
  logController: new LogController({ disableRequestLogging: true }),
  requestIdHeader: false,
  genReqId
})
await app.register(requestLog)
if (BARE_PAGES_FILE) {
  const pages = JSON.parse(readFileSync(BARE_PAGES_FILE, 'utf8')) as string[]
  app.get<{ Params: { n: string } }>('/page/:n', async (request, reply) =>
    reply.type('text/html; charset=utf-8').send(pages[Number(request.params.n)]))
} else if (BARE_RAW === '1') {
  app.get(BARE_PATH!, async (_request, reply) => reply.type('application/json; charset=utf-8').send(BARE_BODY))
} else {
  const body: unknown = JSON.parse(BARE_BODY!)
  app.get(BARE_PATH!, async () => body)
}
app.get('/health', async () => ({ status: 'ok' }))
await app.listen({ host: '127.0.0.1', port: Number(PORT) })
process.once('SIGTERM', () => { app.close().then(() => process.exit(0), () => process.exit(1)) })
