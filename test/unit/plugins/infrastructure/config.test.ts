import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { loadConfig } from '../../../../plugins/infrastructure/config/index.js'

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

t.test('listening on every interface, the default URLs name localhost', async t => {
  const c = loadConfig({ DATA_DIR: dataDir(), HOST: '0.0.0.0', PORT: '8080' })
  t.equal(c.publicBaseUrl, 'http://localhost:8080')
  t.equal(c.mcpBaseUrl, 'http://localhost:8080')
})

t.test('development secrets are generated once and kept', async t => {
  const dir = dataDir()
  const a = loadConfig({ DATA_DIR: dir })
  const b = loadConfig({ DATA_DIR: dir })
  t.same(a.generatedSecrets, ['TOKEN_SIGNING_KEY', 'USER_SESSION_SECRET', 'WEBHOOK_SECRET_KEY', 'EVENTS_TOKEN'])
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
