import type { TObject } from '@sinclair/typebox'
import type { RecordKindName } from '../../../lib/topics.js'
import {
  Bill, BillListQuery, BillPage, Customer, CustomerListQuery, CustomerPage, Invoice, InvoiceListQuery, InvoicePage
} from '../../../schemas/records.js'

/** What differs between the three record aggregates; everything else (store, service, routes, tools) is shared. */
export interface RecordKind {
  name: RecordKindName
  /** The list's key, the REST path segment and the table of its kept copies (migrations/006_records.sql). */
  plural: 'invoices' | 'bills' | 'customers'
  /** The record's name in messages: `Invoice not found.` */
  title: 'Invoice' | 'Bill' | 'Customer'
  scope: 'invoices:read' | 'bills:read' | 'customers:read'
  schema: TObject
  listQuery: TObject
  page: TObject
  /** Invoices and bills: the party (`customer`, `supplier`), its list filter, the sums and the due date. */
  document?: { party: 'customer' | 'supplier', filter: 'customer_id' | 'supplier_id' }
  /**
   * The example id of the single record's route: the sandbox's first record of the kind (`sandbox seed`), so that
   * "Try it out" on the reference page finds it in a seeded tenant.
   */
  exampleId: string
}

export const RECORD_KINDS: Record<RecordKindName, RecordKind> = {
  invoice: {
    name: 'invoice',
    plural: 'invoices',
    title: 'Invoice',
    scope: 'invoices:read',
    schema: Invoice,
    listQuery: InvoiceListQuery,
    page: InvoicePage,
    document: { party: 'customer', filter: 'customer_id' },
    exampleId: 'inv_000001'
  },
  bill: {
    name: 'bill',
    plural: 'bills',
    title: 'Bill',
    scope: 'bills:read',
    schema: Bill,
    listQuery: BillListQuery,
    page: BillPage,
    document: { party: 'supplier', filter: 'supplier_id' },
    exampleId: 'bill_000001'
  },
  customer: {
    name: 'customer',
    plural: 'customers',
    title: 'Customer',
    scope: 'customers:read',
    schema: Customer,
    listQuery: CustomerListQuery,
    page: CustomerPage,
    exampleId: 'cus_0001'
  }
}
