import { Type } from '@sinclair/typebox'
import type { FastifyInstance } from 'fastify'
import { READ_ONLY } from '../common/tool-annotations.js'
import type { RecordService } from './service.js'

const PAGING = 'Pages hold up to limit records (default 50, at most 100), oldest change first (updated_at, then id; ' +
  'order "-updated_at" for newest first). When next_cursor is not null, call again with cursor set to it and the ' +
  'same other arguments for the next page; null means there is no more. For what changed since a sync, pass ' +
  'updated_since. Money is a decimal string with the currency\'s minor digits ("1250.00" EUR, "1250" JPY): read ' +
  'it as a decimal, never as a float. Dates are YYYY-MM-DD, instants ISO 8601 UTC.'

/** The list and get tools of one record aggregate: the same arguments and the same JSON as its REST routes. */
export function addRecordTools (mcp: FastifyInstance['mcp'], service: RecordService): void {
  const { kind } = service
  const filters = kind.document
    ? ` Filter by status, ${kind.document.filter}, due_before (YYYY-MM-DD, exclusive; with status "authorised" ` +
      'it finds what is overdue).'
    : ' Filter by status (active, archived).'
  const common = { annotations: READ_ONLY, requiredScopes: [kind.scope], public: false, tags: ['accounting'] }

  mcp.addTool({
    ...common,
    name: `list_${kind.plural}`,
    title: `List ${kind.plural}`,
    description: `The ${kind.plural} of the token's tenant, as GET .../${kind.plural}. Requires ${kind.scope}.` +
      `${filters} ${PAGING}`,
    inputSchema: kind.listQuery,
    outputSchema: kind.page
  }, async (args, p) => JSON.parse(await service.list(p, args)))

  const idArg = `${kind.name}_id`
  mcp.addTool({
    ...common,
    name: `get_${kind.name}`,
    title: `Get ${kind.name === 'invoice' ? 'an' : 'a'} ${kind.name}`,
    description: `One ${kind.name} of the token's tenant by its id, as GET .../${kind.plural}/{id}. Requires ` +
      `${kind.scope}. An id the tenant does not have is a not_found error. Money is a decimal string with the ` +
      'currency\'s minor digits: read it as a decimal, never as a float.',
    inputSchema: Type.Object({
      [idArg]: Type.String({ minLength: 1, maxLength: 200, description: `The ${kind.name} id (id in the list).` })
    }, { additionalProperties: false }),
    outputSchema: kind.schema
  }, async (args, p) => JSON.parse((await service.get(p, (args as Record<string, string>)[idArg]!)).body))
}
