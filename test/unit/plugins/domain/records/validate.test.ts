import fc from 'fast-check'
import t from 'tap'
import { fromUnits } from '../../../../../lib/money.js'
import { recordProblems } from '../../../../../plugins/domain/records/validate.js'
import { RECORD_SAMPLES } from '../../../../../schemas/records.js'
import { bill, customer, invoice } from '../../../../support/records.js'

type Json = Record<string, any>

/** `record` changed by `change`, its sums left as they are. */
const changed = (record: Json, change: (r: Json) => void): Json => {
  const r = structuredClone(record)
  change(r)
  return r
}
const at = (path: string, message: string) => ({ location: 'body', path, message })

t.test('valid records have no problem', async t => {
  t.strictSame(recordProblems('invoice', RECORD_SAMPLES.invoice, '/data'), [], 'the invoice example')
  t.strictSame(recordProblems('bill', RECORD_SAMPLES.bill, '/data'), [], 'the bill example')
  t.strictSame(recordProblems('customer', RECORD_SAMPLES.customer, '/data'), [], 'the customer example')
  const jpy = invoice({ currency: 'JPY', line_items: [{ quantity: '3', unit_amount: '1200', tax_amount: '360' }] })
  t.equal(jpy.total, '3960')
  t.strictSame(recordProblems('invoice', jpy, '/data'), [], 'JPY, no decimals')
  const bhd: Json = bill({
    currency: 'BHD', line_items: [{ quantity: '1.5', unit_amount: '480.125', tax_amount: '0.500' }]
  })
  t.equal(bhd.line_items[0].amount, '720.188')
  t.strictSame(recordProblems('bill', bhd, '/data'), [], 'BHD, three decimals; 720.1875 rounded away from zero')
  const credit: Json = invoice({ line_items: [{ quantity: '-2.5', unit_amount: '0.33', tax_amount: '-0.16' }] })
  t.equal(credit.line_items[0].amount, '-0.83', '−0.825 rounds to −0.83')
  t.strictSame(recordProblems('invoice', credit, '/data'), [], 'a credit: negative amounts')
  t.strictSame(recordProblems('invoice', invoice({ line_items: [] }), '/data'), [], 'no lines: all zero')
  t.strictSame(recordProblems('customer', customer({ email: null, phone: null, tax_number: null }), '/data'), [])
})

t.test('each problem at its path, with its message', async t => {
  const inv = RECORD_SAMPLES.invoice
  const cases: Array<[string, 'invoice' | 'bill' | 'customer', Json, ReturnType<typeof at>[]]> = [
    ['a wrong line amount', 'invoice', changed(inv, r => { r.line_items[1].amount = '135.01' }), [
      at('/data/line_items/1/amount', 'must equal quantity × unit_amount (135.00)'),
      at('/data/subtotal', 'must equal the sum of line_items[].amount (1095.01)')
    ]],
    ['a wrong subtotal', 'invoice',
      changed(inv, r => Object.assign(r, { subtotal: '1095.01', total: '1303.06', amount_due: '1303.06' })),
      [at('/data/subtotal', 'must equal the sum of line_items[].amount (1095.00)')]],
    ['a wrong total', 'invoice', changed(inv, r => Object.assign(r, { total: '1303.00', amount_due: '1303.00' })),
      [at('/data/total', 'must equal subtotal + tax_total (1303.05)')]],
    ['a wrong amount_due', 'invoice', changed(inv, r => { r.amount_due = '0.00' }),
      [at('/data/amount_due', 'must equal total − amount_paid (1303.05)')]],
    ['a wrong amount_due of a paid bill', 'bill', changed(RECORD_SAMPLES.bill, r => { r.amount_due = '575.00' }),
      [at('/data/amount_due', 'must equal total − amount_paid (0.00)')]],
    ['three decimals in EUR', 'invoice', changed(inv, r => { r.tax_total = '208.050' }),
      [at('/data/tax_total', 'must have 2 decimals for EUR (e.g. "0.00")')]],
    ['decimals in JPY', 'invoice', changed(inv, r => { r.currency = 'JPY' }), [
      ...[0, 1].flatMap(i => ['unit_amount', 'tax_amount', 'amount']
        .map(f => at(`/data/line_items/${i}/${f}`, 'must have 0 decimals for JPY (e.g. "0")'))),
      ...['subtotal', 'tax_total', 'total', 'amount_paid', 'amount_due']
        .map(f => at(`/data/${f}`, 'must have 0 decimals for JPY (e.g. "0")'))
    ]],
    ['two decimals in BHD', 'invoice', changed(inv, r => { r.currency = 'BHD' }), [
      ...[0, 1].flatMap(i => ['unit_amount', 'tax_amount', 'amount']
        .map(f => at(`/data/line_items/${i}/${f}`, 'must have 3 decimals for BHD (e.g. "0.000")'))),
      ...['subtotal', 'tax_total', 'total', 'amount_paid', 'amount_due']
        .map(f => at(`/data/${f}`, 'must have 3 decimals for BHD (e.g. "0.000")'))
    ]],
    ['a currency not in circulation: its money is not checked', 'invoice',
      changed(inv, r => Object.assign(r, { currency: 'XYZ', total: '1' })),
      [at('/data/currency', 'must be an ISO 4217 currency code in circulation')]],
    ['a customer\'s currency', 'customer', changed(RECORD_SAMPLES.customer, r => { r.currency = 'XTS' }),
      [at('/data/currency', 'must be an ISO 4217 currency code in circulation')]],
    ['a date that does not exist', 'invoice', changed(inv, r => { r.due_date = '2026-02-29' }),
      [at('/data/due_date', 'must be a real date')]],
    ['year 0', 'bill', changed(RECORD_SAMPLES.bill, r => { r.issue_date = '0000-10-20' }),
      [at('/data/issue_date', 'must be a real date')]],
    ['an instant that does not exist', 'bill',
      changed(RECORD_SAMPLES.bill, r => { r.paid_at = '2026-11-18T24:00:00.000Z' }),
      [at('/data/paid_at', 'must be a real instant')]],
    ['a customer\'s instant', 'customer',
      changed(RECORD_SAMPLES.customer, r => { r.created_at = '2025-02-29T10:22:31.000Z' }),
      [at('/data/created_at', 'must be a real instant')]],
    ['several at once, each named', 'invoice',
      changed(inv, r => Object.assign(r, { issue_date: '2026-11-31', updated_at: '2026-13-02T08:14:05.120Z' })),
      [at('/data/updated_at', 'must be a real instant'), at('/data/issue_date', 'must be a real date')]],
    ['a missing field', 'invoice', changed(inv, r => { delete r.due_date }),
      [at('/data', "must have required property 'due_date'")]],
    ['an unknown field', 'customer', changed(RECORD_SAMPLES.customer, r => { r.vip = true }),
      [at('/data', 'unknown field "vip"')]],
    ['an unknown field of the address', 'customer', changed(RECORD_SAMPLES.customer, r => { r.address.zip = '1' }),
      [at('/data/address', 'unknown field "zip"')]],
    ['a quantity of 5 decimals', 'invoice', changed(inv, r => { r.line_items[0].quantity = '2.00000' }),
      [at('/data/line_items/0/quantity', 'must match pattern "^-?(0|[1-9][0-9]*)(\\.[0-9]{1,4})?$"')]],
    ['money as a number', 'invoice', changed(inv, r => { r.amount_paid = 0 }),
      [at('/data/amount_paid', 'must be string')]],
    ['a negative zero', 'invoice', changed(inv, r => { r.amount_paid = '-0.00' }),
      [at('/data/amount_paid', 'must not be "-0.00": a negative zero is not an amount (zero is "0.00")')]],
    ['a negative zero on a line', 'invoice', changed(inv, r => { r.line_items[0].tax_amount = '-0.00' }),
      [at('/data/line_items/0/tax_amount', 'must not be "-0.00": a negative zero is not an amount (zero is "0.00")')]],
    ['a negative zero in JPY', 'invoice',
      changed(invoice({ currency: 'JPY', line_items: [{ quantity: '1', unit_amount: '1200', tax_amount: '0' }] }),
        r => { r.line_items[0].tax_amount = '-0' }),
      [at('/data/line_items/0/tax_amount', 'must not be "-0": a negative zero is not an amount (zero is "0")')]],
    ['a negative zero in BHD, where the sums hold', 'bill',
      changed(bill({ currency: 'BHD', line_items: [{ quantity: '-2', unit_amount: '0.000', tax_amount: '0.000' }] }),
        r => {
          r.line_items[0].amount = '-0.000'
          Object.assign(r, { subtotal: '-0.000', total: '-0.000' })
        }),
      [
        at('/data/line_items/0/amount', 'must not be "-0.000": a negative zero is not an amount (zero is "0.000")'),
        at('/data/subtotal', 'must not be "-0.000": a negative zero is not an amount (zero is "0.000")'),
        at('/data/total', 'must not be "-0.000": a negative zero is not an amount (zero is "0.000")')
      ]]
  ]
  for (const [name, kind, data, expected] of cases) {
    t.strictSame(recordProblems(kind, data, '/data'), expected, name)
  }

  t.strictSame(recordProblems('bill', changed(RECORD_SAMPLES.bill, r => { r.status = 'voided' }), '/data'), [],
    'a bill may be voided, as an invoice may')
  t.strictSame(recordProblems('bill', changed(RECORD_SAMPLES.bill, r => { r.status = 'cancelled' }), '/data'),
    [at('/data/status', 'must be equal to one of the allowed values')], 'an unknown status is one problem')
  t.strictSame(
    recordProblems('invoice', changed(inv, r => { (r.line_items as Json[])[1]!.description = 'a\u0000b' }), '/data'),
    [at('/data/line_items/1/description', 'must not contain NUL characters')],
    'NUL, which Postgres refuses, is named where it is')
  t.strictSame(
    recordProblems('customer', changed(RECORD_SAMPLES.customer, r => { (r.address as Json).city = 'x\ud800' }),
      '/data'),
    [at('/data/address/city', 'must be well-formed Unicode (a lone surrogate is not)')],
    'a lone surrogate, which would be stored as U+FFFD, is named where it is')
  t.strictSame(recordProblems('customer', changed(RECORD_SAMPLES.customer, r => { r.name = 'Zoë 😀' }), '/data'), [],
    'paired surrogates (an emoji) are well-formed')
  const both = changed(inv, r => Object.assign(r, { total: '0.00', number: '' }))
  const schemaFirst = recordProblems('invoice', both, '/data')
  t.strictSame(schemaFirst, [at('/data/number', 'must NOT have fewer than 1 characters')],
    'while the schema fails, the sums are not looked at')
  t.strictSame(recordProblems('invoice', changed(inv, r => { r.total = '1.00' }), '/7/data').map(p => p.path),
    ['/7/data/total', '/7/data/amount_due'], 'the pointer starts where the record is: /7/data in a batch')
  t.strictSame(recordProblems('invoice', null, '/data'), [at('/data', 'must be object')])
})

/** An invoice of random lines in `currency`, its sums worked out here: in units, halves away from zero. */
const validInvoice = fc.record({
  currency: fc.constantFrom('EUR', 'JPY', 'BHD', 'USD', 'KWD', 'ISK'),
  lines: fc.array(fc.record({
    // Quantity in 1/10000, prices in minor units.
    quantity: fc.bigInt({ min: -(10n ** 7n), max: 10n ** 9n }),
    unit: fc.bigInt({ min: -(10n ** 8n), max: 10n ** 10n }),
    tax: fc.bigInt({ min: 0n, max: 10n ** 9n })
  }), { maxLength: 6 }),
  paidShare: fc.integer({ min: 0, max: 2 })
}).map(({ currency, lines, paidShare }) => {
  const digits = { JPY: 0, ISK: 0, BHD: 3, KWD: 3 }[currency as string] ?? 2
  const nearest = (n: bigint, d: bigint) => (n < 0n ? -1n : 1n) * ((n < 0n ? -n : n) * 2n + d) / (2n * d)
  const items = lines.map(l => ({ ...l, amount: nearest(l.quantity * l.unit, 10_000n) }))
  const subtotal = items.reduce((s, l) => s + l.amount, 0n)
  const tax = items.reduce((s, l) => s + l.tax, 0n)
  const total = subtotal + tax
  const paid = paidShare === 0 ? 0n : paidShare === 1 ? total / 2n : total
  const m = (u: bigint) => fromUnits(u, digits)
  return {
    ...RECORD_SAMPLES.invoice,
    currency,
    line_items: items.map(l => ({
      description: 'Item',
      quantity: fromUnits(l.quantity, 4),
      unit_amount: m(l.unit),
      tax_amount: m(l.tax),
      amount: m(l.amount)
    })),
    subtotal: m(subtotal),
    tax_total: m(tax),
    total: m(total),
    amount_paid: m(paid),
    amount_due: m(total - paid)
  } as Json
})

/** One minor unit more on a money string of `digits` decimals. */
const plusOne = (value: string, digits: number): string => {
  const [whole, fraction = ''] = value.replace('-', '').split('.')
  const units = BigInt(whole! + fraction) * (value.startsWith('-') ? -1n : 1n) + 1n
  return fromUnits(units, digits)
}

t.test('property: worked-out sums are accepted; one unit off anywhere is named where it is', async t => {
  fc.assert(fc.property(validInvoice, r => recordProblems('invoice', r, '/data').length === 0), { numRuns: 500 })
  t.pass('every invoice with sums worked out in units has no problem')

  const field = fc.constantFrom('line', 'subtotal', 'total', 'amount_paid', 'amount_due')
  fc.assert(fc.property(validInvoice, field, fc.nat(), (r, which, pick) => {
    const digits = { JPY: 0, ISK: 0, BHD: 3, KWD: 3 }[r.currency as string] ?? 2
    const bad = structuredClone(r)
    let expected: string
    if (which === 'line') {
      if (bad.line_items.length === 0) return true
      const i = pick % bad.line_items.length
      bad.line_items[i].amount = plusOne(bad.line_items[i].amount, digits)
      expected = `/data/line_items/${i}/amount`
    } else {
      bad[which] = plusOne(bad[which], digits)
      // A changed amount_paid makes amount_due wrong: the problem is reported on the field derived.
      expected = `/data/${which === 'amount_paid' ? 'amount_due' : which}`
    }
    return recordProblems('invoice', bad, '/data').some(p => p.path === expected)
  }), { numRuns: 1_000 })
  t.pass('one minor unit off is a problem at the field (or the sum it breaks)')
})
