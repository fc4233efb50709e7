import { randomUUID } from 'node:crypto'
import fp from 'fastify-plugin'
import type { FastifyServerOptions, RawRequestDefaultExpression } from 'fastify'

const SECRET_KEYS = [
  'authorization',
  'cookie',
  'client_secret',
  'signing_secret',
  'refresh_token',
  'access_token',
  'code',
  'code_verifier',
  'token',
  'password'
]
const SECRET_PARAMS = new Set([
  'code',
  'code_verifier',
  'client_secret',
  'refresh_token',
  'access_token',
  'token',
  'signing_secret'
])
const REQUEST_ID = /^[A-Za-z0-9._:-]{1,128}$/

function decodedName (raw: string): string {
  try {
    return decodeURIComponent(raw.replace(/\+/g, ' ')).toLowerCase()
  } catch {
    return raw.toLowerCase()
  }
}

/** A URL fit for a log line: secret query parameters replaced, however their names are encoded. */
export function redactUrl (url: string): string {
  const q = url.indexOf('?')
  if (q < 0) return url
  const pairs = url
    .slice(q + 1)
    .split('&')
    .map(pair => {
      const eq = pair.indexOf('=')
      const name = eq < 0 ? pair : pair.slice(0, eq)
      return SECRET_PARAMS.has(decodedName(name).replace(/=+$/, '')) ? `${name}=[REDACTED]` : pair
    })
  return `${url.slice(0, q)}?${pairs.join('&')}`
}

/**
 * Logger options for the server: JSON lines, and secrets redacted at the top level and one level down (where
 * request parts and errors put them). Deeper wildcards cost a fifth of a request's CPU (bench/me.ts profile)
 * and nothing the service logs nests secrets deeper. `code` is listed only under request parts, so that
 * `err.code` stays readable.
 */
export function loggerOptions (level: string, stream?: NodeJS.WritableStream): FastifyServerOptions['logger'] {
  const paths = SECRET_KEYS.flatMap(k =>
    k === 'code' ? ['body.code', 'query.code', 'req.body.code', 'req.query.code'] : [k, `*.${k}`, `req.headers.${k}`]
  )
  return {
    level,
    redact: { paths: [...paths, 'res.headers["set-cookie"]', 'err.params', 'err.parameters'], censor: '[REDACTED]' },
    serializers: {
      req: (req: { method: string, url: string, id: string }) => ({
        method: req.method,
        url: redactUrl(req.url),
        id: req.id
      })
    },
    ...(stream ? { stream } : {})
  } as FastifyServerOptions['logger']
}

/** Honours a sane incoming `x-request-id`; otherwise makes one. */
export function genReqId (req: RawRequestDefaultExpression): string {
  const incoming = req.headers['x-request-id']
  return typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : randomUUID()
}

/** One log line per request, and `x-request-id` on every answer. */
export default fp(
  async app => {
    app.addHook('onRequest', async (request, reply) => {
      reply.header('x-request-id', request.id)
    })
    app.addHook('onResponse', async (request, reply) => {
      request.log.info(
        {
          method: request.method,
          url: redactUrl(request.url),
          statusCode: reply.statusCode,
          ms: Math.round(reply.elapsedTime * 10) / 10
        },
        'request'
      )
    })
  },
  { name: 'request-log' }
)
