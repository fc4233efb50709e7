import { join } from 'node:path'
import { buildApp } from './app.js'
import { ensureDevelopmentSandbox } from './cli/dev-sandbox.js'
import { ConfigError, loadConfig, StartupError, type Config } from './plugins/infrastructure/config/index.js'
import { DEV_SECRETS_FILE } from './plugins/infrastructure/config/secrets.js'
import { closeGracefully } from './plugins/infrastructure/lifecycle.js'

// Longer than a delivery attempt's 15 s, which the worker lets finish; shorter than Kubernetes' default 30 s.
const SHUTDOWN_GRACE_MS = 25_000
/** The development user of the banner's examples. */
const BANNER_USER = { sub: 'dev-user', orgRefId: 'org_1', entityRefIds: ['ent_1'] }

export function newcomerBanner (
  config: Config, url: string, signInLink: string, sandbox: { clientId: string, clientSecret: string } | undefined
): string {
  const lines = [
    '',
    `marketplace-gateway is listening on ${url}`,
    `  health          ${url}/health`,
    `  API docs        ${url}/docs  (OpenAPI: ${url}/public/v1/openapi.json)`,
    `  MCP endpoint    ${config.mcpBaseUrl}/mcp  (an app's token works there when it asked for ` +
      `resource=${config.mcpBaseUrl}/mcp: docs/mcp.md)`,
    `  database        ${config.databaseUrl ? 'Postgres (DATABASE_URL)' : `embedded, in ${config.embeddedDataDir}`}`
  ]
  // "Generated" only on the start that made them; a restart reads the same file, which the commands read too.
  const secretsFile = join(config.dataDir, DEV_SECRETS_FILE)
  if (config.generatedSecrets.length > 0) {
    lines.push(`  dev secrets     generated into ${secretsFile} (${config.generatedSecrets.join(', ')})`)
  }
  if (config.storedSecrets.length > 0) {
    lines.push(`  dev secrets     from ${secretsFile} (${config.storedSecrets.join(', ')})`)
  }
  lines.push(
    '',
    'Next: sign a development user session and register an app; README.md walks through the whole install flow:',
    '  TOKEN=$(npx marketplace-gateway user-token --sub dev-user --org org_1 --entity ent_1)',
    `  curl -s ${url}/apps -H "Authorization: Bearer $TOKEN" -H 'content-type: application/json' \\`,
    '    -d \'{"slug":"my-app","name":"My App","redirect_uris":["https://example.com/callback"],"scopes":["invoices:read"]}\'',
    '',
    'Dashboard: open this sign-in link as dev-user of org_1 (valid 10 min, usable once; docs/dashboard.md); it shows',
    'dev-user\'s apps (the Sandbox App at first), their installs and webhook deliveries, and org_1\'s connected apps:',
    `  ${signInLink}`,
    '  a new one: npx marketplace-gateway dashboard-link --sub dev-user --org org_1 --entity ent_1',
    ''
  )
  if (sandbox) {
    lines.push(
      'Made the Sandbox App for dev-user, installed in org_1/ent_1. Its credentials, shown only now (they serve in',
      'README.md\'s journey like those of an app you register):',
      `  client_id     ${sandbox.clientId}`,
      `  client_secret ${sandbox.clientSecret}`,
      ''
    )
  }
  return lines.join('\n')
}

/** Config → app → listen, and a graceful stop on SIGTERM, SIGINT or an uncaught error. */
export async function serve (config: Config): Promise<void> {
  const app = await buildApp(config)
  // Readiness 503 and no new connections now, not after the other plugins' preClose hooks
  // (plugins/infrastructure/lifecycle.ts). The window for load balancers only on SIGTERM: SIGINT is a person at a
  // terminal, and after an uncaught error the sooner the process is gone the better.
  // The SIGTERM window (SHUTDOWN_DELAY_SECONDS) comes before the drain, so the bound makes room for it.
  const signals = closeGracefully(app, SHUTDOWN_GRACE_MS + config.shutdownDelaySeconds * 1000, signal =>
    app.lifecycle.drain(signal === 'SIGTERM' ? config.shutdownDelaySeconds * 1000 : 0))

  try {
    await app.listen({ port: config.port, host: config.host })
  } catch (err) {
    signals.uninstall()
    await app.close()
    const code = (err as NodeJS.ErrnoException).code
    if (code === 'EADDRINUSE') {
      throw new StartupError(`Port ${config.port} on ${config.host} is in use by another process: stop it, or set ` +
        `PORT to a free port (PORT=${config.port + 1} npm start).`)
    }
    if (code === 'EADDRNOTAVAIL' || code === 'EACCES') {
      throw new StartupError(`Cannot listen on ${config.host}:${config.port} (${code}): set HOST and PORT to an ` +
        'address of this machine and a port this user may open.')
    }
    throw err
  }
  const address = app.server.address()
  const port = typeof address === 'object' && address ? address.port : config.port
  const host = config.host.includes(':') ? `[${config.host}]` : config.host
  const url = `http://${host === '0.0.0.0' || host === '[::]' ? '127.0.0.1' : host}:${port}`
  if (config.nodeEnv !== 'production') {
    // The same user as the banner's user-token example, so that the apps they register show in the dashboard; on a
    // first start the sandbox app is theirs already, installed in their entity.
    const sandbox = await ensureDevelopmentSandbox(app, BANNER_USER)
    const link = app.signInLinks.issue(BANNER_USER)
    process.stdout.write(newcomerBanner(config, url, link, sandbox) + '\n')
  }
}

/** A configuration, or what is wrong with the environment printed and exit 1 (`load` is the service's by default). */
export function loadConfigOrExit<C = Config> (
  load: (env: Record<string, string | undefined>) => C = loadConfig as (env: Record<string, string | undefined>) => C,
  env: Record<string, string | undefined> = process.env
): C {
  try {
    return load(env)
  } catch (err) {
    if (err instanceof ConfigError) {
      process.stderr.write(err.message + '\n')
      process.exit(1)
    }
    throw err
  }
}
