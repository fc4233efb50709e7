import { Decimal, Flag, Int, List, OneOf, Path, Text, Url, type Fields } from './kinds.js'
import { generateRandomSecret, generateSigningKey } from './secrets.js'

/**
 * Every environment variable the service reads, once: its type with default and bounds (checked at start), its
 * field in `app.config` (the variable's name in camelCase) and its documentation. The tables of variables in the
 * docs are generated from this one (config/docs.ts). Links in `doc` are relative to docs/.
 */
export const VARIABLES = {
  PORT: Int(0, 65_535, { default: '3000', doc: 'port to listen on' }),
  HOST: Text({ minLength: 1, description: 'a host name or IP address' }, {
    default: '127.0.0.1', doc: 'address to listen on; the image sets `0.0.0.0`'
  }),
  DATABASE_URL: Text({ pattern: '^postgres(ql)?://', description: 'a postgres:// connection string' }, {
    doc: 'unset: the embedded database (PGlite) in `DATA_DIR`. Required by a separate worker. Without a user name, ' +
      'the OS user (as libpq)',
    requiredInProduction: 'the embedded database is for development'
  }),
  DATABASE_STARTUP_WAIT_SECONDS: Int(0, 3_600, {
    default: '30', doc: 'how long a start retries a Postgres that is not up yet (containers start together)'
  }),
  DATA_DIR: Path({
    default: './data', doc: 'the embedded database; generated development secrets in `dev-secrets.json` (mode 0600)'
  }),
  PUBLIC_BASE_URL: Url({
    defaultDoc: '`http://HOST:PORT` (`localhost` for `0.0.0.0`/`::`)',
    doc: 'where clients reach the service: the token issuer (`iss`), OAuth metadata and the MCP endpoint',
    requiredInProduction: 'the URL clients reach the service at: token issuer, OAuth metadata and MCP endpoint'
  }),
  MCP_BASE_URL: Url({ defaultDoc: '`PUBLIC_BASE_URL`', doc: 'where the MCP endpoint is advertised' }),
  TOKEN_SIGNING_KEY: Text({ minLength: 1, description: 'an RSA private key of at least 2048 bits, PEM (PKCS#8)' }, {
    secret: true, generate: generateSigningKey, doc: 'signs access tokens; `\\n` escapes are accepted'
  }),
  USER_SESSION_SECRET: Text({ minLength: 32, description: 'at least 32 characters' }, {
    secret: true, generate: generateRandomSecret, doc: 'HS256 secret of the accounting system\'s user session tokens'
  }),
  WEBHOOK_SECRET_KEY: Text({ minLength: 1, description: '32 bytes, in hex, base64url or base64' }, {
    secret: true, generate: generateRandomSecret, doc: 'encrypts the webhook signing secrets (AES-256-GCM)'
  }),
  EVENTS_TOKEN: Text({ minLength: 24, description: 'at least 24 characters' }, {
    secret: true, generate: generateRandomSecret, doc: 'Bearer token of `POST /events`'
  }),
  REDIS_URL: Text({ pattern: '^rediss?://', description: 'a redis:// URL' }, {
    doc: '`redis://` or `rediss://`: rate-limit counters shared by instances; if Redis is down, limits fail open'
  }),
  WEBHOOK_ALLOW_PRIVATE_TARGETS: Flag({
    default: 'false',
    doc: 'allow loopback and private targets (the `https:` rule stays), for tests and local development; deliveries ' +
      'and the client metadata documents the OAuth server fetches'
  }),
  WEBHOOK_CA_FILE: Text({ minLength: 1, description: 'an existing file' }, {
    doc: 'an extra CA certificate trusted for deliveries and client metadata documents'
  }),
  ACCESS_TOKEN_MAX_LIFETIME: Int(60, 86_400, {
    default: '3600', doc: 'seconds: an access token whose `exp` − `iat` is longer is refused, whoever signed it'
  }),
  SHUTDOWN_DELAY_SECONDS: Int(0, 60, {
    default: '0',
    doc: 'after `SIGTERM`, how long new connections are still taken (readiness answers 503) before the listener ' +
      'closes ([operations.md](operations.md#shutdown))'
  }),
  PUBLIC_RATE_LIMIT: Int(1, 1_000_000, { default: '600', doc: 'requests a minute per install on `/public/v1`' }),
  MCP_RATE_LIMIT_IP: Int(1, 1_000_000, { default: '120', doc: 'requests a minute per client IP on `POST /mcp`' }),
  MCP_RATE_LIMIT_SESSION: Int(1, 1_000_000, {
    default: '60', doc: 'requests a minute per session on `POST /mcp`, or per install for stateless requests'
  }),
  MCP_SESSION_IDLE_MINUTES: Decimal('minutes', undefined, {
    default: '30', doc: 'an MCP session idle this long is closed'
  }),
  MCP_REQUEST_TIMEOUT_SECONDS: Decimal('seconds', { minimum: 0.1, maximum: 3_600 }, {
    default: '30', doc: 'an MCP request unanswered after this is answered with a JSON-RPC error and its resources freed'
  }),
  WEBHOOK_RETRY_SCHEDULE: List({ pattern: '^[0-9]+(,[0-9]+)*$', description: 'comma-separated seconds' }, Number, {
    default: '5,300,1800,7200,18000,36000,36000',
    doc: 'seconds before each retry; its length + 1 is the number of attempts'
  }),
  WEBHOOK_DISABLE_AFTER_FAILURES: Int(1, 1_000_000, {
    default: '20',
    doc: 'automatic disabling: failures in a row, and `WEBHOOK_DISABLE_AFTER_HOURS` (both must be reached)'
  }),
  WEBHOOK_DISABLE_AFTER_HOURS: Int(0, 1_000_000, {
    default: '24',
    doc: 'automatic disabling: hours failing, and `WEBHOOK_DISABLE_AFTER_FAILURES` (both must be reached)'
  }),
  WEBHOOK_WORKER: Flag({
    default: 'true',
    doc: 'run a delivery worker in this process (a separate `marketplace-gateway worker` may do it instead)'
  }),
  WEBHOOK_CONCURRENCY: Int(1, 1_000, {
    default: '128', doc: 'attempts a worker keeps in flight (sent or not yet recorded)'
  }),
  WEBHOOK_SUBSCRIPTION_MAX_IN_FLIGHT: Int(1, 1_000, {
    default: '16', doc: 'attempts one subscription may have in flight, all workers together'
  }),
  WEBHOOK_TENANT_MAX_IN_FLIGHT: Int(1, 100_000, {
    default: '32',
    doc: 'attempts one tenant (org and entity) may have in flight, all its subscriptions and all workers together'
  }),
  WEBHOOK_LEASE_SECONDS: Int(1, 3_600, {
    default: '60',
    doc: 'how long a claim lasts; a dead worker\'s deliveries are retried after it. Longer than the attempt time-out'
  }),
  WEBHOOK_ATTEMPT_TIMEOUT_SECONDS: Int(1, 20, {
    default: '15',
    // At most 20 s: a worker's stop waits for attempts in flight (time-out + 2 s) inside the 25 s shutdown bound.
    doc: 'how long one attempt may take in all (connecting: 5 s, or less when this is less); then it is a failure ' +
      '(`timeout`, or `connect_timeout`), retried on the schedule. At most 20: a worker\'s stop waits for ' +
      'attempts in flight within the 25 s shutdown'
  }),
  WEBHOOK_REPLAY_LIMIT: Int(1, 1_000_000, {
    default: '10000', doc: 'deliveries one replay request (`POST …/replay`) enqueues at most'
  }),
  MCP_ALLOWED_ORIGINS: List({ description: 'comma-separated origins, `scheme://host[:port]`' },
    text => text.trim() || undefined, {
      defaultDoc: 'origin of `MCP_BASE_URL`', doc: 'the `Origin`s a browser may call `/mcp` from'
    }),
  MCP_ALLOW_ANONYMOUS: Flag({
    default: 'false',
    doc: '`true`: `/mcp` without a token is an anonymous session (catalog browsing, conformance runs) instead of a 401'
  }),
  METRICS_TOKEN: Text({ minLength: 24, description: 'at least 24 characters' }, {
    secret: true,
    doc: 'Bearer token of `GET /metrics` (Prometheus); unset, `/metrics` is not served ([metrics.md](metrics.md))'
  }),
  LOGIN_URL: Url({
    doc: 'the accounting system\'s sign-in page: a browser without a session on the consent page goes there with ' +
      '`return_to`'
  }),
  REGISTRATION_RATE_LIMIT: Int(1, 1_000_000, {
    default: '120', doc: 'Dynamic Client Registrations (`POST /oauth/register`) a minute per client IP'
  }),
  CLIENT_METADATA_TIMEOUT_SECONDS: Decimal('seconds', { minimum: 0.1, maximum: 60 }, {
    default: '3', doc: 'how long fetching a Client ID Metadata Document may take, connection to last byte'
  }),
  LOG_LEVEL: OneOf(['fatal', 'error', 'warn', 'info', 'debug', 'trace', 'silent'], {
    default: 'info', doc: 'pino level; `info` writes one JSON line per request, secrets redacted'
  }),
  NODE_ENV: OneOf(['development', 'production', 'test'], {
    default: 'development',
    doc: '`production` refuses generated secrets, the embedded database and a missing `PUBLIC_BASE_URL`'
  }, 'development, production or test')
}

export type VariableName = keyof typeof VARIABLES

/** The configuration's fields that come from a variable as it is (decoded, defaulted). */
export type Variables = Fields<typeof VARIABLES>
