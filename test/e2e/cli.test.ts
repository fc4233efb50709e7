// The command line as a person meets it: help everywhere, the version, and usage errors that name what is wrong.
// Help must do nothing else: `serve --help` listens nowhere and `migrate --help` touches no database.
import { spawn } from 'node:child_process'
import { mkdtempSync, readdirSync, readFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import t, { type Test } from 'tap'
import { ROOT } from '../../lib/root.js'
import { needsPostgres, postgresDatabase } from '../support/helper.js'
import { cli } from '../support/processes.js'

// Some hundred CLI processes, a dozen at once: past tap's 120 s on a loaded machine.
t.setTimeout(300_000)

interface Run { code: number | null, stdout: string, stderr: string }

/** Runs the built CLI; a command that has not exited after 90 s (a server, say) is killed and fails. */
function runCli (args: string[], env: Record<string, string | undefined> = {}, cwd = ROOT): Promise<Run> {
  return new Promise(resolve => {
    const child = spawn(...cli(...args), {
      cwd,
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'pipe']
    })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', d => { stdout += d })
    child.stderr.on('data', d => { stderr += d })
    // Only a bound on a stuck command: a dozen of them start at once.
    const timer = setTimeout(() => child.kill('SIGKILL'), 90_000)
    child.on('exit', code => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr })
    })
  })
}

/** Every command a person can type, as its words. */
const COMMANDS = [
  ['serve'], ['worker'], ['migrate'], ['openapi'], ['user-token'],
  ['events'], ['events', 'trigger'], ['events', 'import'], ['sandbox'], ['sandbox', 'seed'],
  ['client-key'], ['client-key', 'disable'], ['client-key', 'enable']
]

const { version } = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { version: string }

/** A data directory, a port and (with the tests' Postgres) a fresh database: any real run of a command changes them. */
async function untouched (t: Test) {
  const dataDir = mkdtempSync(join(tmpdir(), 'mg-cli-help-'))
  const databaseUrl = needsPostgres ? undefined : await postgresDatabase(t)
  const tables = async (): Promise<number> => {
    if (!databaseUrl) return 0
    const c = new pg.Client({ connectionString: databaseUrl })
    await c.connect()
    const { rows } = await c.query("select count(*)::int as n from pg_tables where schemaname = 'public'")
    await c.end()
    return rows[0].n as number
  }
  return {
    env: { DATA_DIR: dataDir, DATABASE_URL: databaseUrl ?? '', PORT: '0', LOG_LEVEL: 'info' },
    changed: async () => ({ files: readdirSync(dataDir), tables: await tables() })
  }
}

t.test('--help, -h and help print each command\'s help and do nothing else', async t => {
  const state = await untouched(t)
  for (const words of COMMANDS) {
    const name = words.join(' ')
    // `help` is a command of the level it helps at: `help events`, `events help trigger`.
    const forms = [[...words, '--help'], [...words, '-h'], [...words.slice(0, -1), 'help', ...words.slice(-1)]]
    const [long, short, word] = await Promise.all(forms.map(args => runCli(args, state.env)))
    for (const [i, run] of [long!, short!, word!].entries()) {
      const typed = forms[i]!.join(' ')
      t.equal(run.code, 0, `${typed} exits 0`)
      t.match(run.stdout, new RegExp(`^Usage: marketplace-gateway ${name} `), `${typed} prints its usage`)
      t.notMatch(run.stdout + run.stderr, /is listening on|migrations applied|"level"/, 'and nothing else')
    }
    t.equal(short!.stdout, long!.stdout, `${name}: -h is --help`)
    t.equal(word!.stdout, long!.stdout, `${name}: ${forms[2]!.join(' ')} is --help`)
  }
  t.same(await state.changed(), { files: [], tables: 0 }, 'no data directory written, no table made')
})

t.test('the top-level help lists every command; --version prints the package version', async t => {
  const [long, short, word, v, V] = await Promise.all([
    runCli(['--help']), runCli(['-h']), runCli(['help']), runCli(['--version']), runCli(['-v'])
  ])
  t.equal(long.code, 0)
  t.match(long.stdout, /^Usage: marketplace-gateway \[options\] \[command\]/)
  for (const words of COMMANDS.filter(w => w.length === 1)) {
    t.match(long.stdout, new RegExp(`\\n  ${words[0]}\\b`), `lists ${words[0]}`)
  }
  t.equal(short.stdout, long.stdout, '-h')
  const state = await untouched(t)
  const bare = await runCli([], state.env)
  t.same([bare.code, bare.stdout], [0, long.stdout], 'no command: the help, not a server')
  t.same(await state.changed(), { files: [], tables: 0 }, 'and nothing was started or written')
  t.match(long.stdout, /`serve` starts the service/)
  t.equal(word.stdout, long.stdout, 'help')
  t.same([v.code, v.stdout, V.stdout], [0, `${version}\n`, `${version}\n`], `--version and -v print ${version}`)
})

t.test('usage errors name what is wrong, exit 2 and do nothing', async t => {
  const state = await untouched(t)
  const trigger = ['events', 'trigger', 'invoice.paid', '--org', 'o', '--entity', 'e']
  const seed = ['sandbox', 'seed', '--org', 'o', '--entity', 'e']
  const cases: Array<[string[], RegExp]> = [
    [['nope'], /^error: unknown command 'nope'/],
    [['--nope'], /^error: unknown option '--nope'/],
    [['serve', '--port', '3000'], /^error: unknown option '--port'/],
    [['migrate', '--dry-run'], /^error: unknown option '--dry-run'/],
    [['user-token', '--sub', 'u'], /^error: required option '--org <org_ref_id>' not specified/],
    [['user-token', '--sub', 'u', '--org', 'o', '--entity', 'e', '--ttl', '0'], /'--ttl <seconds>' argument '0'/],
    [['user-token', '--sub', 'u', '--org', 'o', '--entity', ','], /'--entity <entity_ref_id>' argument ','.*No entity/],
    [[...trigger, '--data', '[1'], /'--data <json>' argument '\[1' is invalid. Not JSON/],
    [[...trigger, '--data', '[1]'], /'--data <json>' argument '\[1\]' is invalid. Not a JSON object/],
    [['events', 'trigger', '--org', 'o', '--entity', 'e'], /^error: missing required argument 'topic'/],
    [['events', 'import'], /^error: missing required argument 'file'/],
    [['events', 'import', 'e.ndjson', '--batch', '101'], /'--batch <n>' argument '101' is invalid. Not a whole number/],
    [['events', 'import', 'e.ndjson', '--batch', '0'], /'--batch <n>' argument '0' is invalid/],
    [['sandbox', 'seed', '--org', 'o'], /^error: required option '--entity <entity_ref_id>' not specified/],
    [[...seed, '--invoices', '1.5'], /'--invoices <n>' argument '1.5' is invalid. Not a whole number from 0 to/],
    [[...seed, '--customers', 'lots'], /'--customers <n>' argument 'lots' is invalid/],
    [[...seed, '--as-of', '2026-02-30'], /'--as-of <date>' argument '2026-02-30' is invalid. Not a date YYYY-MM-DD/],
    [[...seed, '--customers', '0'], /^error: invoices need customers: --customers must be at least 1/],
    [['sandbox', 'plant'], /^error: unknown command 'plant'/],
    [['client-key', 'disable'], /^error: missing required argument 'client_id'/],
    [['client-key', 'pause', 'app_x'], /^error: unknown command 'pause'/],
    // A base URL without its scheme would reach fetch as a URL of the scheme `localhost:`.
    [[...trigger, '--url', 'localhost:3000'], new RegExp('^error: option \'--url <base_url>\' argument ' +
      '\'localhost:3000\' is invalid\\. Not a URL starting with http:// or https:// \\(did you mean ' +
      'http://localhost:3000\\?\\)\\.\\n')],
    [[...seed, '--url', '127.0.0.1:4000'], /argument '127\.0\.0\.1:4000' is invalid\. Not a URL starting with http/],
    [['events', 'import', 'e.ndjson', '--url', 'ftp://x'], /argument 'ftp:\/\/x' is invalid\. Not a URL starting/],
    [['dashboard-link', '--sub', 's', '--org', 'o', '--url', 'gw.example'], /argument 'gw\.example' is invalid/]
  ]
  const runs = await Promise.all(cases.map(([args]) => runCli(args, state.env)))
  for (const [i, run] of runs.entries()) {
    const [args, said] = cases[i]!
    t.equal(run.code, 2, `${args.join(' ')} exits 2`)
    t.match(run.stderr, said, `${args.join(' ')}: ${run.stderr.split('\n')[0]}`)
    t.equal(run.stdout, '', 'prints nothing on standard output')
  }
  t.same(await state.changed(), { files: [], tables: 0 }, 'no data directory written, no table made')
})

t.test('what goes wrong around a command is one line naming the cause, never a stack trace', async t => {
  const { createServer } = await import('node:net')
  const busy = createServer()
  await new Promise<void>(resolve => busy.listen(0, '127.0.0.1', resolve))
  t.teardown(() => busy.close())
  const port = (busy.address() as { port: number }).port
  const dataDir = mkdtempSync(join(tmpdir(), 'mg-cli-errors-'))
  const env = { DATA_DIR: dataDir, DATABASE_URL: '', HOST: '127.0.0.1', LOG_LEVEL: 'warn' }
  const missing = join(dataDir, 'no', 'such', 'folder', 'openapi.json')
  const [inUse, out] = await Promise.all([
    runCli(['serve'], { ...env, PORT: String(port) }),
    runCli(['openapi', '--out', missing], env)
  ])
  t.equal(inUse.code, 1, 'serve on a port in use exits 1')
  t.equal(inUse.stderr, `Port ${port} on 127.0.0.1 is in use by another process: stop it, or set PORT to a free ` +
    `port (PORT=${port + 1} npm start).\n`)
  t.equal(out.code, 1, 'openapi --out into a missing folder exits 1')
  t.equal(out.stderr, `Cannot write ${missing}: the folder ${join(dataDir, 'no', 'such', 'folder')} does not exist.\n`)
})

t.test('only serve makes development secrets: any other command without them says where it looked, in one line',
  async t => {
    // A folder that is not the service's, and no DATA_DIR: the commands look in ./data of where they run.
    const folder = mkdtempSync(join(tmpdir(), 'mg-cli-elsewhere-'))
    const env = {
      DATA_DIR: undefined,
      DATABASE_URL: '',
      TOKEN_SIGNING_KEY: undefined,
      USER_SESSION_SECRET: undefined,
      WEBHOOK_SECRET_KEY: undefined,
      EVENTS_TOKEN: undefined
    }
    const all = 'TOKEN_SIGNING_KEY, USER_SESSION_SECRET, WEBHOOK_SECRET_KEY and EVENTS_TOKEN as the service has them'
    const tenant = ['--org', 'o', '--entity', 'e']
    const cases: Array<[string[], string]> = [
      [['user-token', '--sub', 'u', ...tenant], 'USER_SESSION_SECRET as the service has it'],
      [['dashboard-link', '--sub', 'u', '--org', 'o'], 'USER_SESSION_SECRET as the service has it'],
      [['events', 'trigger', 'invoice.paid', ...tenant], 'EVENTS_TOKEN as the service has it'],
      [['events', 'import', 'e.ndjson'], 'EVENTS_TOKEN as the service has it'],
      [['sandbox', 'seed', ...tenant], 'EVENTS_TOKEN as the service has it'],
      [['client-key', 'disable', 'app_x'], all],
      [['worker'], all]
    ]
    const runs = await Promise.all(cases.map(([args]) => runCli(args, env, folder)))
    for (const [i, run] of runs.entries()) {
      const [args, set] = cases[i]!
      t.equal(run.code, 1, `${args.join(' ')} exits 1`)
      t.equal(run.stderr, `No development secrets in DATA_DIR=${join(folder, 'data')} (no dev-secrets.json there): ` +
        'only the service makes development secrets, on its first start (npm start). Run this command in the folder ' +
        `the service runs in, set DATA_DIR to the service's data folder, or set ${set}.\n`, args.join(' '))
      t.equal(run.stdout, '')
    }
    t.same(readdirSync(folder), [], 'and none of them wrote anything there')

    // What it says works: the variable set, the command goes on (here to the service it cannot reach).
    const token = await runCli(['user-token', '--sub', 'u', ...tenant], { ...env, USER_SESSION_SECRET: 's'.repeat(32) },
      folder)
    t.equal(token.code, 0, token.stderr)
    t.match(token.stdout, /^eyJ\S+\n$/, 'user-token signs with USER_SESSION_SECRET')
  })
