import { existsSync } from 'node:fs'
import { join } from 'node:path'
import fp from 'fastify-plugin'
import { readVariables, VARIABLE_ENTRIES, type Problem } from './check.js'
import { checkSigningKey, decodeKey32, loadOrGenerateSecrets } from './secrets.js'
import type { VariableName, Variables } from './variables.js'

export { maskUrl } from './check.js'

/** A start that cannot go on, with a message for the operator and no stack trace (cli.ts prints only the message). */
export class StartupError extends Error {
  override name = 'StartupError'
}

/** Every problem with the environment, reported at once: one start, one list to fix. */
export class ConfigError extends StartupError {
  override name = 'ConfigError'
  readonly problems: Problem[]
  constructor (variable: string | Problem[], problem = '') {
    const problems: Problem[] = typeof variable === 'string' ? [[variable, problem]] : variable
    super(problems.length === 1
      ? `Invalid configuration: ${problems[0]![0]} ${problems[0]![1]}`
      : `Invalid configuration (${problems.length} problems):\n` + problems.map(([v, p]) => `  ${v} ${p}`).join('\n'))
    this.problems = problems
  }
}

/** The secrets made up outside production, in the table's order. */
const GENERATED = VARIABLE_ENTRIES.flatMap(([name, s]): Array<[VariableName, () => string]> =>
  s.generate ? [[name, s.generate]] : [])
/** What production refuses to start without, and why. */
const REQUIRED_IN_PRODUCTION: Array<[VariableName, string]> = [
  ...GENERATED.map(([name]): [VariableName, string] => [name, 'generated development keys are refused']),
  ...VARIABLE_ENTRIES.flatMap(([name, s]): Array<[VariableName, string]> =>
    s.requiredInProduction ? [[name, s.requiredInProduction]] : [])
]
const WILDCARD_HOSTS = new Set(['0.0.0.0', '::', '[::]'])

/** The fields that are not a variable as it is: secrets generated or decoded, URLs and lists computed from others. */
function derive (
  variables: Variables,
  given: Partial<Record<VariableName, string>>,
  env: Record<string, string | undefined>,
  problems: Problem[]
) {
  const reported = (name: string) => problems.some(([v]) => v === name)
  const missing = GENERATED.filter(([name]) => given[name] === undefined)
  // Only secrets that are not set at all are generated; one set to a bad value is reported already.
  const generated = loadOrGenerateSecrets(variables.dataDir, missing.filter(([name]) => !env[name]))
  const secret = (name: VariableName): string => given[name] ?? generated[name] ?? ''

  const webhookSecretKey = decodeKey32(secret('WEBHOOK_SECRET_KEY'))
  if (!webhookSecretKey && !reported('WEBHOOK_SECRET_KEY')) {
    problems.push(['WEBHOOK_SECRET_KEY', 'must be 32 bytes, written in hex or base64'])
  }
  const tokenSigningKey = checkSigningKey(secret('TOKEN_SIGNING_KEY'))
  if (Array.isArray(tokenSigningKey) && !reported('TOKEN_SIGNING_KEY')) problems.push(tokenSigningKey)

  const { host, port } = variables
  // Listening on every interface, the service is still reached as localhost from its own machine, not 0.0.0.0.
  const hostForUrl = WILDCARD_HOSTS.has(host) ? 'localhost' : host.includes(':') ? `[${host}]` : host
  const publicBaseUrl = (variables.publicBaseUrl ?? `http://${hostForUrl}:${port}`).replace(/\/+$/, '')
  // The MCP endpoint is served by this same service, so by default it is advertised at the same place.
  const mcpBaseUrl = (variables.mcpBaseUrl ?? publicBaseUrl).replace(/\/+$/, '')
  const mcpAllowedOrigins = variables.mcpAllowedOrigins ?? [new URL(mcpBaseUrl).origin]
  const badOrigin = mcpAllowedOrigins.find(origin => !/^https?:\/\/[^/\s]+$/.test(origin))
  if (badOrigin !== undefined) {
    problems.push(['MCP_ALLOWED_ORIGINS', `must list origins like https://host:port (got ${JSON.stringify(badOrigin)})`])
  }
  const { webhookCaFile: caFile, webhookLeaseSeconds: lease, webhookAttemptTimeoutSeconds: attempt } = variables
  if (caFile && !existsSync(caFile)) {
    problems.push(['WEBHOOK_CA_FILE', `names a file that does not exist (${JSON.stringify(caFile)})`])
  }
  // A claim that expires while its attempt still runs hands the delivery to another worker: a second send.
  if (!reported('WEBHOOK_LEASE_SECONDS') && !reported('WEBHOOK_ATTEMPT_TIMEOUT_SECONDS') && lease <= attempt) {
    problems.push(['WEBHOOK_LEASE_SECONDS',
      `must be longer than WEBHOOK_ATTEMPT_TIMEOUT_SECONDS (${attempt}) (got ${lease})`])
  }
  if (problems.length > 0 || !webhookSecretKey || Array.isArray(tokenSigningKey)) throw new ConfigError(problems)

  return {
    publicBaseUrl,
    mcpBaseUrl,
    mcpAllowedOrigins,
    tokenSigningKey,
    userSessionSecret: secret('USER_SESSION_SECRET'),
    webhookSecretKey,
    eventsToken: secret('EVENTS_TOKEN'),
    /** Where PGlite keeps its files; `memory://` keeps them in memory (tests). */
    embeddedDataDir: join(variables.dataDir, 'pglite'),
    /** Names of the secrets that were generated into DATA_DIR rather than configured. */
    generatedSecrets: missing.map(([name]): string => name)
  }
}

type Derived = ReturnType<typeof derive>
type Flat<T> = { [K in keyof T]: T[K] }

/** `app.config`: the variables' fields (config/variables.ts), with the derived ones in place of theirs. */
export type Config = Flat<Omit<Variables, keyof Derived> & Derived & {
  /**
   * A dump of a data directory for PGlite to start from instead of creating one (tests: a migrated database made
   * once, since creating one costs seconds of CPU). Not from the environment.
   */
  embeddedSnapshot?: Blob
}>

/** Reads and checks the environment. Throws one ConfigError that names every bad or missing variable. */
export function loadConfig (env: Record<string, string | undefined> = process.env): Config {
  const problems: Problem[] = []
  const { given, variables } = readVariables(env, problems)
  if (variables.nodeEnv === 'production') {
    for (const [name, why] of REQUIRED_IN_PRODUCTION) {
      if (given[name] === undefined && !problems.some(([v]) => v === name)) {
        problems.push([name, `is required in production (${why})`])
      }
    }
    if (problems.length > 0) throw new ConfigError(problems)
  }
  return { ...variables, ...derive(variables, given, env, problems) }
}

declare module 'fastify' {
  interface FastifyInstance {
    config: Config
  }
}

/** Decorates the already-checked configuration as `app.config`. */
export default fp<{ config: Config }>(
  async (app, opts) => {
    app.decorate('config', opts.config)
  },
  { name: 'config' }
)
