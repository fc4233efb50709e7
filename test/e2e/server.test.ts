import { spawn } from 'node:child_process'
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { eventually, needsPostgres, postgresDatabase } from '../support/helper.js'
import { cli } from '../support/processes.js'

function start (env: Record<string, string>) {
  const child = spawn(...cli('serve'), {
    env: { ...process.env, DATABASE_URL: '', LOG_LEVEL: 'warn', PORT: '0', ...env },
    stdio: ['ignore', 'pipe', 'pipe']
  })
  let out = ''
  let err = ''
  child.stdout.on('data', d => {
    out += d
  })
  child.stderr.on('data', d => {
    err += d
  })
  const exited = new Promise<number | null>(resolve => child.on('exit', code => resolve(code)))
  return { child, exited, output: () => out, errors: () => err }
}

// Processes that each open the embedded database: past tap's 120 s on a loaded machine, beside other files.
t.setTimeout(300_000)

/** The first test's data directory and the client it registered, for the client-key test (no second start). */
const served = { dataDir: '', clientId: '' }

t.test('a fresh start on the embedded database: banner, health, graceful SIGTERM', async t => {
  const dataDir = served.dataDir = mkdtempSync(join(tmpdir(), 'mg-server-'))
  const started = performance.now()
  const s = start({ DATA_DIR: dataDir })
  t.teardown(() => {
    s.child.kill('SIGKILL')
  })
  const url = await eventually(() => s.output().match(/listening on (http:\/\/\S+)/)?.[1], { timeout: 60_000 })
    .catch(() => undefined)
  t.ok(url, `prints its URL (${s.errors()})`)
  const res = await fetch(`${url}/health`)
  t.comment(`first /health answered ${Math.round(performance.now() - started)} ms after spawn`)
  t.equal(res.status, 200)
  t.match(await res.json(), { status: 'ok', version: '0.7.0', active_sessions: 0 })
  t.match(s.output(), `${url}/docs`, 'points at the docs')
  t.match(s.output(), 'user-token', 'and at the next step')
  t.match(s.output(), `dev secrets     generated into ${join(dataDir, 'dev-secrets.json')} (`,
    'says the secrets were generated, and where')
  t.match(s.output(), /Made the Sandbox App[\s\S]*client_id\s+app_\S+\s+client_secret\s+mgs_\S+/,
    'made the sandbox app for the dashboard, with its credentials once')
  t.match(s.output(), /\/dashboard\/sign-in\?token=\S+/, 'and a dashboard sign-in link')
  t.equal((await fetch(`${url}/health/ready`)).status, 200)
  // A self-registered client, which only the command line can disable (the client-key test below).
  const registered = await fetch(`${url}/oauth/register`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ redirect_uris: ['http://127.0.0.1/cb'], token_endpoint_auth_method: 'none' })
  })
  t.equal(registered.status, 201, 'registers a client')
  served.clientId = ((await registered.json()) as { client_id: string }).client_id

  // One process per embedded database: a second service, and a command that changes data, are refused at once.
  const inUse = `The embedded database in ${join(dataDir, 'pglite')} is open in another process (pid ${s.child.pid})`
  const second = start({ DATA_DIR: dataDir })
  t.equal(await second.exited, 1, 'a second serve on the same DATA_DIR exits 1')
  t.match(second.errors(), inUse, 'naming the directory and the process')
  t.match(second.errors(), /use Postgres \(DATABASE_URL\)/, 'and what to do')
  t.notMatch(second.errors(), /\n\s+at /, 'one message, no stack trace')
  t.notMatch(second.output(), /listening on/, 'it never listened')
  const key = spawn(...cli('client-key', 'disable', served.clientId), {
    env: { ...process.env, DATABASE_URL: '', LOG_LEVEL: 'warn', DATA_DIR: dataDir },
    stdio: ['ignore', 'ignore', 'pipe']
  })
  let keyErr = ''
  key.stderr.on('data', d => { keyErr += d })
  t.equal(await new Promise(resolve => key.on('exit', resolve)), 1, 'client-key while the service runs exits 1')
  t.match(keyErr, inUse, 'saying why, rather than "no app with client_id"')
  t.equal((await fetch(`${url}/health`)).status, 200, 'the first service runs on, untouched')

  s.child.kill('SIGTERM')
  t.equal(await s.exited, 0, 'exits 0 on SIGTERM')
})

t.test('a bad variable stops the start and names it', async t => {
  const s = start({ DATA_DIR: mkdtempSync(join(tmpdir(), 'mg-server-')), PUBLIC_RATE_LIMIT: 'lots' })
  t.equal(await s.exited, 1)
  t.match(s.errors(), 'Invalid configuration: PUBLIC_RATE_LIMIT must be an integer')
})

t.test('a database that cannot be reached: one line naming DATABASE_URL, password masked, after bounded retries',
  async t => {
    const s = start({
      DATA_DIR: mkdtempSync(join(tmpdir(), 'mg-server-')),
      DATABASE_URL: 'postgres://app:hunter2@127.0.0.1:1/gateway',
      DATABASE_STARTUP_WAIT_SECONDS: '1'
    })
    t.equal(await s.exited, 1)
    const lines = s.errors().trim().split('\n')
    const masked = 'postgres:\\/\\/app:\\*\\*\\*@127\\.0\\.0\\.1:1\\/gateway'
    const cause = 'connect ECONNREFUSED 127\\.0\\.0\\.1:1, after \\d+ attempts'
    t.match(lines.at(-1), new RegExp(`^Cannot use the database at DATABASE_URL=${masked}: ${cause}\\.$`))
    t.notMatch(s.errors() + s.output(), 'hunter2', 'the password is never printed')
    t.notMatch(s.errors(), /\n\s+at /, 'no stack trace')
  })

t.test('the command line: user-token and migrate', async t => {
  const { execFileSync } = await import('node:child_process')
  const { loadConfig } = await import('../../plugins/infrastructure/config/index.js')
  const dataDir = mkdtempSync(join(tmpdir(), 'mg-cli-'))
  const run = (...args: string[]) =>
    execFileSync(...cli(...args), {
      env: { ...process.env, DATABASE_URL: '', DATA_DIR: dataDir, LOG_LEVEL: 'info' },
      encoding: 'utf8'
    })
  // A new embedded database starts from the cluster `npm install` prepared, migrated already; without one, the
  // command applies every migration. Either way, once migrated, again is nothing.
  const migrated = run('migrate')
  const { existsSync } = await import('node:fs')
  const { initialClusterFile } = await import('../../plugins/infrastructure/db/initial-cluster.js')
  if (existsSync(initialClusterFile())) {
    t.match(migrated, '"applied":[]', 'a new data directory starts from the prepared, migrated cluster')
  } else {
    t.match(migrated, /"applied":\["001_access.sql"/, 'applies the migrations')
  }
  t.match(run('migrate'), 'database is up to date', 'and only once')
  const { PGlite } = await import('@electric-sql/pglite')
  const db = await PGlite.create(join(dataDir, 'pglite'))
  const versions = (await db.query<{ version: string }>('select version from schema_migrations order by 1')).rows
  await db.close()
  const { readdirSync } = await import('node:fs')
  const { ROOT } = await import('../../lib/root.js')
  t.same(versions.map(v => v.version), readdirSync(join(ROOT, 'migrations')).sort(), 'every migration is in')
  t.same(readdirSync(dataDir), ['pglite'], 'migrate needs no secret, and makes none')

  // The secrets the service makes on its first start (loadConfig is its configuration), which user-token reads.
  const { userSessionSecret } = loadConfig({ DATA_DIR: dataDir })
  // Repeated and comma-separated entities, and a lifetime. (A missing --org is a usage error: test/e2e/cli.test.ts.)
  const token = run('user-token', '--sub', 'dev-1', '--org', 'org_a', '--entity', 'ent_1,ent_2', '--entity', 'ent_3',
    '--ttl', '60').trim()
  const { createVerifier } = await import('fast-jwt')
  const verify = createVerifier({
    key: userSessionSecret,
    algorithms: ['HS256'],
    allowedAud: 'user_session'
  })
  const claims = verify(token)
  t.match(
    claims,
    { sub: 'dev-1', org_ref_id: 'org_a', aud: 'user_session' },
    'signed with the configured secret, as the accounting system would'
  )
  t.same(claims.entity_ref_ids, ['ent_1', 'ent_2', 'ent_3'], 'takes repeated and comma-separated entities')
  t.equal(claims.exp - claims.iat, 60, '--ttl')
})

t.test('the command line: client-key disables a self-registered client, which has no owner to do it', async t => {
  const { execFileSync } = await import('node:child_process')
  const { loadConfig } = await import('../../plugins/infrastructure/config/index.js')
  const { buildApp } = await import('../../app.js')
  // The first test's service, stopped: its database holds a client registered over HTTP.
  const { dataDir, clientId } = served
  t.ok(clientId, 'the first test registered a client')
  const env = { DATABASE_URL: '', DATA_DIR: dataDir, LOG_LEVEL: 'silent', NODE_ENV: 'test' as const }

  const run = (...args: string[]) => execFileSync(...cli(...args), {
    env: { ...process.env, ...env }, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe']
  })
  t.same(JSON.parse(run('client-key', 'disable', clientId)), { client_id: clientId, api_key_enabled: false })
  t.throws(() => run('client-key', 'disable', 'app_nope'), 'an unknown client_id fails')

  const app = await buildApp({ ...loadConfig(env), webhookWorker: false })
  t.teardown(() => app.close())
  await app.ready()
  const token = await app.inject({
    method: 'POST',
    url: '/oauth/token',
    payload: { grant_type: 'refresh_token', refresh_token: 'x', client_id: clientId }
  })
  t.equal(token.statusCode, 401)
  t.same(token.json().error_description, "The app's API key is disabled.")
})

t.test('DATABASE_URL without a user name connects as the OS user, as libpq does, even with no USER set',
  { skip: needsPostgres }, async t => {
    const { spawnSync } = await import('node:child_process')
    const { userInfo } = await import('node:os')
    const url = new URL(await postgresDatabase(t))
    url.username = ''
    url.password = ''
    const env = {
      ...process.env,
      DATABASE_URL: url.toString(),
      DATA_DIR: mkdtempSync(join(tmpdir(), 'mg-cli-')),
      LOG_LEVEL: 'info',
      USER: undefined, // spawn leaves out a variable whose value is undefined
      PGUSER: undefined
    }
    const run = spawnSync(...cli('migrate'), { env, encoding: 'utf8' })
    const said = run.stdout + run.stderr
    t.notMatch(said, 'no PostgreSQL user name specified', 'a user name was sent')
    // Either the OS user is a role of this server (migrated), or the server names it in its refusal.
    t.ok(run.status === 0 || said.includes(`"${userInfo().username}"`), said.slice(-300))
  })
