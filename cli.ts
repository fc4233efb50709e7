#!/usr/bin/env node
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { Command, CommanderError, InvalidArgumentError } from 'commander'
import { isRecordDate } from './lib/dates.js'
import { baseUrl } from './cli/base-url.js'
import { CommandError, MAX_BATCH } from './cli/events-client.js'
import { VERSION } from './lib/root.js'
import { StartupError, type SecretName } from './plugins/infrastructure/config/index.js'

// commander parses and answers --help, -h, `help [command]` and --version for every command and names unknown
// commands and options itself (docs/tooling.md#the-command-line-commander). Each action runs only after parsing
// succeeded, so `serve --help` or `migrate --help` print and do nothing else; the actions import the app themselves,
// so that help and usage errors answer without loading it.

/**
 * The service's configuration from the environment; a bad one prints what is wrong and exits. Only the service makes
 * development secrets (into DATA_DIR, on its first start).
 */
const serviceConfigOrExit = async () => (await import('./server.js')).loadConfigOrExit()
/**
 * The configuration of any other command: the development secrets it names are read from DATA_DIR, never made, so
 * that a command run away from the service's folder says where it looked instead of signing with secrets of its own
 * that the service refuses (plugins/infrastructure/config/index.ts, loadCommandConfig).
 */
async function commandConfigOrExit<N extends SecretName> (...needs: N[]) {
  const { loadConfigOrExit } = await import('./server.js')
  const { loadCommandConfig } = await import('./plugins/infrastructure/config/index.js')
  return loadConfigOrExit(env => loadCommandConfig(needs, env))
}

/** A user session token as the accounting system would issue it (HS256, aud user_session). */
async function userToken (options: { sub: string, org: string, entity: string[], ttl: number }): Promise<void> {
  const { signUserSession } = await import('./plugins/domain/auth/user-session.js')
  const config = await commandConfigOrExit('USER_SESSION_SECRET')
  const user = { sub: options.sub, orgRefId: options.org, entityRefIds: options.entity }
  process.stdout.write(signUserSession(config.userSessionSecret, user, options.ttl) + '\n')
}

/** A dashboard sign-in link for the user: valid 10 minutes, usable once (docs/dashboard.md). */
async function dashboardLink (options: { sub: string, org: string, entity: string[], url?: string }): Promise<void> {
  const { signInLink, signSignInToken } = await import('./plugins/domain/auth/sign-in-links.js')
  const config = await commandConfigOrExit('USER_SESSION_SECRET')
  const user = { sub: options.sub, orgRefId: options.org, entityRefIds: options.entity }
  const token = signSignInToken(config.userSessionSecret, user)
  process.stdout.write(signInLink(options.url ?? config.publicBaseUrl, token) + '\n')
}

async function openapi (options: { out?: string }): Promise<void> {
  const { buildApp } = await import('./app.js')
  const { loadConfig } = await import('./plugins/infrastructure/config/index.js')
  // The document depends only on the routes: build them on a throw-away in-memory database, listen nowhere.
  const dataDir = mkdtempSync(join(tmpdir(), 'mg-openapi-'))
  const env = { ...process.env, NODE_ENV: 'development', DATABASE_URL: undefined, DATA_DIR: dataDir }
  const app = await buildApp({ ...loadConfig(env), embeddedDataDir: 'memory://', logLevel: 'silent' })
  await app.ready()
  const doc = JSON.stringify(app.swagger(), null, 2) + '\n'
  await app.close()
  if (options.out) {
    try {
      writeFileSync(options.out, doc)
    } catch (err) {
      const e = err as NodeJS.ErrnoException
      throw new CommandError(e.code === 'ENOENT'
        ? `Cannot write ${options.out}: the folder ${dirname(resolve(options.out))} does not exist.`
        : `Cannot write ${options.out}: ${e.code ?? e.message}.`)
    }
    process.stderr.write(`wrote ${options.out}\n`)
  } else {
    process.stdout.write(doc)
  }
}

/** Where the running service listens: --url, or HOST and PORT of the configuration. */
const serviceBase = (config: { host: string, port: number }, url?: string): string =>
  url ?? `http://${config.host === '0.0.0.0' ? '127.0.0.1' : config.host}:${config.port}`

/** `events trigger`: what `stripe trigger` is to Stripe, a sample event through the real ingestion route. */
async function triggerEvent (
  topic: string,
  options: { org: string, entity: string, url?: string, data?: object }
): Promise<void> {
  const config = await commandConfigOrExit('EVENTS_TOKEN')
  const base = serviceBase(config, options.url)
  // A record topic's sample is the schema's example record in the topic's state, changed now (cli/sandbox.ts).
  const { sampleRecord } = await import('./cli/sandbox.js')
  const { RECORD_SAMPLES } = await import('./schemas/records.js')
  const data = options.data ?? sampleRecord(topic, RECORD_SAMPLES, new Date().toISOString()) ?? { sample: true }
  const { eventsClient } = await import('./cli/events-client.js')
  // A service that cannot be reached is one line naming the URL tried and the options (a CommandError).
  const answer = await eventsClient(base, config.eventsToken)(
    JSON.stringify({ topic, org_ref_id: options.org, entity_ref_id: options.entity, data }))
  process.stdout.write(answer.ok ? `202 ${JSON.stringify(answer.accepted[0])}\n` : `${answer.status} ${answer.body}\n`)
  if (!answer.ok) {
    const { refusalHint } = await import('./cli/events-client.js')
    const hint = refusalHint(answer).trim()
    if (hint) process.stderr.write(hint + '\n')
    process.exitCode = 1
  }
}

interface SeedCommandOptions {
  org: string
  entity: string
  customers: number
  invoices: number
  bills: number
  asOf?: string
  seed?: string
  url?: string
}

/** `sandbox seed`: realistic, deterministic records through the running service's POST /events. */
async function sandboxSeed (options: SeedCommandOptions, command: Command): Promise<void> {
  if (options.customers === 0 && options.invoices > 0) {
    command.error('error: invoices need customers: --customers must be at least 1 when --invoices is not 0',
      { exitCode: 2, code: 'sandbox.customers' })
  }
  const config = await commandConfigOrExit('EVENTS_TOKEN')
  const { seedSandbox } = await import('./cli/sandbox-seed.js')
  await seedSandbox({
    org: options.org,
    entity: options.entity,
    customers: options.customers,
    invoices: options.invoices,
    bills: options.bills,
    asOf: options.asOf ?? new Date().toISOString().slice(0, 10),
    ...(options.seed === undefined ? {} : { seed: options.seed }),
    base: serviceBase(config, options.url),
    token: config.eventsToken
  })
}

/** `events import`: a backfill from NDJSON, batched and resumable (cli/event-import.ts). */
async function importCommand (
  file: string,
  options: { batch: number, positionFile?: string, restart?: boolean, url?: string }
): Promise<void> {
  const config = await commandConfigOrExit('EVENTS_TOKEN')
  const { importEvents } = await import('./cli/event-import.js')
  await importEvents({
    file,
    base: serviceBase(config, options.url),
    token: config.eventsToken,
    batch: options.batch,
    positionFile: options.positionFile ?? `${file}.position`,
    restart: options.restart === true
  })
}

/** The operator's key switch: the same service call as the owner's route, for apps that have no owner. */
async function setClientKey (clientId: string, enabled: boolean): Promise<void> {
  const { buildApp } = await import('./app.js')
  const { ALL_SECRETS } = await import('./plugins/infrastructure/config/index.js')
  const config = await commandConfigOrExit(...ALL_SECRETS)
  const app = await buildApp({ ...config, webhookWorker: false, logLevel: 'warn' })
  await app.ready()
  try {
    const changed = await app.apps.setKeyEnabled(null, clientId, enabled)
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
  const { default: pino } = await import('pino')
  const { openDb } = await import('./plugins/infrastructure/db/index.js')
  const { migrate } = await import('./plugins/infrastructure/db/migrate.js')
  // Migrations need no secret: none is read, and none is made.
  const config = await commandConfigOrExit()
  const log = pino({ level: config.logLevel })
  const db = await openDb(config, log)
  try {
    const applied = await migrate(db)
    log.info({ applied }, applied.length ? 'migrations applied' : 'database is up to date')
  } finally {
    await db.close()
  }
}

/** Beyond the attempts' own bound, what a worker's close may take before it is cut short (exit 1). */
const WORKER_CLOSE_MARGIN_S = 10

/** A delivery worker without HTTP; SIGTERM drains attempts in flight, then exits. */
async function worker (): Promise<void> {
  const { buildWorker } = await import('./app.js')
  const { closeGracefully } = await import('./plugins/infrastructure/lifecycle.js')
  const { ALL_SECRETS } = await import('./plugins/infrastructure/config/index.js')
  const config = await commandConfigOrExit(...ALL_SECRETS)
  const app = await buildWorker(config)
  await app.ready()
  app.log.info({ worker: app.webhooks.workerStatus()?.id }, 'webhook worker started')
  // Closing waits for the attempts in flight, each bounded by its own time-out (and 2 s to record them); the bound
  // is for what else could hang a close after an uncaught error (a wedged database pool).
  closeGracefully(app, (config.webhookAttemptTimeoutSeconds + 2 + WORKER_CLOSE_MARGIN_S) * 1000)
}

const positiveInteger = (value: string): number => {
  if (!/^[1-9]\d*$/.test(value)) throw new InvalidArgumentError('Not a positive whole number of seconds.')
  return Number(value)
}
const wholeNumber = (max: number) => (value: string): number => {
  if (!/^(0|[1-9]\d*)$/.test(value) || Number(value) > max) {
    throw new InvalidArgumentError(`Not a whole number from 0 to ${max}.`)
  }
  return Number(value)
}
const batchSize = (value: string): number => {
  if (!/^[1-9]\d*$/.test(value) || Number(value) > MAX_BATCH) {
    throw new InvalidArgumentError(`Not a whole number from 1 to ${MAX_BATCH}.`)
  }
  return Number(value)
}
const day = (value: string): string => {
  if (!isRecordDate(value)) {
    throw new InvalidArgumentError('Not a date YYYY-MM-DD.')
  }
  return value
}
const entityList = (value: string, previous: string[] = []): string[] => {
  const entities = value.split(',').filter(Boolean)
  if (entities.length === 0) throw new InvalidArgumentError('No entity named.')
  return [...previous, ...entities]
}
const jsonObject = (value: string): object => {
  let parsed: unknown
  try {
    parsed = JSON.parse(value)
  } catch {
    throw new InvalidArgumentError('Not JSON.')
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) {
    throw new InvalidArgumentError('Not a JSON object.')
  }
  return parsed
}

const program = new Command('marketplace-gateway')
  .description('The public API, install lifecycle, webhooks and MCP endpoint of marketplace apps.')
  .version(VERSION, '-v, --version', 'print the version')
  .helpOption('-h, --help', 'print this help')
  .helpCommand('help [command]', 'print the help of a command')
  .showHelpAfterError('(run with --help for usage)')
  .exitOverride()
  .addHelpText('after',
    '\n`serve` starts the service (`npm start` runs it). Configuration comes from the environment: see README.md.')

program.command('serve')
  .description('run the service (what npm start runs)')
  .action(async () => {
    const { serve } = await import('./server.js')
    await serve(await serviceConfigOrExit())
  })

program.command('worker')
  .description('run only a webhook delivery worker, without HTTP (needs DATABASE_URL)')
  .action(worker)

program.command('migrate')
  .description('apply the database migrations and exit')
  .action(migrateCommand)

program.command('openapi')
  .description('write the OpenAPI document without listening')
  .option('--out <file>', 'write to this file instead of standard output')
  .action(openapi)

program.command('user-token')
  .description('sign a development user session token with USER_SESSION_SECRET (in development, the one the ' +
    'service made in DATA_DIR), as the accounting system would')
  .requiredOption('--sub <id>', 'the user id')
  .requiredOption('--org <org_ref_id>', 'the user\'s organisation')
  .requiredOption('--entity <entity_ref_id>', 'an entity the user may act on (repeat it, or separate with commas)',
    entityList)
  .option('--ttl <seconds>', 'lifetime of the token', positiveInteger, 43_200)
  .action(userToken)

program.command('dashboard-link')
  .description('print a link that signs the user in to the dashboard (valid 10 minutes, usable once), signed with ' +
    'USER_SESSION_SECRET')
  .requiredOption('--sub <id>', 'the user id')
  .requiredOption('--org <org_ref_id>', 'the user\'s organisation')
  .option('--entity <entity_ref_id>', 'an entity the user may act on (repeat it, or separate with commas)',
    entityList, [])
  .option('--url <base_url>', 'where the browser reaches the service (default: PUBLIC_BASE_URL)', baseUrl)
  .action(dashboardLink)

const events = program.command('events')
  .description('events of the accounting system')
events.command('trigger')
  .description('publish a sample event to the running service with EVENTS_TOKEN (in development, the one the ' +
    'service made in DATA_DIR), so that your subscriptions receive it')
  .argument('<topic>', 'the event topic, e.g. invoice.paid')
  .requiredOption('--org <org_ref_id>', 'the tenant\'s organisation')
  .requiredOption('--entity <entity_ref_id>', 'the tenant\'s entity')
  .option('--url <base_url>', 'where the service listens, e.g. http://127.0.0.1:3000 (default: http://HOST:PORT ' +
    'of the environment)', baseUrl)
  .option('--data <json>', 'the event\'s data, a JSON object (default: for a record topic, the example record ' +
    'in the topic\'s state, updated now)', jsonObject)
  .action(triggerEvent)
events.command('import')
  .description('send the events of an NDJSON file (one event a line, as POST /events takes it) to the running ' +
    'service in batches, with a progress bar and a position to continue from')
  .argument('<file>', 'the NDJSON file; blank lines are skipped')
  .option('--batch <n>', `events a request, 1 to ${MAX_BATCH}`, batchSize, MAX_BATCH)
  .option('--position-file <file>', 'where the position is kept (default: <file>.position)')
  .option('--restart', 'ignore the position: send the file from its first line')
  .option('--url <base_url>', 'where the service listens, e.g. http://127.0.0.1:3000 (default: http://HOST:PORT ' +
    'of the environment)', baseUrl)
  .addHelpText('after', `
After each batch the service accepted, the position (line and byte offset) is
written to the position file, and the next run continues after it. The first
batch the service refuses stops the import: each problem is named with its line
(events.ndjson:7: /data/total must equal subtotal + tax_total), nothing of that
batch is stored, and the position stays after the last batch that went in. Fix
the line and run the same command again. A line that is not JSON stops the
import before its batch is sent. Give every event an id (the producer's
idempotency key): a batch sent again after an interruption then changes nothing.`)
  .action(importCommand)

program.command('sandbox')
  .description('a tenant full of sample records, for trying the API')
  .command('seed')
  .description('send realistic, deterministic customers, invoices and bills (every status, a year of dates, ' +
    'some overdue, some paid late, several currencies) to the running service through POST /events, so that ' +
    'the read routes serve them and subscriptions receive them')
  .requiredOption('--org <org_ref_id>', 'the tenant\'s organisation')
  .requiredOption('--entity <entity_ref_id>', 'the tenant\'s entity')
  .option('--customers <n>', 'customers', wholeNumber(100_000), 50)
  .option('--invoices <n>', 'invoices', wholeNumber(1_000_000), 300)
  .option('--bills <n>', 'bills', wholeNumber(1_000_000), 150)
  .option('--as-of <date>', 'the records\' today, YYYY-MM-DD: documents are dated over the year before it ' +
    '(default: today, UTC)', day)
  .option('--seed <text>', 'another set of records of the same sizes (default: <org>/<entity>)')
  .option('--url <base_url>', 'where the service listens, e.g. http://127.0.0.1:3000 (default: http://HOST:PORT ' +
    'of the environment)', baseUrl)
  .addHelpText('after', `
The same options give the same records, byte for byte, and every event an id
derived from its content: running the command again with the same options
(--as-of included: it defaults to today) changes nothing.`)
  .action(sandboxSeed)

const clientKey = program.command('client-key')
  .description('the operator\'s switch for any app\'s API key, including clients that registered themselves ' +
    '(Dynamic Client Registration, metadata documents)')
clientKey.command('disable')
  .description('disable the app\'s API key: its tokens stop working at once')
  .argument('<client_id>')
  .action((clientId: string) => setClientKey(clientId, false))
clientKey.command('enable')
  .description('enable the app\'s API key again')
  .argument('<client_id>')
  .action((clientId: string) => setClientKey(clientId, true))

// With no command, the help: starting a server is what `serve` (and `npm start`) says, never a surprise.
const args = process.argv.slice(2)
program.parseAsync(args.length === 0 ? ['help'] : args, { from: 'user' }).catch((err: unknown) => {
  if (err instanceof CommanderError) {
    // commander has printed the help, the version or the error already; a usage error exits 2, as shells expect.
    process.exit(err.exitCode === 0 ? 0 : 2)
  }
  const plain = err instanceof StartupError || err instanceof CommandError
  process.stderr.write(plain ? `${(err as Error).message}\n` : `${(err as Error).stack ?? err}\n`)
  process.exit(1)
})
