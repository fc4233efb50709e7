import fc from 'fast-check'
import t from 'tap'
import {
  decimals, fromUnits, isCurrency, isNegativeZero, minorDigits, roundUnits, toUnits
} from '../../../lib/money.js'

t.test('isCurrency: ISO 4217 codes in circulation only', async t => {
  for (const code of ['EUR', 'USD', 'JPY', 'BHD', 'KWD', 'GBP', 'CHF', 'SEK', 'XOF']) t.ok(isCurrency(code), code)
  for (const code of ['XYZ', 'eur', 'Eur', 'EURO', 'EU', '', ' EUR', 'XAU', 'XXX', 'XTS']) {
    t.notOk(isCurrency(code), `${JSON.stringify(code)} is not one`)
  }
})

t.test('minorDigits: the ISO 4217 table, 2 unless it says otherwise', async t => {
  const table: Record<string, number> = {
    EUR: 2,
    USD: 2,
    GBP: 2,
    HUF: 2,
    JPY: 0,
    KRW: 0,
    ISK: 0,
    CLP: 0,
    VND: 0,
    XOF: 0,
    BHD: 3,
    KWD: 3,
    JOD: 3,
    IQD: 3,
    TND: 3,
    OMR: 3,
    CLF: 4,
    UYW: 4,
    XYZ: 2
  }
  for (const [code, digits] of Object.entries(table)) t.equal(minorDigits(code), digits, code)
})

t.test('decimals: the digits after the point of a decimal string; undefined when it is not one', async t => {
  const cases: Array<[string, number | undefined]> = [
    ['1250.00', 2], ['1250', 0], ['0', 0], ['0.5', 1], ['-0.5', 1], ['-12.3456', 4], ['10', 0],
    ['01', undefined], ['00.1', undefined], ['1.', undefined], ['.5', undefined], ['+1', undefined], ['1e3', undefined],
    [' 1', undefined], ['1 ', undefined], ['', undefined], ['-', undefined], ['--1', undefined], ['1.2.3', undefined],
    ['1,00', undefined], ['١٢', undefined], ['NaN', undefined], ['Infinity', undefined]
  ]
  for (const [value, expected] of cases) t.equal(decimals(value), expected, JSON.stringify(value))
})

t.test('isNegativeZero: zero with a minus, in any number of decimals; nothing else', async t => {
  for (const value of ['-0', '-0.0', '-0.00', '-0.000', '-0.0000']) t.ok(isNegativeZero(value), value)
  for (const value of ['0', '0.00', '-0.01', '-0.10', '-1', '-10', '-00', '-0.', '-.0', '-0.001', '0.-0', '']) {
    t.notOk(isNegativeZero(value), JSON.stringify(value))
  }
  t.notOk([-1n, 0n, 1n].some(u => [0, 2, 3].some(digits => isNegativeZero(fromUnits(u, digits)))),
    'fromUnits never writes one')
})

t.test('toUnits and fromUnits: examples', async t => {
  const cases: Array<[string, number, bigint]> = [
    ['1250.00', 2, 125000n], ['1250', 0, 1250n], ['1.5', 4, 15000n], ['-0.01', 2, -1n], ['0', 3, 0n],
    ['-1', 0, -1n], ['0.007', 3, 7n], ['123456789012345678901234567890.12', 2, 12345678901234567890123456789012n]
  ]
  for (const [value, scale, units] of cases) t.equal(toUnits(value, scale), units, `toUnits(${value}, ${scale})`)
  t.equal(toUnits('2', 2), 200n, 'fewer decimals than the scale are padded')
  t.equal(toUnits('0.1', 2) + toUnits('0.2', 2), toUnits('0.3', 2), '0.1 + 0.2 is 0.3 here')
  t.throws(() => toUnits('1e3', 2), { message: 'not a decimal: 1e3' })
  t.throws(() => toUnits('', 2))

  const back: Array<[bigint, number, string]> = [
    [125000n, 2, '1250.00'], [5n, 2, '0.05'], [-5n, 2, '-0.05'], [0n, 2, '0.00'], [0n, 0, '0'], [-1n, 0, '-1'],
    [7n, 3, '0.007'], [-1000n, 3, '-1.000'], [1234n, 4, '0.1234']
  ]
  for (const [units, scale, value] of back) t.equal(fromUnits(units, scale), value, `fromUnits(${units}, ${scale})`)
})

t.test('property: fromUnits and toUnits are inverses, with exactly `scale` decimals', async t => {
  fc.assert(fc.property(fc.bigInt({ min: -(10n ** 30n), max: 10n ** 30n }), fc.integer({ min: 0, max: 6 }),
    (units, scale) => {
      const text = fromUnits(units, scale)
      return decimals(text) === scale && toUnits(text, scale) === units
    }), { numRuns: 2_000 })
  t.pass('toUnits(fromUnits(u, s), s) === u and decimals(fromUnits(u, s)) === s')
})

t.test('roundUnits: half away from zero, both signs', async t => {
  const cases: Array<[bigint, number, number, bigint]> = [
    [15n, 1, 0, 2n], [-15n, 1, 0, -2n], [25n, 1, 0, 3n], [-25n, 1, 0, -3n], [14n, 1, 0, 1n], [-14n, 1, 0, -1n],
    [16n, 1, 0, 2n], [-16n, 1, 0, -2n], [4n, 1, 0, 0n], [-4n, 1, 0, 0n], [5n, 1, 0, 1n], [-5n, 1, 0, -1n],
    [12345n, 4, 2, 123n], [12350n, 4, 2, 124n], [-12350n, 4, 2, -124n], [12349n, 4, 2, 123n],
    [7201875n, 4, 3, 720188n], [42n, 2, 2, 42n], [-42n, 3, 3, -42n], [0n, 4, 0, 0n]
  ]
  for (const [units, from, to, rounded] of cases) {
    t.equal(roundUnits(units, from, to), rounded, `roundUnits(${units}, ${from}, ${to})`)
  }
})

t.test('property: roundUnits is the nearest, halves away from zero, the same for both signs', async t => {
  fc.assert(fc.property(fc.bigInt({ min: -(10n ** 20n), max: 10n ** 20n }), fc.integer({ min: 0, max: 8 }),
    fc.integer({ min: 0, max: 8 }), (units, a, b) => {
      const [to, from] = a <= b ? [a, b] : [b, a]
      const divisor = 10n ** BigInt(from - to)
      const rounded = roundUnits(units, from, to)
      const error = rounded * divisor - units
      const abs = (x: bigint) => x < 0n ? -x : x
      const nearest = 2n * abs(error) <= divisor
      // On a tie, the magnitude went up: away from zero.
      const tieAway = 2n * abs(error) !== divisor || abs(rounded * divisor) > abs(units)
      return nearest && tieAway && roundUnits(-units, from, to) === -rounded &&
        roundUnits(units * divisor, from, to) === units
    }), { numRuns: 3_000 })
  t.pass('|rounded − units| ≤ ½, ties away from zero, odd symmetry, exact on multiples')

  // Against Math.round on magnitudes (it rounds halves up, which on a magnitude is away from zero).
  fc.assert(fc.property(fc.integer({ min: -1e9, max: 1e9 }), fc.integer({ min: 1, max: 4 }), (n, places) => {
    const expected = Math.sign(n) * Math.round(Math.abs(n) / 10 ** places)
    return roundUnits(BigInt(n), places, 0) === BigInt(expected)
  }), { numRuns: 2_000 })
  t.pass('roundUnits(n, p, 0) === sign(n) × Math.round(|n| / 10^p)')
})
