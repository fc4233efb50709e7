import Fastify, { LogController, type FastifyInstance } from 'fastify'
import cookie from '@fastify/cookie'
import sensible from '@fastify/sensible'
import type { TypeBoxTypeProvider } from '@fastify/type-provider-typebox'
import { Ajv, type AnySchema } from 'ajv'
import addFormats from 'ajv-formats'
import configPlugin, { ConfigError, type Config } from './plugins/infrastructure/config/index.js'
import db from './plugins/infrastructure/db/index.js'
import errorsPlugin, { clientErrorHandler, errors, frameworkErrors } from './plugins/infrastructure/errors.js'
import { nestsDeeperThan } from './lib/json-depth.js'
import lifecycle from './plugins/infrastructure/lifecycle.js'
import metrics from './plugins/infrastructure/metrics.js'
import requestLog, { genReqId, loggerOptions } from './plugins/infrastructure/request-log.js'
import accessState from './plugins/domain/auth/access-state.js'
import accessTokens from './plugins/domain/auth/tokens.js'
import userSessions from './plugins/domain/auth/user-session.js'
import signInLinks from './plugins/domain/auth/sign-in-links.js'
import publicAuth from './plugins/domain/auth/public-auth.js'
import clientAuth from './plugins/domain/auth/client-auth.js'
import rateLimitStore from './plugins/infrastructure/rate-limit.js'
import apps from './plugins/domain/apps/index.js'
import installs from './plugins/domain/installs/index.js'
import records from './plugins/domain/records/index.js'
import reports from './plugins/domain/reports/index.js'
import oauth from './plugins/domain/oauth/index.js'
import openapi from './plugins/infrastructure/openapi.js'
import webhooks, { webhookTools } from './plugins/domain/webhooks/index.js'
import events from './plugins/domain/events/index.js'
import mcp from './plugins/domain/mcp/index.js'
import publicV1Routes from './routes/public/v1/index.js'
import oauthRoutes from './routes/oauth/index.js'
import appsRoutes from './routes/apps/index.js'
import installsRoutes from './routes/installs/index.js'
import healthRoutes from './routes/health/index.js'
import docsRoutes from './routes/docs/index.js'
import eventsRoutes from './routes/events/index.js'
import mcpRoutes from './routes/mcp/index.js'
import catalogRoutes from './routes/catalog/index.js'
import dashboardRoutes from './routes/dashboard/index.js'
import { BODY_LIMIT } from './lib/limits.js'
import { systemClock, type Clock } from './lib/clock.js'

/** Far deeper than any request needs; far shallower than what overflows the stack (thousands). */
const MAX_JSON_DEPTH = 64

export interface BuildOptions {
  /** Where log lines go (tests capture them); standard output by default. */
  logStream?: NodeJS.WritableStream
  /** Where the rules read the time (`app.clock`); the system clock by default, a hand-moved one in tests. */
  clock?: Clock
}

declare module 'fastify' {
  interface FastifyInstance {
    clock: Clock
  }
}

/**
 * Bodies are validated strictly (no coercion, unknown fields refused); path and query strings are coerced,
 * since they arrive as text.
 */
function validatorCompiler (): Parameters<FastifyInstance['setValidatorCompiler']>[0] {
  const make = (coerceTypes: boolean | 'array') => {
    const ajv = new Ajv({ coerceTypes, removeAdditional: false, useDefaults: true, allErrors: true, strict: false })
    addFormats.default(ajv)
    return ajv
  }
  const strict = make(false)
  const coercing = make('array')
  return ({ schema, httpPart }) => (httpPart === 'body' ? strict : coercing).compile(schema as AnySchema)
}

function createInstance (config: Config, opts: BuildOptions) {
  return Fastify({
    logger: loggerOptions(config.logLevel, opts.logStream),
    // plugins/infrastructure/request-log.ts writes the one line per request.
    logController: new LogController({ disableRequestLogging: true }),
    bodyLimit: BODY_LIMIT,
    requestIdHeader: false,
    genReqId,
    requestTimeout: 30_000,
    // The database plugin may wait for Postgres to come up (DATABASE_STARTUP_WAIT_SECONDS) before it resolves.
    pluginTimeout: (config.databaseStartupWaitSeconds + 20) * 1000,
    // While closing, requests still in the pipe are answered normally; /health/ready says 503 (routes/health).
    return503OnClosing: false,
    routerOptions: { maxParamLength: 256 },
    frameworkErrors,
    clientErrorHandler
  }).withTypeProvider<TypeBoxTypeProvider>()
}

/** Builds the service from its plugins and routes, without listening. */
export async function buildApp (config: Config, opts: BuildOptions = {}) {
  const app = createInstance(config, opts)
  app.decorate('clock', opts.clock ?? systemClock)
  app.setValidatorCompiler(validatorCompiler())
  // JSON everywhere (forms only on the OAuth routes): anything else is 415, not a string to validate.
  app.removeContentTypeParser('text/plain')
  // Some clients label even a bodiless DELETE as JSON; an empty body there means no body, not a malformed one.
  const json = app.getDefaultJsonParser('error', 'error')
  app.removeContentTypeParser('application/json')
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    if (body === '' && request.method === 'DELETE') return done(null, undefined)
    if (nestsDeeperThan(body as string, MAX_JSON_DEPTH)) return done(errors.nestingTooDeep(MAX_JSON_DEPTH), undefined)
    json(request, body as string, done)
  })

  // Infrastructure first, then the services, then the routes.
  await app.register(configPlugin, { config })
  await app.register(sensible)
  await app.register(errorsPlugin)
  await app.register(requestLog)
  // Before the plugins that close things: its preClose hook (stop accepting, let requests finish) runs first.
  await app.register(lifecycle)
  // Before the plugins that count into it.
  await app.register(metrics)
  await app.register(db)
  // The MCP registry before the plugins that add their tools and resources to it; after the database, where its
  // sessions are.
  await app.register(mcp)
  await app.register(openapi)
  await app.register(rateLimitStore)
  // Parses the Cookie header into request.cookies for the user session (and the pages' forms); sets the dashboard's.
  await app.register(cookie)
  await app.register(accessState)
  await app.register(accessTokens)
  await app.register(userSessions)
  await app.register(signInLinks)
  await app.register(installs)
  await app.register(publicAuth)
  await app.register(apps)
  await app.register(clientAuth)
  await app.register(oauth)
  await app.register(records)
  await app.register(reports)
  await app.register(webhooks)
  await app.register(webhookTools)
  // After the plugins it writes through: the records' ingest and the webhooks' fan-out.
  await app.register(events)

  await app.register(publicV1Routes, { prefix: '/public/v1' })
  await app.register(eventsRoutes)
  await app.register(oauthRoutes)
  await app.register(appsRoutes)
  await app.register(installsRoutes)
  await app.register(mcpRoutes)
  await app.register(catalogRoutes)
  await app.register(healthRoutes)
  await app.register(docsRoutes)
  await app.register(dashboardRoutes, { prefix: '/dashboard' })
  return app
}

export type AppInstance = Awaited<ReturnType<typeof buildApp>>

/**
 * A delivery worker on its own (`marketplace-gateway worker`): the database and the webhook plugins, no HTTP.
 * It shares the queue with every other worker through Postgres, so deliveries scale apart from the API.
 */
export async function buildWorker (config: Config, opts: BuildOptions = {}) {
  if (!config.databaseUrl) {
    throw new ConfigError(
      'DATABASE_URL',
      'is required by a separate worker: the embedded database belongs to one process'
    )
  }
  const app = createInstance({ ...config, webhookWorker: true }, opts)
  app.decorate('clock', opts.clock ?? systemClock)
  await app.register(configPlugin, { config: { ...config, webhookWorker: true } })
  await app.register(db)
  await app.register(webhooks)
  return app
}
