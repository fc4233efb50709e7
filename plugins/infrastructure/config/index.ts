import { existsSync } from 'node:fs'
import { join } from 'node:path'
import fp from 'fastify-plugin'
import { readVariables, valueProblem, VARIABLE_ENTRIES, type Problem } from './check.js'
import type { FieldName } from './kinds.js'
import { checkSigningKey, decodeKey32, DEV_SECRETS_FILE, generateDevSecrets, readDevSecrets } from './secrets.js'
import type { VARIABLES, VariableName, Variables } from './variables.js'

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

/** A command other than the service that needs development secrets the service has not made where it looks. */
export class MissingSecretsError extends StartupError {
  override name = 'MissingSecretsError'
}

/** The variables whose value is made up outside production: the development secrets. */
export type SecretName = {
  [V in VariableName]: (typeof VARIABLES)[V] extends { generate: () => string } ? V : never
}[VariableName]

/** The secrets as the configuration holds them, decoded. */
interface Secrets {
  tokenSigningKey: string
  userSessionSecret: string
  webhookSecretKey: Buffer
  eventsToken: string
}

/** The secrets made up outside production, in the table's order. */
const GENERATED = VARIABLE_ENTRIES.flatMap(([name, s]): Array<[SecretName, () => string]> =>
  s.generate ? [[name as SecretName, s.generate]] : [])
/** Every development secret: what the service and the commands that build the whole app need. */
export const ALL_SECRETS: readonly SecretName[] = GENERATED.map(([name]) => name)
/** What production refuses to start without, and why. */
const REQUIRED_IN_PRODUCTION: Array<[VariableName, string]> = [
  ...GENERATED.map(([name]): [VariableName, string] => [name, 'generated development keys are refused']),
  ...VARIABLE_ENTRIES.flatMap(([name, s]): Array<[VariableName, string]> =>
    s.requiredInProduction ? [[name, s.requiredInProduction]] : [])
]
const WILDCARD_HOSTS = new Set(['0.0.0.0', '::', '[::]'])

/** Problems in the table's order (a secret's from a file after the variable's own), each list to fix read top down. */
function inTableOrder (problems: Problem[]): Problem[] {
  const rank = (variable: string) => VARIABLE_ENTRIES.findIndex(([name]) => variable.split(' ')[0] === name)
  return problems.map((p, i) => ({ p, i })).sort((a, b) => rank(a.p[0]) - rank(b.p[0]) || a.i - b.i).map(x => x.p)
}

/** `A`, `A and B`, `A, B and C`. */
const listed = (names: readonly string[]): string =>
  names.length < 2 ? names.join('') : `${names.slice(0, -1).join(', ')} and ${names.at(-1)}`

/** The fields that are not a variable as it is and not a secret: URLs and lists computed from others. */
function derive (variables: Variables, problems: Problem[]) {
  const reported = (name: string) => problems.some(([v]) => v === name)
  const { host, port } = variables
  // Listening on every interface, the service is still reached as localhost from its own machine, not 0.0.0.0.
  const hostForUrl = WILDCARD_HOSTS.has(host) ? 'localhost' : host.includes(':') ? `[${host}]` : host
  const publicBaseUrl = (variables.publicBaseUrl ?? `http://${hostForUrl}:${port}`).replace(/\/+$/, '')
  // The MCP endpoint is served by this same service, so by default it is advertised at the same place.
  const mcpBaseUrl = (variables.mcpBaseUrl ?? publicBaseUrl).replace(/\/+$/, '')
  const origin = URL.canParse(mcpBaseUrl) ? new URL(mcpBaseUrl).origin : undefined
  if (origin === undefined) {
    const name = variables.mcpBaseUrl ? 'MCP_BASE_URL' : variables.publicBaseUrl ? 'PUBLIC_BASE_URL' : 'HOST'
    if (!reported(name)) problems.push([name, `does not make a URL (${JSON.stringify(mcpBaseUrl)})`])
  }
  const mcpAllowedOrigins = variables.mcpAllowedOrigins ?? (origin === undefined ? [] : [origin])
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
  return {
    publicBaseUrl,
    mcpBaseUrl,
    mcpAllowedOrigins,
    /** Where PGlite keeps its files; `memory://` keeps them in memory (tests). */
    embeddedDataDir: join(variables.dataDir, 'pglite')
  }
}

/**
 * The secrets among `values` decoded; each that cannot be is a problem, `where` says where it came from (` in
 * <file>`, or '' for the environment).
 */
function decodeSecrets (
  values: Partial<Record<SecretName, string>>, problems: Problem[], where = ''
): Partial<Secrets> {
  const decoded: Partial<Secrets> = {}
  for (const [name, value] of Object.entries(values) as Array<[SecretName, string]>) {
    const shape = where ? valueProblem(name, value) : undefined
    if (shape !== undefined) {
      problems.push([`${name}${where}`, shape])
    } else if (name === 'WEBHOOK_SECRET_KEY') {
      const key = decodeKey32(value)
      if (key) decoded.webhookSecretKey = key
      else problems.push([`${name}${where}`, 'must be 32 bytes, written in hex or base64'])
    } else if (name === 'TOKEN_SIGNING_KEY') {
      const key = checkSigningKey(value)
      if (Array.isArray(key)) problems.push([`${name}${where}`, key[1]])
      else decoded.tokenSigningKey = key
    } else {
      decoded[name === 'USER_SESSION_SECRET' ? 'userSessionSecret' : 'eventsToken'] = value
    }
  }
  return decoded
}

/** Where a command looks for the development secrets it needs. */
type SecretsSource = { generate: true } | { generate: false, needs: readonly SecretName[] }

/**
 * Reads and checks the environment; every problem is gathered before any file is written, and reported at once.
 * Then, outside production, the development secrets not set come from DATA_DIR/dev-secrets.json: made there when
 * `source.generate` (the service's start), only read otherwise.
 */
function load (env: Record<string, string | undefined>, source: SecretsSource) {
  const problems: Problem[] = []
  const { given, variables } = readVariables(env, problems)
  if (variables.nodeEnv === 'production') {
    for (const [name, why] of REQUIRED_IN_PRODUCTION) {
      if (given[name] === undefined && !problems.some(([v]) => v === name)) {
        problems.push([name, `is required in production (${why})`])
      }
    }
  }
  const derived = derive(variables, problems)
  const set: Partial<Record<SecretName, string>> = {}
  for (const [name] of GENERATED) if (given[name] !== undefined) set[name] = given[name]
  let secrets = decodeSecrets(set, problems)
  if (problems.length > 0) throw new ConfigError(inTableOrder(problems))

  // Only secrets that are not set at all come from DATA_DIR (a bad one is reported above); never in production,
  // which requires them all.
  const unset = GENERATED.filter(([name]) => set[name] === undefined)
  const file = join(variables.dataDir, DEV_SECRETS_FILE)
  let generated: SecretName[] = []
  let stored: SecretName[] = []
  if (unset.length > 0) {
    let values: Record<string, string> | undefined
    try {
      if (source.generate) {
        const made = generateDevSecrets(file, unset)
        values = made.values
        generated = made.generated as SecretName[]
      } else {
        values = readDevSecrets(file)
      }
    } catch (err) {
      throw new StartupError((err as Error).message)
    }
    const found = Object.fromEntries(unset.flatMap(([name]) =>
      values?.[name] === undefined ? [] : [[name, values[name]]])) as Partial<Record<SecretName, string>>
    stored = unset.map(([name]) => name).filter(name => found[name] !== undefined && !generated.includes(name))
    const absent = source.generate ? [] : source.needs.filter(name => set[name] === undefined && !found[name])
    if (absent.length > 0) {
      const where = values === undefined
        ? `No development secrets in DATA_DIR=${variables.dataDir} (no ${DEV_SECRETS_FILE} there)`
        : `No development ${listed(absent)} in ${file}`
      throw new MissingSecretsError(`${where}: only the service makes development secrets, on its first start ` +
        '(npm start). Run this command in the folder the service runs in, set DATA_DIR to the service\'s data ' +
        `folder, or set ${listed(absent)} as the service has ${absent.length === 1 ? 'it' : 'them'}.`)
    }
    secrets = { ...secrets, ...decodeSecrets(found, problems, ` in ${file}`) }
    if (problems.length > 0) throw new ConfigError(inTableOrder(problems))
  }
  return {
    ...variables,
    ...derived,
    ...secrets,
    /** Names of the development secrets this start made and wrote to DATA_DIR/dev-secrets.json. */
    generatedSecrets: generated as string[],
    /** Names of the development secrets read from DATA_DIR/dev-secrets.json, made by an earlier start. */
    storedSecrets: stored as string[]
  }
}

type Flat<T> = { [K in keyof T]: T[K] }
type Derived = ReturnType<typeof derive> & { generatedSecrets: string[], storedSecrets: string[] }

/** `app.config`: the variables' fields (config/variables.ts), the derived ones and the secrets in place of theirs. */
export type Config = Flat<Omit<Variables, keyof Derived | keyof Secrets> & Derived & Secrets & {
  /**
   * A dump of a data directory for PGlite to start from instead of creating one (tests: a migrated database made
   * once, since creating one costs seconds of CPU). Not from the environment.
   */
  embeddedSnapshot?: Blob
}>

/** The configuration of a command other than the service: only the secrets it named. */
export type CommandConfig<N extends SecretName> =
  Flat<Omit<Config, keyof Secrets> & Pick<Secrets, FieldName<N> & keyof Secrets>>

/**
 * The service's configuration (and the tests'): reads and checks the environment, throws one ConfigError that names
 * every bad or missing variable. Outside production, the secrets not set are made into DATA_DIR/dev-secrets.json on
 * the first start and read from there afterwards.
 */
export function loadConfig (env: Record<string, string | undefined> = process.env): Config {
  return load(env, { generate: true }) as Config
}

/**
 * The configuration of a command that works beside the service (user-token, events trigger, migrate…): the same
 * checks, but development secrets are only read from DATA_DIR, never made. A secret of `needs` that is neither set
 * nor there throws MissingSecretsError, one line naming DATA_DIR and what to do.
 */
export function loadCommandConfig<N extends SecretName> (
  needs: readonly N[],
  env: Record<string, string | undefined> = process.env
): CommandConfig<N> {
  return load(env, { generate: false, needs }) as CommandConfig<N>
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
