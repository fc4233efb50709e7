import t from 'tap'
import { networkErrorKind } from '../../../lib/network-errors.js'

t.test('socket errors by kind, the same words for every dependency', async t => {
  const kinds: Record<string, string> = {
    ECONNREFUSED: 'refused',
    ECONNRESET: 'connection_lost',
    EPIPE: 'connection_lost',
    ETIMEDOUT: 'timeout',
    ENOTFOUND: 'unresolved',
    EAI_AGAIN: 'unresolved',
    EHOSTUNREACH: 'unreachable',
    ENETUNREACH: 'unreachable'
  }
  for (const [code, kind] of Object.entries(kinds)) {
    const err = Object.assign(new Error(`connect ${code}`), { code })
    t.equal(networkErrorKind(err), kind, code)
    t.equal(networkErrorKind({ code }), kind, `${code} on a plain object (what ioredis and pg pass on)`)
  }
})

t.test('anything else has no kind', async t => {
  for (const err of [undefined, null, 'ECONNREFUSED', 42, {}, new Error('x'), { code: 42 }, { code: 'econnrefused' },
    { code: '57P01' }, { code: 'ERR_SOCKET_CLOSED' }, { code: '' }]) {
    t.equal(networkErrorKind(err), undefined, JSON.stringify(err) ?? String(err))
  }
  for (const code of ['constructor', 'toString', '__proto__', 'hasOwnProperty']) {
    t.equal(networkErrorKind({ code }), undefined, `a code named like an Object member: ${code}`)
  }
})
