import { Type } from '@sinclair/typebox'
import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { errors } from '../../../../plugins/infrastructure/errors.js'
import { errorResponses, invalid, scopeError, TENANT_ERRORS } from '../../../../schemas/error-responses.js'
import { TenantParams } from '../../../../schemas/identity.js'
import { idParam, type ListArgs } from '../../../../schemas/records.js'
import { sendJson } from '../send-json.js'

const IfNoneMatch = Type.Object({
  'if-none-match': Type.Optional(Type.String({
    description: 'The ETag of the copy you hold: 304 without a body when the record has not changed since.',
    examples: ['"q1a0bHn0mWl0cB3cZk1zb4dQ4n2gB6X"']
  }))
})

const RECORD_HEADERS = {
  etag: Type.String({
    description: 'The entity tag of these bytes: send it as If-None-Match to ask again.',
    examples: ['"q1a0bHn0mWl0cB3cZk1zb4dQ4n2gB6X"']
  }),
  'cache-control': Type.String({ description: 'private, no-cache: a shared cache keeps no copy.' })
}

/** Whether `If-None-Match` names this entity tag (weak comparison, as RFC 9110 prescribes for it), or is `*`. */
function matches (header: string | undefined, etag: string): boolean {
  if (header === undefined) return false
  return header.split(',').some(t => {
    const tag = t.trim()
    return tag === '*' || tag.replace(/^W\//, '') === etag
  })
}

/**
 * The accounting read routes: for each record kind a list and a single record, each a call into its service
 * (plugins/domain/records), which answers the wire JSON text. The tenant and scope checks ran before (./index.ts).
 */
const records: FastifyPluginAsyncTypebox = async (app) => {
  for (const service of Object.values(app.records.services)) {
    const { kind } = service
    const tags = ['accounting']
    const scope = [kind.scope]
    const Name = kind.title
    const plural = kind.plural[0]!.toUpperCase() + kind.plural.slice(1)

    app.get(`/${kind.plural}`, {
      config: { scopes: scope },
      schema: {
        tags,
        operationId: `list${plural}`,
        summary: `List ${kind.plural}`,
        description: `Requires \`${kind.scope}\`. The tenant's ${kind.plural}, oldest change first (\`updated_at\`, ` +
          'then `id`), so that `updated_since` plus `cursor` is a complete incremental sync; `order=-updated_at` ' +
          'lists newest first. Pass `next_cursor` as `cursor`, with the same other parameters, for the next page; ' +
          'it is `null` on the last. Every record is exactly as the accounting system sent it. See docs/records.md.',
        params: TenantParams,
        querystring: kind.listQuery,
        response: {
          200: kind.page,
          ...errorResponses(
            ...TENANT_ERRORS,
            scopeError(kind.scope),
            invalid('querystring', '/limit', 'must be <= 100'),
            errors.invalidCursor()
          )
        }
      }
    }, async (request, reply) =>
      sendJson(reply, await service.list(request.principal!, request.query as ListArgs)))

    app.get(`/${kind.plural}/:id`, {
      config: { scopes: scope },
      schema: {
        tags,
        operationId: `get${Name}`,
        summary: `Get ${kind.name === 'invoice' ? 'an' : 'a'} ${kind.name}`,
        description: `Requires \`${kind.scope}\`. One ${kind.name} of the tenant, exactly as the accounting system ` +
          'sent it, with an `ETag`: send it back as `If-None-Match` to get 304 while it has not changed. An id ' +
          'the tenant does not have answers 404, whether or not another tenant has it.',
        params: Type.Object({ ...TenantParams.properties, id: idParam(kind.name, kind.exampleId) }),
        headers: IfNoneMatch,
        response: {
          // `headers` documents the response headers (@fastify/swagger moves them out of the body's schema).
          200: {
            ...kind.schema, 'x-response-description': `The ${kind.name}, as it was sent.`, headers: RECORD_HEADERS
          },
          304: Type.Null({ description: 'Not modified: the copy with this ETag is current.', headers: RECORD_HEADERS }),
          ...errorResponses(...TENANT_ERRORS, scopeError(kind.scope), errors.recordNotFound(Name))
        }
      }
    }, async (request, reply) => {
      const record = await service.get(request.principal!, request.params.id)
      reply.header('etag', record.etag).header('cache-control', 'private, no-cache')
      if (matches(request.headers['if-none-match'], record.etag)) return reply.code(304).send(undefined as never)
      return sendJson(reply, record.body)
    })
  }
}

export default records
