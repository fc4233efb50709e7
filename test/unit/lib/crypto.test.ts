import fc from 'fast-check'
import t from 'tap'
import { pkceChallenge, randomToken, safeEqual, sha256, uuidv7, uuidv7Time } from '../../../lib/crypto.js'

t.test('randomToken: the prefix, then the bytes in base64url', async t => {
  const token = randomToken('mgs_')
  t.match(token, /^mgs_[A-Za-z0-9_-]{43}$/, '32 bytes by default: 43 base64url characters')
  t.match(randomToken('x', 16), /^x[A-Za-z0-9_-]{22}$/)
  t.not(randomToken('x'), randomToken('x'), 'two tokens differ')
})

t.test('sha256 and pkceChallenge: known vectors, base64url without padding', async t => {
  t.equal(sha256('abc'), 'ungWv48Bz-pBQUDeXa4iI7ADYaOWF3qctBD_YfIAFa0')
  // RFC 7636 appendix B.
  t.equal(pkceChallenge('dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk'), 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM')
  const verifier = 'dBjftJeZ4CVP-mB92K27uhbUJU1p1r_wW1gFWFOEjXk'
  t.equal(pkceChallenge(verifier), sha256(verifier), 'for an ASCII verifier the challenge is its SHA-256')
})

t.test('safeEqual is string equality, whatever the lengths and characters', async t => {
  t.ok(safeEqual('secret', 'secret'))
  t.notOk(safeEqual('secret', 'secreT'))
  t.notOk(safeEqual('secret', 'secret1'), 'a different length is not equal (and does not throw)')
  t.notOk(safeEqual('é', 'e\u0301'), 'compared as bytes, not as normalised text')
  const text = fc.string({ unit: 'binary-ascii', maxLength: 12 })
  fc.assert(fc.property(text, text, (a, b) => safeEqual(a, b) === (a === b) && safeEqual(a, a)))
  t.pass('safeEqual(a, b) === (a === b) for generated strings')
})

t.test('uuidv7 carries its millisecond time, and uuidv7Time reads it back', async t => {
  const id = uuidv7(Date.UTC(2026, 0, 2, 3, 4, 5, 678))
  t.match(id, /^[0-9a-f]{8}-[0-9a-f]{4}-7[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/, 'RFC 9562 version 7, variant 10')
  t.equal(uuidv7Time(id), Date.UTC(2026, 0, 2, 3, 4, 5, 678))
  fc.assert(fc.property(fc.integer({ min: 0, max: 2 ** 48 - 1 }), ms => uuidv7Time(uuidv7(ms)) === ms))
  t.pass('uuidv7Time(uuidv7(ms)) === ms over the whole 48-bit range')
  fc.assert(fc.property(fc.integer({ min: 0, max: 2 ** 48 - 2 }), fc.integer({ min: 1, max: 2 ** 20 }), (ms, d) =>
    uuidv7(ms) < uuidv7(Math.min(ms + d, 2 ** 48 - 1))))
  t.pass('a later millisecond sorts after an earlier one, as text')
})

t.test('uuidv7Time is undefined for anything but a lower-case UUIDv7', async t => {
  const v7 = uuidv7(1_700_000_000_000)
  for (const id of [
    '',
    'not-a-uuid',
    '6ba7b810-9dad-41d1-80b4-00c04fd430c8', // version 4
    v7.replace(/^(.{14})7/, '$18'), // version 8
    v7.slice(0, 19) + 'c' + v7.slice(20), // variant 110
    v7.toUpperCase(),
    ` ${v7}`,
    `${v7}\n`,
    v7.replace(/-/g, '')
  ]) {
    t.equal(uuidv7Time(id), undefined, JSON.stringify(id))
  }
})
