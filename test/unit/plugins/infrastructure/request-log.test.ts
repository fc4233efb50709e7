import { Writable } from 'node:stream'
import type { RawRequestDefaultExpression } from 'fastify'
import fc from 'fast-check'
import pino from 'pino'
import t from 'tap'
import { genReqId, loggerOptions, redactUrl } from '../../../../plugins/infrastructure/request-log.js'

const SECRET_PARAMS = ['code', 'code_verifier', 'client_secret', 'refresh_token', 'access_token', 'token',
  'signing_secret']

t.test('redactUrl: secret query parameters replaced, however their names are written', async t => {
  const cases: Array<[string, string]> = [
    ['/public/v1/me', '/public/v1/me'],
    ['/x?', '/x?'],
    ['/x?state=abc&scope=a%20b', '/x?state=abc&scope=a%20b'],
    ['/oauth/authorize?client_id=c&code=leaked&state=s', '/oauth/authorize?client_id=c&code=[REDACTED]&state=s'],
    ['/x?access_token=a&token=b&refresh_token=c',
      '/x?access_token=[REDACTED]&token=[REDACTED]&refresh_token=[REDACTED]'],
    ['/x?client_secret=s&code_verifier=v&signing_secret=w',
      '/x?client_secret=[REDACTED]&code_verifier=[REDACTED]&signing_secret=[REDACTED]'],
    ['/x?access%5Ftoken=encoded', '/x?access%5Ftoken=[REDACTED]'],
    ['/x?CODE%3D=upper', '/x?CODE%3D=[REDACTED]'],
    ['/x?Code=1', '/x?Code=[REDACTED]'],
    ['/x?code', '/x?code=[REDACTED]'],
    ['/x?code=a=b', '/x?code=[REDACTED]'],
    ['/x?code=1&code=2', '/x?code=[REDACTED]&code=[REDACTED]'],
    ['/x?%E0%A4%A=1&token=2', '/x?%E0%A4%A=1&token=[REDACTED]'],
    ['/x?codes=1&my_token=2&tokens=3', '/x?codes=1&my_token=2&tokens=3'],
    ['/x?a+b=1', '/x?a+b=1']
  ]
  for (const [url, redacted] of cases) t.equal(redactUrl(url), redacted, url)
})

t.test('redactUrl, generated: no secret value survives, every other pair does', async t => {
  const value = fc.string({ minLength: 1, maxLength: 12 }).map(s => encodeURIComponent(s))
  const name = fc.oneof(
    fc.constantFrom(...SECRET_PARAMS).map(n => ({ n, secret: true })),
    fc.constantFrom(...SECRET_PARAMS).map(n => ({ n: n.toUpperCase().replace('_', '%5F'), secret: true })),
    fc.stringMatching(/^[a-z]{1,8}$/).filter(n => !SECRET_PARAMS.includes(n)).map(n => ({ n, secret: false }))
  )
  fc.assert(fc.property(fc.array(fc.tuple(name, value), { minLength: 1, maxLength: 6 }), pairs => {
    const url = `/path?${pairs.map(([{ n }, v]) => `${n}=${v}`).join('&')}`
    const out = redactUrl(url).split('?')[1]!.split('&')
    return pairs.every(([{ n, secret }, v], i) => out[i] === (secret ? `${n}=[REDACTED]` : `${n}=${v}`))
  }))
  t.pass('secret names redacted in any case or encoding, the rest untouched and in order')
})

t.test('genReqId: a sane incoming id is kept, anything else replaced by a UUID', async t => {
  const req = (id?: unknown) => ({ headers: id === undefined ? {} : { 'x-request-id': id } }) as unknown as
    RawRequestDefaultExpression
  for (const id of ['abc', 'A-Z_a.z:0-9', 'x'.repeat(128), '0190f3e4-0000-7000-8000-000000000000']) {
    t.equal(genReqId(req(id)), id, `kept: ${id.slice(0, 20)}`)
  }
  for (const id of [undefined, '', 'x'.repeat(129), 'a b', 'a/b', 'a\nb', '<script>', 'ü', ['a', 'b']]) {
    t.match(genReqId(req(id)), /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/,
      `replaced: ${JSON.stringify(id)?.slice(0, 20)}`)
  }
  t.not(genReqId(req()), genReqId(req()), 'a new one each time')
})

t.test('loggerOptions: secrets redacted at the top and one level down, err.code kept readable', async t => {
  const lines: Array<Record<string, unknown>> = []
  const stream = new Writable({
    write (chunk, _enc, done) {
      lines.push(JSON.parse(String(chunk)))
      done()
    }
  })
  const options = loggerOptions('info', stream) as pino.LoggerOptions & { stream: NodeJS.WritableStream }
  const log = pino(options, options.stream)
  log.info({
    authorization: 'Bearer a',
    client_secret: 's',
    body: { code: 'c', refresh_token: 'r', password: 'p', name: 'ok' },
    query: { code: 'q' },
    headers: { cookie: 'k' },
    err: { code: 'ECONNREFUSED', params: ['v'], parameters: ['w'], message: 'm' }
  }, 'x')
  const req = { method: 'GET', url: '/cb?code=abc&state=1', id: 'r1', headers: { authorization: 'Bearer z' } }
  log.info({ req }, 'y')
  log.info({ res: { headers: { 'set-cookie': 'session=1' } } }, 'z')
  const [a, b, c] = lines
  t.equal(a!.authorization, '[REDACTED]')
  t.equal(a!.client_secret, '[REDACTED]')
  t.same(a!.body, { code: '[REDACTED]', refresh_token: '[REDACTED]', password: '[REDACTED]', name: 'ok' })
  t.same(a!.query, { code: '[REDACTED]' })
  t.same(a!.headers, { cookie: '[REDACTED]' })
  t.match(a!.err, { code: 'ECONNREFUSED', params: '[REDACTED]', parameters: '[REDACTED]', message: 'm' },
    'err.code stays; query parameters of a database error do not')
  t.same(b!.req, { method: 'GET', url: '/cb?code=[REDACTED]&state=1', id: 'r1' },
    'a request: method, redacted URL, id')
  t.same(c!.res, { headers: { 'set-cookie': '[REDACTED]' } })
  t.equal(a!.level, 30)
  t.notOk(JSON.stringify(lines).match(/Bearer [az]|"[sqrckpvw]"(?!:)/), 'no secret value anywhere')
})
