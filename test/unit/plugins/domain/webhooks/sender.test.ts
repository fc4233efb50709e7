// How the sender names a failed attempt (docs/rules.md#test-deliveries-replay-and-the-delivery-log), from error
// codes and against local sockets that refuse, reset, speak something other than TLS, or never answer; and how it
// reads Retry-After.
import { createServer, type Server, type Socket } from 'node:net'
import t, { type Test } from 'tap'
import { classOf, parseRetryAfter, Sender } from '../../../../../plugins/domain/webhooks/sender.js'

t.test('classOf: error codes to error classes', async t => {
  const cases: Array<[string | undefined, string, string]> = [
    [undefined, 'TimeoutError', 'timeout'],
    ['UND_ERR_HEADERS_TIMEOUT', 'HeadersTimeoutError', 'timeout'],
    ['UND_ERR_BODY_TIMEOUT', 'BodyTimeoutError', 'timeout'],
    ['UND_ERR_CONNECT_TIMEOUT', 'ConnectTimeoutError', 'connect_timeout'],
    ['ECONNREFUSED', 'Error', 'connection_refused'],
    ['ECONNRESET', 'Error', 'connection_reset'],
    ['UND_ERR_SOCKET', 'SocketError', 'connection_reset'],
    ['EPIPE', 'Error', 'connection_reset'],
    ['ENOTFOUND', 'Error', 'dns'],
    ['EAI_AGAIN', 'Error', 'dns'],
    ['ENODATA', 'Error', 'dns'],
    ['ETARGETBLOCKED', 'Error', 'blocked'],
    ['DEPTH_ZERO_SELF_SIGNED_CERT', 'Error', 'tls'],
    ['ERR_TLS_CERT_ALTNAME_INVALID', 'Error', 'tls'],
    ['ERR_SSL_WRONG_VERSION_NUMBER', 'Error', 'tls'],
    ['UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'Error', 'tls'],
    ['EHOSTUNREACH', 'Error', 'network'],
    [undefined, 'Error', 'network']
  ]
  for (const [code, name, expected] of cases) t.equal(classOf(code, name), expected, `${code} ${name}`)
})

t.test('parseRetryAfter: seconds or an HTTP date, else nothing', async t => {
  const now = Date.parse('2026-03-01T12:00:00Z')
  t.equal(parseRetryAfter(undefined, now), null)
  t.equal(parseRetryAfter('', now), null)
  t.equal(parseRetryAfter('120', now), 120)
  t.equal(parseRetryAfter(['30', '60'], now), 30, 'the first of repeated headers')
  t.equal(parseRetryAfter('Sun, 01 Mar 2026 12:01:30 GMT', now), 90, 'a date: the seconds until then')
  t.equal(parseRetryAfter('Sun, 01 Mar 2026 11:00:00 GMT', now), 0, 'a date in the past: at once')
  t.equal(parseRetryAfter('soon', now), null)
})

/** A TCP server on 127.0.0.1 that does `onSocket` with every connection; closed when the test ends. */
async function tcp (t: Test, onSocket: (s: Socket) => void): Promise<{ url: string, server: Server }> {
  const sockets = new Set<Socket>()
  const server = createServer(s => {
    sockets.add(s)
    s.on('error', () => {})
    onSocket(s)
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>(resolve => {
    for (const s of sockets) s.destroy()
    server.close(() => resolve())
  }))
  const { port } = server.address() as { port: number }
  return { url: `https://127.0.0.1:${port}/hooks`, server }
}

const attempt = (targetUrl: string) => ({
  targetUrl,
  eventId: 'evt_1',
  topic: 'invoice.paid',
  attempt: 1,
  body: '{}',
  keys: [{ secret: 'whsec_' + Buffer.alloc(32).toString('base64'), scheme: 'standard' as const }]
})

t.test('the sender against local sockets', async t => {
  const sender = new Sender({ allowPrivate: true, caFile: undefined, connections: 4, timeoutMs: 200 })
  t.teardown(() => sender.close())

  const closed = await tcp(t, () => {})
  await new Promise(resolve => closed.server.close(resolve))
  t.match(await sender.send(attempt(closed.url)),
    { status: 0, errorClass: 'connection_refused', responseHeaders: null }, 'nobody listening')

  const reset = await tcp(t, s => s.resetAndDestroy())
  t.match(await sender.send(attempt(reset.url)), { status: 0, errorClass: 'connection_reset' }, 'reset at once')

  const plain = await tcp(t, s => s.end('HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n'))
  t.match(await sender.send(attempt(plain.url)), { status: 0, errorClass: 'tls' }, 'an answer that is not TLS')

  // A TLS handshake that never completes: a time-out below the 5 s to connect bounds the connection too.
  const silent = await tcp(t, () => {})
  const hung = await sender.send(attempt(silent.url))
  t.match(hung, { status: 0, errorClass: 'connect_timeout', error: 'connect timed out after 0.2 s' },
    'no handshake: the connection time-out, within the attempt\'s')
  t.match(hung.requestHeaders, { 'x-service-event-id': 'evt_1', 'webhook-id': 'evt_1' }, 'what was sent is kept')

  const strict = new Sender({ allowPrivate: false, caFile: undefined, connections: 1 })
  t.teardown(() => strict.close())
  t.match(await strict.send(attempt(silent.url)), { status: 0, errorClass: 'blocked', error: /refused/ },
    'a private literal without WEBHOOK_ALLOW_PRIVATE_TARGETS: refused before connecting')
})
