import { Type, type Static, type TObject, type TSchema } from '@sinclair/typebox'

/**
 * The accounting records apps read (docs/records.md): one schema per record validates what the producer sends, and
 * documents the read routes, the webhook payloads, the event catalog and the MCP tools' output.
 */

const Money = (description: string) => Type.String({
  pattern: '^-?(0|[1-9][0-9]*)(\\.[0-9]+)?$',
  maxLength: 40,
  description: `${description} A decimal string with exactly the currency's minor digits (EUR "1250.00", ` +
    'JPY "1250"): never a JSON number.'
})
const Quantity = Type.String({
  pattern: '^-?(0|[1-9][0-9]*)(\\.[0-9]{1,4})?$',
  maxLength: 40,
  description: 'A decimal string of at most 4 decimals ("2", "1.5").'
})
const Currency = Type.String({ pattern: '^[A-Z]{3}$', description: 'ISO 4217 code.', examples: ['EUR'] })
const DateOnly = (description: string) => Type.String({ pattern: '^[0-9]{4}-[0-9]{2}-[0-9]{2}$', description })
export const RecordTimestamp = (description: string) => Type.String({
  pattern: '^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9]{2}:[0-9]{2}:[0-9]{2}\\.[0-9]{3}Z$',
  description: `${description} ISO 8601 UTC with milliseconds.`
})
const RecordId = (what: string) => Type.String({
  minLength: 1, maxLength: 200, description: `The ${what}'s id in the accounting system, unique in its tenant.`
})
const Text = (description: string, maxLength = 500) => Type.String({ maxLength, description })
const Nullable = <T extends TSchema>(schema: T) => Type.Union([schema, Type.Null()])

export const LineItem = Type.Object({
  description: Text('What was sold or bought.', 2000),
  quantity: Quantity,
  unit_amount: Money('Price of one unit, before tax.'),
  tax_amount: Money('Tax on this line.'),
  amount: Money('quantity × unit_amount, rounded half away from zero to the minor unit; before tax.')
}, { title: 'LineItem', additionalProperties: false })

const Party = (title: string, what: string) => Type.Object({
  id: RecordId(what),
  name: Text(`The ${what}'s name, as on the document.`)
}, { title, additionalProperties: false })

const DOCUMENT_STATUSES = ['draft', 'authorised', 'paid', 'voided'] as const

/**
 * A record's status as a JSON Schema `enum`: a wrong one is one error, not one per status. (Records are checked by
 * ajv, plugins/domain/records/validate.ts.)
 */
const statusOf = <S extends readonly string[]>(statuses: S, options: { description: string }) =>
  Type.Unsafe<S[number]>({ type: 'string', enum: [...statuses], ...options })

/** An invoice (customer) or a bill (supplier): the same document, the party named after its role. */
function document<P extends 'customer' | 'supplier', S extends readonly string[]> (
  title: string, party: P, statuses: S, example: Record<string, unknown>
) {
  return Type.Object({
    id: RecordId(title.toLowerCase()),
    number: Type.String({ minLength: 1, maxLength: 100, description: 'The number printed on the document.' }),
    status: statusOf(statuses, { description: statuses.join(', ') + '.' }),
    [party]: Party(party === 'customer' ? 'InvoiceCustomer' : 'BillSupplier', party),
    currency: Currency,
    issue_date: DateOnly('Date of issue, YYYY-MM-DD.'),
    due_date: DateOnly('Payment due, YYYY-MM-DD.'),
    line_items: Type.Array(LineItem, { maxItems: 500 }),
    subtotal: Money('Σ line_items[].amount.'),
    tax_total: Money('Tax of the document.'),
    total: Money('subtotal + tax_total.'),
    amount_paid: Money('Paid so far.'),
    amount_due: Money('total − amount_paid.'),
    paid_at: Nullable(RecordTimestamp('When it was paid in full, or null.')),
    created_at: RecordTimestamp('Created in the accounting system.'),
    updated_at: RecordTimestamp('Last changed in the accounting system: the order of lists and of updated_since.')
  } as Record<string, TSchema>, { title, additionalProperties: false, examples: [example] }) as TObject
}

const INVOICE_EXAMPLE = {
  id: 'inv_1042',
  number: 'INV-2026-1042',
  status: 'authorised',
  customer: { id: 'cus_0042', name: 'Acme Industrial GmbH' },
  currency: 'EUR',
  issue_date: '2026-11-02',
  due_date: '2026-12-02',
  line_items: [
    {
      description: 'Hydraulic pump HP-200', quantity: '2', unit_amount: '480.00', tax_amount: '182.40', amount: '960.00'
    },
    {
      description: 'Installation, hours', quantity: '1.5', unit_amount: '90.00', tax_amount: '25.65', amount: '135.00'
    }
  ],
  subtotal: '1095.00',
  tax_total: '208.05',
  total: '1303.05',
  amount_paid: '0.00',
  amount_due: '1303.05',
  paid_at: null,
  created_at: '2026-11-02T08:14:05.120Z',
  updated_at: '2026-11-02T08:14:05.120Z'
}

const BILL_EXAMPLE = {
  id: 'bill_311',
  number: 'SUP-88120',
  status: 'paid',
  supplier: { id: 'sup_017', name: 'Nordic Steel AB' },
  currency: 'EUR',
  issue_date: '2026-10-20',
  due_date: '2026-11-19',
  line_items: [
    {
      description: 'Steel sheet 2 mm, kg', quantity: '250', unit_amount: '1.84', tax_amount: '115.00', amount: '460.00'
    }
  ],
  subtotal: '460.00',
  tax_total: '115.00',
  total: '575.00',
  amount_paid: '575.00',
  amount_due: '0.00',
  paid_at: '2026-11-18T13:02:44.310Z',
  created_at: '2026-10-20T09:00:00.000Z',
  updated_at: '2026-11-18T13:02:44.310Z'
}

const CUSTOMER_EXAMPLE = {
  id: 'cus_0042',
  name: 'Acme Industrial GmbH',
  email: 'accounts@acme-industrial.example',
  phone: '+49 30 1234567',
  tax_number: 'DE123456789',
  address: {
    line1: 'Industriestraße 12', line2: null, city: 'Berlin', region: null, postal_code: '10115', country: 'DE'
  },
  currency: 'EUR',
  status: 'active',
  created_at: '2025-03-11T10:22:31.000Z',
  updated_at: '2026-09-30T16:45:12.507Z'
}

export const Invoice = document('Invoice', 'customer', DOCUMENT_STATUSES, INVOICE_EXAMPLE)
// As an invoice with supplier in place of customer, statuses included: a bill is voided by a bill.updated.
export const Bill = document('Bill', 'supplier', DOCUMENT_STATUSES, BILL_EXAMPLE)

export const Address = Type.Object({
  line1: Nullable(Text('Street and number.')),
  line2: Nullable(Text('Building, floor, suite.')),
  city: Nullable(Text('City.')),
  region: Nullable(Text('State, province or region.')),
  postal_code: Nullable(Text('Postal code.', 40)),
  country: Nullable(Type.String({ pattern: '^[A-Z]{2}$', description: 'ISO 3166-1 alpha-2.' }))
}, { title: 'Address', additionalProperties: false })

export const Customer = Type.Object({
  id: RecordId('customer'),
  name: Type.String({ minLength: 1, maxLength: 500 }),
  email: Nullable(Text('Where invoices go.', 320)),
  phone: Nullable(Text('Phone number.', 60)),
  tax_number: Nullable(Text('VAT, GST or other tax registration number.', 60)),
  address: Address,
  currency: Currency,
  status: statusOf(['active', 'archived'] as const, { description: 'active, archived.' }),
  created_at: RecordTimestamp('Created in the accounting system.'),
  updated_at: RecordTimestamp('Last changed in the accounting system: the order of lists and of updated_since.')
}, { title: 'Customer', additionalProperties: false, examples: [CUSTOMER_EXAMPLE] })

export type InvoiceRecord = Static<typeof Invoice>
export type CustomerRecord = Static<typeof Customer>

/**
 * An example of next_cursor (opaque to clients), for the answers' examples only: a cursor parameter has none, since
 * Swagger UI's "Try it out" sends a parameter's example and no cursor works but one the service gave.
 */
const SAMPLE_CURSOR = 'v1.eyJ1IjoiMjAyNi0xMS0wMlQwODoxNDowNS4xMjBaIiwiaSI6Imludl8xMDQyIn0.r18RAlzcB3Vre-Z8rYvdrQ'

/** The cursor parameter of every records list and report (REST query string, MCP tool arguments). */
const CursorParam = Type.Optional(Type.String({
  minLength: 1,
  // Room for the longest id (200 characters of up to 4 bytes, or 6 as a JSON escape) in base64url JSON.
  maxLength: 2000,
  description: 'next_cursor of the previous page, with the same other arguments. Opaque; leave it out for the ' +
    'first page.'
}))

/** The query of every list (REST query string, MCP tool arguments): the filters each record kind has. */
export function listQuery (opts: { statuses: readonly string[], party?: 'customer_id' | 'supplier_id' }) {
  const filters: Record<string, TSchema> = {
    limit: Type.Optional(Type.Integer({
      minimum: 1, maximum: 100, description: 'Records per page, 1–100; default 50.', examples: [50]
    })),
    cursor: CursorParam,
    updated_since: Type.Optional(Type.String({
      format: 'date-time',
      description: 'Only records with updated_at at or after this instant (ISO 8601).',
      examples: ['2026-11-01T00:00:00.000Z']
    })),
    // A union of literals, which the MCP tools' argument check (TypeBox's compiler) knows, where it knows no enum.
    status: Type.Optional(Type.Union(opts.statuses.map(s => Type.Literal(s)), {
      description: 'Only this status.', examples: [opts.statuses[0]]
    })),
    order: Type.Optional(Type.Union([Type.Literal('updated_at'), Type.Literal('-updated_at')], {
      description: 'updated_at (default): oldest change first, then id, for incremental sync; ' +
        '-updated_at: newest first.',
      examples: ['-updated_at']
    }))
  }
  if (opts.party) {
    filters[opts.party] = Type.Optional(Type.String({
      minLength: 1,
      maxLength: 200,
      description: `Only documents of this ${opts.party.replace('_id', '')}.`,
      examples: [opts.party === 'customer_id' ? INVOICE_EXAMPLE.customer.id : BILL_EXAMPLE.supplier.id]
    }))
    filters.due_before = Type.Optional(Type.String({
      format: 'date',
      description: 'Only documents due before this date (exclusive), YYYY-MM-DD.',
      examples: ['2026-12-01']
    }))
  }
  return Type.Object(filters, { additionalProperties: false })
}

export const InvoiceListQuery = listQuery({ statuses: DOCUMENT_STATUSES, party: 'customer_id' })
export const BillListQuery = listQuery({ statuses: DOCUMENT_STATUSES, party: 'supplier_id' })
export const CustomerListQuery = listQuery({ statuses: ['active', 'archived'] })
export type ListArgs = {
  limit?: number
  cursor?: string
  updated_since?: string
  status?: string
  order?: 'updated_at' | '-updated_at'
  customer_id?: string
  supplier_id?: string
  due_before?: string
}

const NextCursor = Type.Union([Type.String(), Type.Null()], {
  description: 'Pass as cursor for the next page; null on the last page.'
})

/** `{"invoices": [...], "next_cursor": ...}` and its kin. */
export function listPage (key: string, record: TObject, title: string) {
  return Type.Object({ [key]: Type.Array(record), next_cursor: NextCursor }, {
    title,
    additionalProperties: false,
    examples: [{ [key]: record.examples, next_cursor: SAMPLE_CURSOR }]
  })
}

export const InvoicePage = listPage('invoices', Invoice, 'InvoicePage')
export const BillPage = listPage('bills', Bill, 'BillPage')
export const CustomerPage = listPage('customers', Customer, 'CustomerPage')

/** A single record's path; `example`: an id the sandbox tenant has (kinds.ts). */
export const idParam = (what: string, example: string) =>
  Type.String({
    minLength: 1, maxLength: 200, description: `The ${what} id, as the accounting system sent it.`, examples: [example]
  })

export const RECORD_SCHEMAS = { invoice: Invoice, bill: Bill, customer: Customer }
export const RECORD_SAMPLES = { invoice: INVOICE_EXAMPLE, bill: BILL_EXAMPLE, customer: CUSTOMER_EXAMPLE }

/** The five buckets of an aged report's entry and totals, in the order they are written. */
const bucketFields = (what: string): Record<string, TSchema> => ({
  current: Money(`${what} not yet due (due_date on or after as_of).`),
  '1_30': Money(`${what} 1 to 30 days overdue.`),
  '31_60': Money(`${what} 31 to 60 days overdue.`),
  '61_90': Money(`${what} 61 to 90 days overdue.`),
  over_90: Money(`${what} more than 90 days overdue.`),
  total: Money(`${what} in all: the sum of the five buckets.`),
  count: Type.Integer({ minimum: 1, description: 'Open documents counted.' })
})

const AGED_EXAMPLE_DATES = { as_of: '2026-11-27', oldest_due_date: '2026-08-01' }

/**
 * The aged receivables (invoices, `customer`) or payables (bills, `supplier`) report: its query (REST query string
 * and MCP tool arguments) and its answer (docs/records.md#aged-receivables-and-payables).
 */
function agedReport (title: string, party: 'customer' | 'supplier') {
  const what = party === 'customer' ? 'Owed by customers,' : 'Owed to suppliers,'
  const Query = Type.Object({
    as_of: Type.Optional(Type.String({
      format: 'date',
      description: 'The day overdue days are counted to, YYYY-MM-DD; default today (UTC).',
      examples: [AGED_EXAMPLE_DATES.as_of]
    })),
    [`${party}_id`]: Type.Optional(Type.String({
      minLength: 1,
      maxLength: 200,
      description: `Only this ${party}.`,
      examples: [party === 'customer' ? INVOICE_EXAMPLE.customer.id : BILL_EXAMPLE.supplier.id]
    })),
    currency: Type.Optional(Type.String({
      pattern: '^[A-Z]{3}$', description: 'Only documents in this currency (ISO 4217).', examples: ['EUR']
    })),
    limit: Type.Optional(Type.Integer({
      minimum: 1, maximum: 100, description: 'Contacts per page, 1–100; default 50.', examples: [50]
    })),
    cursor: CursorParam
  }, { additionalProperties: false })

  const Total = Type.Object({ currency: Currency, ...bucketFields(what) }, {
    title: `${title}Total`, additionalProperties: false
  })
  const Contact = Type.Object({
    [party]: Party(party === 'customer' ? 'AgedCustomer' : 'AgedSupplier', party),
    currency: Currency,
    ...bucketFields(what),
    oldest_due_date: DateOnly('The earliest due date of the documents counted, YYYY-MM-DD.')
  }, { title: `${title}Contact`, additionalProperties: false })
  const sums = {
    current: '1303.05', '1_30': '0.00', '31_60': '575.00', '61_90': '0.00', over_90: '240.00', total: '2118.05'
  }
  const Report = Type.Object({
    as_of: DateOnly('The day overdue days were counted to.'),
    totals: Type.Array(Total, {
      description: 'One entry per currency, by currency code, over every contact (not only this page).'
    }),
    contacts: Type.Array(Contact, {
      description: 'One entry per contact and currency, the most overdue first: by over_90, 61_90, 31_60, 1_30 ' +
        'and current, each descending (in the currency\'s minor units), then by contact id.'
    }),
    next_cursor: NextCursor
  }, {
    title,
    additionalProperties: false,
    examples: [{
      as_of: AGED_EXAMPLE_DATES.as_of,
      totals: [{ currency: 'EUR', ...sums, count: 4 }],
      contacts: [{
        [party]: party === 'customer' ? INVOICE_EXAMPLE.customer : BILL_EXAMPLE.supplier,
        currency: 'EUR',
        ...sums,
        count: 4,
        oldest_due_date: AGED_EXAMPLE_DATES.oldest_due_date
      }],
      next_cursor: null
    }]
  })
  return { Query, Report }
}

const receivables = agedReport('AgedReceivables', 'customer')
const payables = agedReport('AgedPayables', 'supplier')
export const AgedReceivablesQuery = receivables.Query
export const AgedReceivables = receivables.Report
export const AgedPayablesQuery = payables.Query
export const AgedPayables = payables.Report
export type AgedArgs = {
  as_of?: string
  customer_id?: string
  supplier_id?: string
  currency?: string
  limit?: number
  cursor?: string
}
