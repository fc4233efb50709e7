import fp from 'fastify-plugin'
import { cursorCodec } from '../../../lib/cursor.js'
import { AGED_REPORTS } from './kinds.js'
import { createAgedReportService, type AgedReportService } from './service.js'
import { createAgedReportStore } from './store.js'
import { addAgedReportTool } from './tools.js'

declare module 'fastify' {
  interface FastifyInstance {
    reports: {
      /** The aged receivables (invoices) and payables (bills), for their routes and tools alike. */
      aged: AgedReportService[]
    }
  }
}

/**
 * Answers in one call (docs/records.md#aged-receivables-and-payables): the aged receivables and payables, added up
 * in the database from the columns the records keep beside their JSON, served by routes/public/v1/tenant/reports.ts
 * and their MCP tools.
 */
export default fp(async (app) => {
  const cursors = cursorCodec(app.config.tokenSigningKey)
  const aged = AGED_REPORTS.map(r =>
    createAgedReportService(r, createAgedReportStore(app.db, r), cursors, app.clock, app.metrics))
  app.decorate('reports', { aged })
  for (const r of aged) addAgedReportTool(app.mcp, r)
}, { name: 'reports', dependencies: ['db', 'mcp', 'metrics'] })
