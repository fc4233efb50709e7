import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { errors } from '../../../../plugins/infrastructure/errors.js'
import { errorResponses, invalid, scopeError, TENANT_ERRORS } from '../../../../schemas/error-responses.js'
import { TenantParams } from '../../../../schemas/identity.js'
import type { AgedArgs } from '../../../../schemas/records.js'
import { sendJson } from '../send-json.js'

/**
 * The aged receivables and payables reports (docs/records.md#aged-receivables-and-payables): each a call into its
 * service (plugins/domain/reports), which answers the wire JSON text. The tenant and scope checks
 * ran before (./index.ts).
 */
const reports: FastifyPluginAsyncTypebox = async (app) => {
  for (const service of app.reports.aged) {
    const { report } = service
    const { party } = report
    app.get(`/reports/${report.path}`, {
      config: { scopes: [report.scope] },
      schema: {
        tags: ['accounting'],
        operationId: report.tool.replace(/_(\w)/g, (_, c: string) => c.toUpperCase()),
        summary: report.title,
        description: `Requires \`${report.scope}\`. Every ${report.document} of the tenant with status ` +
          `\`authorised\` and a non-zero \`amount_due\`, added up by ${party}, currency and days overdue ` +
          '(`as_of` − `due_date`): `current` (not yet due), `1_30`, `31_60`, `61_90`, `over_90`. `totals` has one ' +
          `entry per currency over every ${party}; \`contacts\` one per ${party} and currency, the most overdue ` +
          'first. Sums are exact, written with the currency\'s minor digits. Pass `next_cursor` as `cursor`, with ' +
          'the same other parameters, for the next page. See docs/records.md.',
        params: TenantParams,
        querystring: report.query,
        response: {
          200: report.schema,
          ...errorResponses(
            ...TENANT_ERRORS,
            scopeError(report.scope),
            invalid('querystring', '/as_of', 'must match format "date"'),
            errors.invalidCursor()
          )
        }
      }
    }, async (request, reply) => sendJson(reply, await service.page(request.principal!, request.query as AgedArgs)))
  }
}

export default reports
