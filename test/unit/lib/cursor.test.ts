import t from 'tap'
import fc from 'fast-check'
import { cursorCodec, type CursorScope } from '../../../lib/cursor.js'

const codec = cursorCodec('a service secret')
const scope: CursorScope = { tenant: ['org_1', 'ent_1'], resource: 'invoices', order: 'updated_at' }
const anything = (v: unknown): v is unknown => true
const position = fc.tuple(fc.date({ noInvalidDate: true }).map(d => d.toISOString()), fc.string({ minLength: 1 }))

t.test('a cursor reads back as the position it was made from, under its scope', async t => {
  fc.assert(fc.property(position, p => {
    t.strictSame(codec.decode(scope, codec.encode(scope, p), anything), p)
  }))
  const cursor = codec.encode(scope, { u: '2026-11-01T00:00:00.000Z', i: 'inv_1' })
  t.match(cursor, /^v1\.[A-Za-z0-9_-]+\.[A-Za-z0-9_-]{22}$/, 'versioned, URL-safe, a 128-bit tag')
  t.equal(cursorCodec('a service secret').encode(scope, 1), codec.encode(scope, 1), 'another instance reads it')
})

t.test('any edit, cut or extension of a cursor is refused', async t => {
  fc.assert(fc.property(position, fc.nat(), fc.string({ minLength: 1, maxLength: 1 }), (p, at, c) => {
    const cursor = codec.encode(scope, p)
    const i = at % cursor.length
    const edited = cursor.slice(0, i) + c + cursor.slice(i + 1)
    if (edited !== cursor) t.equal(codec.decode(scope, edited, anything), undefined, `edited at ${i}`)
    t.equal(codec.decode(scope, cursor.slice(0, i), anything), undefined, `cut at ${i}`)
    t.equal(codec.decode(scope, cursor + c, anything), undefined, 'extended')
  }), { numRuns: 300 })
})

t.test('a cursor is refused under another tenant, resource or order, or another secret', async t => {
  const cursor = codec.encode(scope, ['2026-11-01T00:00:00.000Z', 'x'])
  const others: Array<[string, CursorScope]> = [
    ['another organisation', { ...scope, tenant: ['org_2', 'ent_1'] }],
    ['another entity', { ...scope, tenant: ['org_1', 'ent_2'] }],
    // Ids that run together alike must not make the same scope.
    ['the same letters split elsewhere', { ...scope, tenant: ['org_1e', 'nt_1'] }],
    ['another resource', { ...scope, resource: 'bills' }],
    ['the other order', { ...scope, order: '-updated_at' }],
    ['no order', { tenant: scope.tenant, resource: scope.resource }]
  ]
  for (const [name, other] of others) t.equal(codec.decode(other, cursor, anything), undefined, name)
  t.equal(cursorCodec('another secret').decode(scope, cursor, anything), undefined, 'another secret')
})

t.test('a good tag on a position the list cannot use is refused by the list\'s check', async t => {
  const isPair = (v: unknown): v is [string, string] => Array.isArray(v) && v.length === 2
  t.equal(codec.decode(scope, codec.encode(scope, { not: 'a pair' }), isPair), undefined)
  t.strictSame(codec.decode(scope, codec.encode(scope, ['a', 'b']), isPair), ['a', 'b'])
})
