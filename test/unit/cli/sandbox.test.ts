// The sandbox's generator (cli/sandbox.ts) without a service: the same options give the same bytes, and every record
// it makes is one the service accepts (plugins/domain/records/validate.ts), with a history that moves forward in time.
import fc from 'fast-check'
import t from 'tap'
import { decimals, minorDigits } from '../../../lib/money.js'
import {
  sampleRecord, sandboxEvents, sandboxRecords, SandboxTally, type SandboxOptions, type SandboxRecord
} from '../../../cli/sandbox.js'
import { EMITTED_TOPICS, recordKindOf } from '../../../lib/topics.js'
import { recordProblems } from '../../../plugins/domain/records/validate.js'
import { RECORD_SAMPLES } from '../../../schemas/records.js'

const DEFAULTS: SandboxOptions = {
  org: 'org_demo', entity: 'ent_demo', customers: 50, invoices: 300, bills: 150, asOf: '2026-11-26'
}
type Json = Record<string, unknown>

/** Every way a sandbox can be wrong, as messages (empty when it is right). */
function problems (opts: SandboxOptions, records: SandboxRecord[]): string[] {
  const out: string[] = []
  const asOf = `${opts.asOf}T00:00:00.000Z`
  const ids = new Set<string>()
  const customers = new Set<string>()
  const order = { customer: 0, invoice: 1, bill: 2 }
  let stage = 0
  for (const record of records) {
    if (order[record.kind] < stage) out.push(`${record.id}: out of order (customers, invoices, bills)`)
    stage = order[record.kind]
    let previous = ''
    for (const [v, e] of record.events.entries()) {
      const at = `${record.id} v${v + 1}`
      const kind = recordKindOf(e.topic)
      if (kind !== record.kind) out.push(`${at}: topic ${e.topic} for a ${record.kind}`)
      if (ids.has(e.id)) out.push(`${at}: event id ${e.id} twice`)
      ids.add(e.id)
      if (e.id.length > 200 || !e.id.startsWith(`sandbox-${record.id}-v${v + 1}-`)) out.push(`${at}: event id ${e.id}`)
      if (e.org_ref_id !== opts.org || e.entity_ref_id !== opts.entity) out.push(`${at}: another tenant`)
      for (const p of recordProblems(kind!, e.data, '/data')) out.push(`${at}: ${p.path} ${p.message}`)
      const d = e.data as Json
      if (d.id !== record.id) out.push(`${at}: data.id ${String(d.id)}`)
      const updated = d.updated_at as string
      if (!(updated > previous)) out.push(`${at}: updated_at ${updated} not after ${previous}`)
      previous = updated
      if ((d.created_at as string) > updated) out.push(`${at}: created after its update`)
      for (const field of ['created_at', 'updated_at', 'paid_at']) {
        if (typeof d[field] === 'string' && (d[field] as string) >= asOf) out.push(`${at}: ${field} not before as-of`)
      }
      if (record.kind === 'customer') continue
      const party = (d.customer ?? d.supplier) as { id: string }
      if (record.kind === 'invoice' && !customers.has(party.id)) out.push(`${at}: unknown customer ${party.id}`)
      if ((d.status === 'paid') !== (d.paid_at !== null)) out.push(`${at}: status ${String(d.status)}, paid_at`)
      if (d.status === 'paid' && Number(d.amount_due) !== 0) out.push(`${at}: paid with ${String(d.amount_due)} due`)
      if ((d.line_items as Json[]).length === 0) out.push(`${at}: no line`)
    }
    if (record.kind === 'customer') customers.add(record.id)
  }
  return out
}

const all = (opts: SandboxOptions) => [...sandboxRecords(opts)]

t.test('the same options give the same events byte for byte; another seed or tenant other ones', async t => {
  const small = { ...DEFAULTS, customers: 5, invoices: 40, bills: 20 }
  const bytes = (opts: SandboxOptions) => JSON.stringify([...sandboxEvents(opts)])
  t.equal(bytes(small), bytes(small), 'twice the same')
  t.equal(bytes(small), bytes({ ...small, seed: 'org_demo/ent_demo' }), 'the default seed is <org>/<entity>')
  t.not(bytes({ ...small, seed: 'another' }), bytes(small), '--seed changes them')
  t.not(bytes({ ...small, org: 'org_other' }).replaceAll('org_other', 'org_demo'), bytes(small),
    'another tenant gets other records, not the same ones renamed')
  t.not(bytes({ ...small, asOf: '2026-11-27' }), bytes(small), 'as does another as-of date')

  // The event ids are derived from the content: the same event has the same id, a changed one another.
  const ids = (opts: SandboxOptions) => new Map([...sandboxEvents(opts)].map(e => [e.id, JSON.stringify(e.data)]))
  const a = ids(small)
  const b = ids({ ...small, asOf: '2026-11-27' })
  t.equal([...a.keys()].filter(id => b.has(id) && b.get(id) !== a.get(id)).length, 0,
    'no id is reused for other content, so seeding again with other options never conflicts')

  fc.assert(fc.property(fc.integer({ min: 0, max: 2 ** 31 }), fc.integer({ min: 1, max: 4 }), (seed, n) => {
    const opts = { ...DEFAULTS, customers: n, invoices: 3 * n, bills: n, seed: String(seed) }
    const [first, second] = [bytes(opts), bytes(opts)]
    return first === second
  }), { numRuns: 30 })
  t.pass('deterministic for generated seeds and sizes')
})

t.test('the default sandbox: every record valid, every status, overdue and late, several currencies', async t => {
  const records = all(DEFAULTS)
  t.same(problems(DEFAULTS, records), [], 'every event passes recordProblems; histories move forward in time')
  const tally = new SandboxTally(DEFAULTS.asOf)
  for (const r of records) tally.add(r)
  const s = tally.summary
  t.same([s.customers.total, s.invoices.total, s.bills.total], [50, 300, 150], 'the sizes asked for')
  t.equal(s.events, records.reduce((n, r) => n + r.events.length, 0))
  t.ok(s.events > 450 + 200, 'many records have a second version')
  for (const [kind, statuses] of Object.entries({
    customers: ['active', 'archived'],
    invoices: ['draft', 'authorised', 'paid', 'voided'],
    bills: ['draft', 'authorised', 'paid']
  })) {
    const counts = (s as unknown as Record<string, Record<string, number>>)[kind]!
    for (const status of statuses) t.ok(counts[status]! > 0, `${kind}: ${status}`)
  }
  t.ok(s.invoices.overdue > 0 && s.bills.overdue > 0, 'some authorised past their due date')
  t.ok(s.invoices.paidLate > 0 && s.bills.paidLate > 0, 'some paid after their due date')

  const last = records.map(r => r.events.at(-1)!.data)
  const topics = new Set(records.flatMap(r => r.events.map(e => e.topic)))
  t.same([...topics].sort(), [...EMITTED_TOPICS].sort(), 'every record topic is used')
  const currencies = new Set(last.map(d => d.currency as string))
  t.ok(currencies.size >= 6, `several currencies (${[...currencies].join(', ')})`)
  t.ok([...currencies].some(c => minorDigits(c) === 0), 'one with no minor digits (JPY)')
  t.ok([...currencies].some(c => minorDigits(c) === 3), 'one with three (BHD)')
  const quantities = last.flatMap(d => ((d.line_items ?? []) as Json[]).map(l => l.quantity as string))
  t.ok(quantities.some(q => q === '1.5' || (decimals(q) ?? 0) > 0), 'decimal quantities')
  const countries = new Set(last.map(d => (d.address as Json | undefined)?.country).filter(Boolean))
  t.ok(countries.size >= 12, `customers in every country (${[...countries].join(', ')})`)
  const issued = last.filter(d => d.issue_date).map(d => d.issue_date as string).sort()
  t.ok(issued[0]! >= '2025-11-26' && issued.at(-1)! < '2026-11-26', 'documents over the year before as-of')
  t.ok(issued[0]! < '2026-01-31', `spread over it (first ${issued[0]}, last ${issued.at(-1)})`)
})

t.test('property: any sizes, seed and as-of date give valid records with every status a small sandbox can have',
  async t => {
    const options = fc.record({
      customers: fc.integer({ min: 1, max: 8 }),
      invoices: fc.integer({ min: 0, max: 25 }),
      bills: fc.integer({ min: 0, max: 12 }),
      seed: fc.string({ maxLength: 12 }),
      // Any day from 2000 to 2099, leap days included.
      day: fc.integer({ min: 0, max: 36_500 })
    })
    fc.assert(fc.property(options, o => {
      const asOf = new Date(Date.UTC(2000, 0, 1) + o.day * 86_400_000).toISOString().slice(0, 10)
      const opts = { ...DEFAULTS, ...o, asOf }
      const records = all(opts)
      const found = problems(opts, records)
      if (found.length > 0) throw new Error(found.slice(0, 5).join('\n'))
      const tally = new SandboxTally(asOf)
      for (const r of records) tally.add(r)
      const { invoices, bills, customers } = tally.summary
      // Sizes as asked; from 5 invoices (4 bills) every status, one overdue and one paid late; from 2 customers one
      // archived.
      return customers.total === o.customers && invoices.total === o.invoices && bills.total === o.bills &&
        (o.invoices < 5 || (invoices.draft > 0 && invoices.authorised > 0 && invoices.paid > 0 &&
          invoices.voided > 0 && invoices.overdue > 0 && invoices.paidLate > 0)) &&
        (o.bills < 4 || (bills.draft > 0 && bills.authorised > 0 && bills.overdue > 0 && bills.paidLate > 0)) &&
        (o.customers < 2 || customers.archived > 0)
    }), { numRuns: 60 })
    t.pass('valid, and every case present, for generated options')
  })

/** Each party's name and e-mail domain by its id: the customers', and the suppliers' that have a bill. */
function parties (records: SandboxRecord[]): Map<string, { name: string, domain?: string }> {
  const out = new Map<string, { name: string, domain?: string }>()
  for (const r of records) {
    const d = r.events.at(-1)!.data as Json
    if (r.kind === 'customer') {
      out.set(r.id, { name: d.name as string, domain: (d.email as string | null)?.split('@')[1] })
    } else if (r.kind === 'bill') {
      const supplier = d.supplier as { id: string, name: string }
      out.set(supplier.id, { name: supplier.name })
    }
  }
  return out
}

/** The names (or domains) that more than one party has. */
function shared (values: Array<string | undefined>): string[] {
  const seen = new Set<string>()
  const twice = new Set<string>()
  for (const v of values) {
    if (v === undefined) continue
    const key = v.toLowerCase()
    if (seen.has(key)) twice.add(v)
    seen.add(key)
  }
  return [...twice]
}

t.test('a name belongs to one party of the tenant, customers and suppliers alike, however large', async t => {
  // A thousand customers draw many a name two or three times from the same lists; six thousand use up the lists of
  // every country.
  for (const customers of [50, 1000, 6000]) {
    const found = parties(all({ ...DEFAULTS, customers, invoices: 0, bills: 400 }))
    t.ok(found.size > customers, `${customers} customers and the suppliers with a bill`)
    const list = [...found.values()]
    t.same(shared(list.map(p => p.name)), [], `${customers}: no name twice`)
    t.same(shared(list.map(p => p.domain)), [], `${customers}: no e-mail domain twice, so no name with another form`)
    if (customers === 6000) {
      t.ok(list.some(p => / (Göteborg|Lyon|Nagoya|Sheffield|Pune)( \d+)? /.test(p.name)),
        'when a country\'s names run out, a name is told apart by its city')
    }
  }
  fc.assert(fc.property(fc.string({ maxLength: 12 }), fc.integer({ min: 1, max: 300 }), (seed, customers) => {
    const list = [...parties(all({ ...DEFAULTS, seed, customers, invoices: 0, bills: 100 })).values()]
    return shared(list.map(p => p.name)).length === 0
  }), { numRuns: 20 })
  t.pass('no name twice for generated seeds and sizes')
})

t.test('the tally counts each record by its last version', async t => {
  const opts = { ...DEFAULTS, customers: 4, invoices: 30, bills: 10 }
  const records = all(opts)
  const tally = new SandboxTally(opts.asOf)
  for (const r of records) tally.add(r)
  const final = records.filter(r => r.kind === 'invoice').map(r => r.events.at(-1)!.data)
  const by = (status: string) => final.filter(d => d.status === status).length
  t.match(tally.summary.invoices, {
    total: 30,
    draft: by('draft'),
    paid: by('paid'),
    overdue: final.filter(d => d.status === 'authorised' && (d.due_date as string) < opts.asOf).length,
    paidLate: final.filter(d => d.status === 'paid' && (d.paid_at as string).slice(0, 10) > (d.due_date as string))
      .length
  })
})

t.test('records are made one at a time: the first comes before the others are made', async t => {
  // Only the plan (a status and a day per document) is made ahead, to number the documents by date.
  const records = sandboxRecords({ ...DEFAULTS, customers: 1, invoices: 200_000, bills: 0 })
  t.equal(records.next().value?.kind, 'customer')
  t.equal(records.next().value?.kind, 'invoice', 'the first invoice without the other 199,999')
})

t.test('events trigger\'s samples: a valid record for every record topic, in the topic\'s state', async t => {
  const now = '2026-11-26T15:00:00.000Z'
  for (const topic of EMITTED_TOPICS) {
    const data = sampleRecord(topic, RECORD_SAMPLES, now)!
    t.same(recordProblems(recordKindOf(topic)!, data, '/data'), [], `${topic}: valid`)
    t.equal(data.updated_at, now, `${topic}: changed now, so the read side keeps it`)
    const expected = { paid: 'paid', voided: 'voided', archived: 'archived' }[topic.split('.')[1]!] ??
      (topic.startsWith('customer.') ? 'active' : 'authorised')
    t.equal(data.status, expected, `${topic}: ${expected}`)
  }
  t.equal(sampleRecord('work_order.released', RECORD_SAMPLES, now), undefined, 'none for a topic without a record')
})
