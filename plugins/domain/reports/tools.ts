import type { FastifyInstance } from 'fastify'
import { READ_ONLY } from '../common/tool-annotations.js'
import type { AgedReportService } from './service.js'

/** The tool of an aged report: the same arguments and the same JSON as its REST route. */
export function addAgedReportTool (mcp: FastifyInstance['mcp'], service: AgedReportService): void {
  const { report } = service
  const owed = report.party === 'customer' ? 'what customers owe the tenant' : 'what the tenant owes its suppliers'
  mcp.addTool({
    annotations: READ_ONLY,
    requiredScopes: [report.scope],
    public: false,
    tags: ['accounting', 'reports'],
    name: report.tool,
    title: report.title,
    description: `${report.title} of the token's tenant, as GET .../reports/${report.path}: ${owed}, added up ` +
      `by ${report.party} and by how late it is, in one call. Requires ${report.scope}. Use it instead of paging ` +
      `list_${report.table} to answer "who owes us the most, and how late?" or "what do we owe, and when?". It ` +
      `counts every ${report.document} with status "authorised" and a non-zero amount_due (as it is now). Buckets, ` +
      'by days overdue = as_of − due_date: "current" not yet due (due_date on or after as_of), "1_30", "31_60", ' +
      '"61_90", "over_90" days overdue; "total" is their sum, "count" the documents. "totals" has one entry per ' +
      `currency, over every ${report.party}; "contacts" one per ${report.party} and currency, the most overdue ` +
      'first (over_90, then 61_90, 31_60, 1_30, current, each descending). Amounts are never added across ' +
      `currencies. as_of (YYYY-MM-DD) defaults to today (UTC). Filter by ${report.filter} or currency. Pages hold ` +
      `up to limit ${report.party}s (default 50, at most 100); when next_cursor is not null, call again with ` +
      'cursor set to it and the same other arguments. Money is a decimal string with the currency\'s minor ' +
      'digits: read it as a decimal, never as a float.',
    inputSchema: report.query,
    outputSchema: report.schema
  }, async (args, p) => JSON.parse(await service.page(p, args)))
}
