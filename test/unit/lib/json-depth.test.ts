import fc from 'fast-check'
import t from 'tap'
import { nestsDeeperThan } from '../../../lib/json-depth.js'

/** The nesting depth of a JSON value: 0 for a scalar, 1 for a flat array or object. */
const depth = (v: unknown): number =>
  typeof v === 'object' && v !== null ? 1 + Math.max(0, ...Object.values(v).map(depth)) : 0

t.test('examples: depth counts arrays and objects, not brackets inside strings', async t => {
  const cases: Array<[string, number, boolean]> = [
    ['1', 0, false],
    ['[]', 0, true],
    ['[]', 1, false],
    ['{"a":[{"b":[]}]}', 3, true],
    ['{"a":[{"b":[]}]}', 4, false],
    ['"[[[[[[[["', 1, false],
    ['["\\"[[[[", "\\\\", [[1]]]', 2, true],
    ['["\\"[[[[", "\\\\", [[1]]]', 3, false],
    ['[1], [2], [3]', 1, false],
    ['[[1]] ]]]] [[1]]', 2, false]
  ]
  for (const [text, limit, deeper] of cases) t.equal(nestsDeeperThan(text, limit), deeper, `${text} over ${limit}`)
  t.ok(nestsDeeperThan('['.repeat(100_000), 64), 'unbalanced text is refused from the opening brackets alone')
})

t.test('property: agrees with the depth of the parsed value, however it is formatted', async t => {
  const value = fc.jsonValue({ maxDepth: 8 })
  fc.assert(fc.property(value, fc.integer({ min: 0, max: 9 }), fc.boolean(), (v, limit, pretty) => {
    const text = pretty ? JSON.stringify(v, null, 2) : JSON.stringify(v)
    return nestsDeeperThan(text, limit) === (depth(v) > limit)
  }), { numRuns: 2_000 })
  t.pass('nestsDeeperThan(JSON.stringify(v), limit) === depth(v) > limit')
})
