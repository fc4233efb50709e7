import type { TObject } from '@sinclair/typebox'
import { AgedPayables, AgedPayablesQuery, AgedReceivables, AgedReceivablesQuery } from '../../../schemas/records.js'

/** What differs between the two aged reports; everything else (store, service, route, tool) is shared. */
export interface AgedReportKind {
  /** The route's path under `reports/`. */
  path: 'aged-receivables' | 'aged-payables'
  tool: 'aged_receivables' | 'aged_payables'
  title: 'Aged receivables' | 'Aged payables'
  /** The documents added up: the records' table (migrations/006_records.sql, 013_aged_reports.sql) and its name. */
  table: 'invoices' | 'bills'
  document: 'invoice' | 'bill'
  scope: 'invoices:read' | 'bills:read'
  /** The contact's role, the key of each entry's contact, and its filter. */
  party: 'customer' | 'supplier'
  filter: 'customer_id' | 'supplier_id'
  query: TObject
  schema: TObject
}

export const AGED_REPORTS: readonly AgedReportKind[] = [
  {
    path: 'aged-receivables',
    tool: 'aged_receivables',
    title: 'Aged receivables',
    table: 'invoices',
    document: 'invoice',
    scope: 'invoices:read',
    party: 'customer',
    filter: 'customer_id',
    query: AgedReceivablesQuery,
    schema: AgedReceivables
  },
  {
    path: 'aged-payables',
    tool: 'aged_payables',
    title: 'Aged payables',
    table: 'bills',
    document: 'bill',
    scope: 'bills:read',
    party: 'supplier',
    filter: 'supplier_id',
    query: AgedPayablesQuery,
    schema: AgedPayables
  }
]
