import { existsSync, mkdtempSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import t from 'tap'
import { loadCommandConfig, loadConfig } from '../../../../plugins/infrastructure/config/index.js'

const dataDir = () => mkdtempSync(join(tmpdir(), 'mg-config-'))

t.test('a bad value stops the start with a message naming the variable', async t => {
  const cases: Array<[Record<string, string>, RegExp]> = [
    [{ PORT: 'abc' }, /^Invalid configuration: PORT must be an integer from 0 to 65535 \(got "abc"\)$/],
    [{ PORT: '70000' }, /PORT must be an integer/],
    [{ DATABASE_URL: 'mysql://x' }, /DATABASE_URL must be a postgres:\/\/ connection string/],
    [{ PUBLIC_BASE_URL: 'not a url' }, /PUBLIC_BASE_URL must be an absolute http\(s\) URL/],
    [{ WEBHOOK_ALLOW_PRIVATE_TARGETS: 'yes' }, /WEBHOOK_ALLOW_PRIVATE_TARGETS must be true or false/],
    [{ LOG_LEVEL: 'loud' }, /LOG_LEVEL must be one of/],
    [{ WEBHOOK_RETRY_SCHEDULE: '5,x' }, /WEBHOOK_RETRY_SCHEDULE must be comma-separated seconds/],
    [{ TOKEN_SIGNING_KEY: 'not a pem' }, /TOKEN_SIGNING_KEY must be an RSA private key/],
    [{ WEBHOOK_SECRET_KEY: 'c2hvcnQ=' }, /WEBHOOK_SECRET_KEY must be 32 bytes/],
    [{ USER_SESSION_SECRET: 'short' }, /USER_SESSION_SECRET must be at least 32 characters/],
    [{ MCP_ALLOWED_ORIGINS: 'https://ok.example,ftp://x/y' }, /MCP_ALLOWED_ORIGINS/],
    [{ WEBHOOK_CA_FILE: '/nonexistent/ca.pem' }, /WEBHOOK_CA_FILE names a file that does not exist/]
  ]
  // One data directory for every case: the development secrets are generated once (an RSA key each time is
  // most of this file's time), and each case's own variable is what it is about.
  const dir = dataDir()
  for (const [env, message] of cases) {
    t.throws(() => loadConfig({ DATA_DIR: dir, ...env }), { name: 'ConfigError', message }, JSON.stringify(env))
  }
})

t.test('production refuses generated keys and the embedded database', async t => {
  t.throws(() => loadConfig({ NODE_ENV: 'production', DATA_DIR: dataDir(), DATABASE_URL: 'postgres://db/x' }),
    { message: /TOKEN_SIGNING_KEY is required in production/ })
  const dev = loadConfig({ DATA_DIR: dataDir() })
  const secrets = {
    TOKEN_SIGNING_KEY: dev.tokenSigningKey,
    USER_SESSION_SECRET: dev.userSessionSecret,
    WEBHOOK_SECRET_KEY: dev.webhookSecretKey.toString('hex'),
    EVENTS_TOKEN: dev.eventsToken
  }
  t.throws(() => loadConfig({ NODE_ENV: 'production', DATA_DIR: dataDir(), ...secrets }),
    { message: /DATABASE_URL is required in production/ })
  const required = { ...secrets, DATABASE_URL: 'postgres://db/x', PUBLIC_BASE_URL: 'https://gw.example' }
  t.throws(() => loadConfig({ NODE_ENV: 'production', DATA_DIR: dataDir(), ...required, PUBLIC_BASE_URL: '' }),
    { message: /^Invalid configuration: PUBLIC_BASE_URL is required in production/ })
  const prod = loadConfig({ NODE_ENV: 'production', DATA_DIR: dataDir(), ...required })
  t.same(prod.generatedSecrets, [])
  t.equal(prod.mcpBaseUrl, 'https://gw.example', 'MCP_BASE_URL defaults to PUBLIC_BASE_URL')
})

t.test('every problem is reported at once, and no secret or password is echoed', async t => {
  const err = t.throws(() => loadConfig({
    NODE_ENV: 'production',
    DATA_DIR: dataDir(),
    PORT: 'abc',
    USER_SESSION_SECRET: 'hunter2',
    REDIS_URL: 'http://user:s3cret@cache:6379'
  })) as Error
  t.equal(err.message.split('\n')[0], 'Invalid configuration (8 problems):')
  for (const variable of ['PORT', 'USER_SESSION_SECRET', 'REDIS_URL', 'TOKEN_SIGNING_KEY', 'WEBHOOK_SECRET_KEY',
    'EVENTS_TOKEN', 'DATABASE_URL', 'PUBLIC_BASE_URL']) {
    t.match(err.message, new RegExp(`\n  ${variable} `), `names ${variable}`)
  }
  t.notMatch(err.message, 'hunter2', 'a secret is described by its length only')
  t.notMatch(err.message, 's3cret', 'a URL is echoed without its password')
  t.match(err.message, 'USER_SESSION_SECRET must be at least 32 characters (got a value of 7 characters)')
})

t.test('a production start names every problem at once, those found from the values together too', async t => {
  const err = t.throws(() => loadConfig({
    NODE_ENV: 'production',
    DATA_DIR: dataDir(),
    DATABASE_URL: 'postgres://db/x',
    WEBHOOK_SECRET_KEY: 'c2hvcnQ=',
    TOKEN_SIGNING_KEY: 'not a pem',
    MCP_ALLOWED_ORIGINS: 'ftp://x/y',
    WEBHOOK_CA_FILE: '/nonexistent/ca.pem',
    WEBHOOK_LEASE_SECONDS: '5',
    PUBLIC_RATE_LIMIT: 'lots'
  })) as Error
  t.same(err.message.split('\n').map(line => line.trim().split(' ')[0]), [
    'Invalid', 'PUBLIC_BASE_URL', 'TOKEN_SIGNING_KEY', 'USER_SESSION_SECRET', 'WEBHOOK_SECRET_KEY', 'EVENTS_TOKEN',
    'WEBHOOK_CA_FILE', 'PUBLIC_RATE_LIMIT', 'WEBHOOK_LEASE_SECONDS', 'MCP_ALLOWED_ORIGINS'
  ], 'each variable once, in the table\'s order')
  const url = t.throws(() => loadConfig({ DATA_DIR: dataDir(), PUBLIC_BASE_URL: 'http://[x', PORT: 'x' })) as Error
  t.match(url.message, '  PUBLIC_BASE_URL does not make a URL ("http://[x")', 'a URL the pattern lets through')
})

t.test('a start that fails writes no development secrets', async t => {
  for (const env of [{ PORT: 'x' }, { NODE_ENV: 'prod' }, { WEBHOOK_CA_FILE: '/nonexistent/ca.pem' }]) {
    const dir = dataDir()
    t.throws(() => loadConfig({ DATA_DIR: dir, ...env }), { name: 'ConfigError' })
    t.same(readdirSync(dir), [], JSON.stringify(env))
  }
})

t.test('listening on every interface, the default URLs name localhost', async t => {
  const c = loadConfig({ DATA_DIR: dataDir(), HOST: '0.0.0.0', PORT: '8080' })
  t.equal(c.publicBaseUrl, 'http://localhost:8080')
  t.equal(c.mcpBaseUrl, 'http://localhost:8080')
})

t.test('development secrets are generated once and kept', async t => {
  const dir = dataDir()
  const a = loadConfig({ DATA_DIR: dir })
  const b = loadConfig({ DATA_DIR: dir })
  const all = ['TOKEN_SIGNING_KEY', 'USER_SESSION_SECRET', 'WEBHOOK_SECRET_KEY', 'EVENTS_TOKEN']
  t.same([a.generatedSecrets, a.storedSecrets], [all, []], 'the first start makes them')
  t.same([b.generatedSecrets, b.storedSecrets], [[], all], 'a restart reads them, and makes none')
  const c = loadConfig({ DATA_DIR: dir, EVENTS_TOKEN: 'x'.repeat(24) })
  t.same([c.generatedSecrets, c.storedSecrets, c.eventsToken], [[], all.slice(0, 3), 'x'.repeat(24)],
    'one that is set is not read')
  t.equal(a.tokenSigningKey, b.tokenSigningKey)
  t.equal(a.userSessionSecret, b.userSessionSecret)
  t.equal(a.webhookSecretKey.length, 32)
  t.equal(a.publicBaseUrl, 'http://127.0.0.1:3000')
  t.same(a.webhookRetrySchedule, [5, 300, 1800, 7200, 18000, 36000, 36000])
  t.same(a.mcpAllowedOrigins, ['http://127.0.0.1:3000'])
})

t.test('MCP_REQUEST_TIMEOUT_SECONDS: 30 by default, from 0.1 to 3600 seconds, decimals allowed', async t => {
  const dir = dataDir()
  t.equal(loadConfig({ DATA_DIR: dir }).mcpRequestTimeoutSeconds, 30)
  t.equal(loadConfig({ DATA_DIR: dir, MCP_REQUEST_TIMEOUT_SECONDS: '0.3' }).mcpRequestTimeoutSeconds, 0.3)
  for (const bad of ['0', '0.05', '3601', '1e3', '-1', 'x']) {
    t.throws(() => loadConfig({ DATA_DIR: dir, MCP_REQUEST_TIMEOUT_SECONDS: bad }),
      { name: 'ConfigError', message: /MCP_REQUEST_TIMEOUT_SECONDS must be/ }, bad)
  }
})

t.test('CLIENT_METADATA_TIMEOUT_SECONDS: 3 by default, from 0.1 to 60 seconds, decimals allowed', async t => {
  const dir = dataDir()
  t.equal(loadConfig({ DATA_DIR: dir }).clientMetadataTimeoutSeconds, 3)
  t.equal(loadConfig({ DATA_DIR: dir, CLIENT_METADATA_TIMEOUT_SECONDS: '0.5' }).clientMetadataTimeoutSeconds, 0.5)
  for (const bad of ['0', '0.0004', '61', '1e3', '-1', 'x']) {
    t.throws(() => loadConfig({ DATA_DIR: dir, CLIENT_METADATA_TIMEOUT_SECONDS: bad }),
      { name: 'ConfigError', message: /CLIENT_METADATA_TIMEOUT_SECONDS must be/ }, bad)
  }
})

t.test('the other commands only read development secrets, and say where they looked when there are none', async t => {
  const dir = dataDir()
  const missing = (names: string, them = 'it') => `No development secrets in DATA_DIR=${dir} (no dev-secrets.json ` +
    'there): only the service makes development secrets, on its first start (npm start). Run this command in the ' +
    `folder the service runs in, set DATA_DIR to the service's data folder, or set ${names} as the service has ${them}.`
  t.throws(() => loadCommandConfig(['EVENTS_TOKEN'], { DATA_DIR: dir }),
    { name: 'MissingSecretsError', message: missing('EVENTS_TOKEN') })
  const all = ['TOKEN_SIGNING_KEY', 'USER_SESSION_SECRET', 'WEBHOOK_SECRET_KEY', 'EVENTS_TOKEN'] as const
  t.throws(() => loadCommandConfig(all, { DATA_DIR: dir }),
    { message: missing('TOKEN_SIGNING_KEY, USER_SESSION_SECRET, WEBHOOK_SECRET_KEY and EVENTS_TOKEN', 'them') })
  t.same(readdirSync(dir), [], 'and write nothing')

  // A relative DATA_DIR is named resolved, as the command used it.
  const relativeDir = relative(process.cwd(), join(dir, 'elsewhere'))
  t.throws(() => loadCommandConfig(['USER_SESSION_SECRET'], { DATA_DIR: relativeDir }),
    { message: new RegExp(`^No development secrets in DATA_DIR=${join(dir, 'elsewhere')} `) })

  const token = 'e'.repeat(24)
  t.equal(loadCommandConfig(['EVENTS_TOKEN'], { DATA_DIR: dir, EVENTS_TOKEN: token }).eventsToken, token,
    'one that is set needs no file')
  t.match(loadCommandConfig([], { DATA_DIR: dir }), { port: 3000 }, 'a command that needs none runs without them')
  t.same(readdirSync(dir), [])

  const service = loadConfig({ DATA_DIR: dir })
  const command = loadCommandConfig(['USER_SESSION_SECRET', 'EVENTS_TOKEN'], { DATA_DIR: dir })
  t.same([command.userSessionSecret, command.eventsToken], [service.userSessionSecret, service.eventsToken],
    'once the service made them, a command reads the same ones')
  t.same(command.generatedSecrets, [])

  const file = join(dir, 'dev-secrets.json')
  const stored = JSON.parse(readFileSync(file, 'utf8')) as Record<string, string>
  writeFileSync(file, JSON.stringify({ ...stored, EVENTS_TOKEN: undefined }))
  t.throws(() => loadCommandConfig(['EVENTS_TOKEN'], { DATA_DIR: dir }),
    { message: new RegExp(`^No development EVENTS_TOKEN in ${file}: only the service makes`) }, 'one lacking')
  writeFileSync(file, JSON.stringify({ ...stored, USER_SESSION_SECRET: 'short' }))
  t.throws(() => loadCommandConfig(['USER_SESSION_SECRET'], { DATA_DIR: dir }), {
    name: 'ConfigError',
    message: `Invalid configuration: USER_SESSION_SECRET in ${file} must be at least 32 characters (got a value of ` +
      '5 characters)'
  }, 'a value edited by hand is checked as the variable would be')
  writeFileSync(file, '{"EVENTS_TOKEN": ')
  t.throws(() => loadCommandConfig(['EVENTS_TOKEN'], { DATA_DIR: dir }),
    { name: 'StartupError', message: new RegExp(`^${file} is not JSON \\(.*\\): restore it, or delete it`) })
  t.ok(existsSync(file))
})
