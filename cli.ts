#!/usr/bin/env node
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import pino from 'pino'
import { buildApp, buildWorker } from './app.js'
import { openDb } from './plugins/db/index.js'
import { migrate } from './plugins/db/migrate.js'
import { loadConfig, StartupError } from './plugins/config.js'
import { loadConfigOrExit, serve } from './server.js'
import { signUserSession } from './plugins/auth/user-session.js'

const USAGE = `Usage: marketplace-gateway <command> [options]

Commands:
  serve                              run the service (the default; same as npm start)
  worker                             run only a webhook delivery worker (needs DATABASE_URL)
  migrate                            apply database migrations and exit
  openapi [--out FILE]               write the OpenAPI document (default: stdout) without listening
  user-token --sub ID --org ORG --entity ENT [--entity ENT2 ...] [--ttl SECONDS]
                                     sign a development user session token with USER_SESSION_SECRET
  events trigger TOPIC --org ORG --entity ENT [--url URL] [--data JSON]
                                     publish a sample event to the running service with EVENTS_TOKEN
                                     (development: the generated one), so that your subscriptions get it
  client-key disable|enable CLIENT_ID
                                     disable or enable any app's API key, including clients that registered
                                     themselves (Dynamic Client Registration, metadata documents)

Configuration comes from the environment; see README.md.`

/** A user session token as the accounting system would issue it (HS256, aud user_session). */
function userToken (args: string[]): void {
  const { values } = parseArgs({
    args,
    options: {
      sub: { type: 'string' },
      org: { type: 'string' },
      entity: { type: 'string', multiple: true },
      ttl: { type: 'string', default: '43200' }
    }
  })
  if (!values.sub || !values.org || !values.entity?.length) {
    process.stderr.write('user-token needs --sub, --org and at least one --entity\n')
    process.exit(2)
  }
  const config = loadConfigOrExit()
  const user = { sub: values.sub, orgRefId: values.org, entityRefIds: values.entity.flatMap(e => e.split(',')) }
  process.stdout.write(signUserSession(config.userSessionSecret, user, Number(values.ttl)) + '\n')
}

async function openapi (args: string[]): Promise<void> {
  const { values } = parseArgs({ args, options: { out: { type: 'string' } } })
  // The document depends only on the routes: build them on a throw-away in-memory database, listen nowhere.
  const dataDir = mkdtempSync(join(tmpdir(), 'mg-openapi-'))
  const config = { ...loadConfig({ ...process.env, NODE_ENV: 'development', DATABASE_URL: undefined, DATA_DIR: dataDir }), embeddedDataDir: 'memory://', logLevel: 'silent' }
  const app = await buildApp(config)
  await app.ready()
  const doc = JSON.stringify(app.swagger(), null, 2) + '\n'
  await app.close()
  if (values.out) {
    writeFileSync(values.out, doc)
    process.stderr.write(`wrote ${values.out}\n`)
  } else {
    process.stdout.write(doc)
  }
}

const SAMPLE_DATA: Record<string, object> = {
  'invoice.paid': { invoice_id: 'inv_sample', amount: '125.00', currency: 'EUR', paid_at: '2026-01-01T12:00:00Z' },
  'bill.created': { bill_id: 'bill_sample', amount: '80.00', currency: 'EUR', supplier: 'Sample Supplies Ltd' }
}

/** `events trigger`: what `stripe trigger` is to Stripe, a sample event through the real ingestion route. */
async function eventsCommand (args: string[]): Promise<void> {
  const [sub, topic, ...more] = args
  const { values } = parseArgs({
    args: more,
    options: { org: { type: 'string' }, entity: { type: 'string' }, url: { type: 'string' }, data: { type: 'string' } }
  })
  if (sub !== 'trigger' || !topic || !values.org || !values.entity) {
    process.stderr.write(`events trigger needs a topic, --org and --entity\n\n${USAGE}\n`)
    process.exit(2)
  }
  const config = loadConfigOrExit()
  const base = values.url ?? `http://${config.host === '0.0.0.0' ? '127.0.0.1' : config.host}:${config.port}`
  const data = values.data ? JSON.parse(values.data) as object : (SAMPLE_DATA[topic] ?? { sample: true })
  const res = await fetch(`${base}/events`, {
    method: 'POST',
    headers: { authorization: `Bearer ${config.eventsToken}`, 'content-type': 'application/json' },
    body: JSON.stringify({ topic, org_ref_id: values.org, entity_ref_id: values.entity, data })
  })
  process.stdout.write(`${res.status} ${await res.text()}\n`)
  if (!res.ok) process.exitCode = 1
}

/** The operator's key switch: the same service call as the owner's route, for apps that have no owner. */
async function clientKey (args: string[]): Promise<void> {
  const [action, clientId] = args
  if ((action !== 'disable' && action !== 'enable') || !clientId || args.length !== 2) {
    process.stderr.write(`client-key needs disable or enable, and a client_id\n\n${USAGE}\n`)
    process.exit(2)
  }
  const app = await buildApp({ ...loadConfigOrExit(), webhookWorker: false, logLevel: 'warn' })
  await app.ready()
  try {
    const changed = await app.apps.setKeyEnabled(null, clientId, action === 'enable')
    if (!changed) {
      process.stderr.write(`no app with client_id ${JSON.stringify(clientId)}\n`)
      process.exitCode = 1
      return
    }
    process.stdout.write(JSON.stringify({ client_id: changed.clientId, api_key_enabled: changed.apiKeyEnabled }) + '\n')
  } finally {
    await app.close()
  }
}

async function migrateCommand (): Promise<void> {
  const config = loadConfigOrExit()
  const log = pino({ level: config.logLevel })
  const db = await openDb(config, log)
  try {
    const applied = await migrate(db)
    log.info({ applied }, applied.length ? 'migrations applied' : 'database is up to date')
  } finally {
    await db.close()
  }
}

/** A delivery worker without HTTP; SIGTERM drains attempts in flight, then exits. */
async function worker (): Promise<void> {
  const app = await buildWorker(loadConfigOrExit())
  await app.ready()
  app.log.info({ worker: app.webhooks.workerStatus()?.id }, 'webhook worker started')
  const stop = (): void => { app.close().then(() => process.exit(0), () => process.exit(1)) }
  process.once('SIGTERM', stop)
  process.once('SIGINT', stop)
}

const [command = 'serve', ...rest] = process.argv.slice(2)
const commands: Record<string, () => Promise<void> | void> = {
  serve: () => serve(loadConfigOrExit()),
  worker,
  migrate: migrateCommand,
  openapi: () => openapi(rest),
  'user-token': () => userToken(rest),
  'client-key': () => clientKey(rest),
  events: () => eventsCommand(rest),
  help: () => { process.stdout.write(USAGE + '\n') }
}
const run = commands[command]
if (!run) {
  process.stderr.write(`unknown command ${JSON.stringify(command)}\n\n${USAGE}\n`)
  process.exit(2)
}
Promise.resolve().then(run).catch(err => {
  if ((err as { code?: string }).code?.startsWith('ERR_PARSE_ARGS')) {
    process.stderr.write(`${(err as Error).message}\n\n${USAGE}\n`)
    process.exit(2)
  }
  process.stderr.write(err instanceof StartupError ? `${err.message}\n` : `${(err as Error).stack ?? err}\n`)
  process.exit(1)
})
