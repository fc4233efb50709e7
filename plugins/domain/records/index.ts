import fp from 'fastify-plugin'
import { cursorCodec } from '../../../lib/cursor.js'
import type { RecordKindName } from '../../../lib/topics.js'
import { createRecordIngest, type RecordIngest } from './ingest.js'
import { RECORD_KINDS } from './kinds.js'
import { createRecordService, type RecordService } from './service.js'
import { createRecordStore, type RecordStore } from './store.js'
import { addRecordTools } from './tools.js'

declare module 'fastify' {
  interface FastifyInstance {
    records: {
      /** One service per aggregate, called by the REST routes and the MCP tools alike. */
      services: Record<RecordKindName, RecordService>
      /** What accepting events does for the read side (used by the events' publish, plugins/domain/events). */
      ingest: RecordIngest
    }
  }
}

/**
 * The accounting records (docs/records.md): invoices, bills and customers, kept from the producer's events and
 * served by the read routes (routes/public/v1/tenant/records.ts) and their MCP tools.
 */
export default fp(async (app) => {
  const kinds = Object.values(RECORD_KINDS)
  const stores = Object.fromEntries(kinds.map(k => [k.name, createRecordStore(app.db, k)])) as
    Record<RecordKindName, RecordStore>
  const cursors = cursorCodec(app.config.tokenSigningKey)
  const services = Object.fromEntries(kinds.map(k => [k.name, createRecordService(k, stores[k.name], cursors)])) as
    Record<RecordKindName, RecordService>
  app.decorate('records', { services, ingest: createRecordIngest(stores) })
  for (const s of Object.values(services)) addRecordTools(app.mcp, s)
}, { name: 'records', dependencies: ['db', 'mcp'] })
