import { createHmac } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { Agent, request } from 'undici'
import { ROOT } from '../../../lib/root.js'
import { build, eventually, install } from '../../support/helper.js'
import { listenHttps, selfSigned } from '../../support/receiver.js'
import { invoice } from '../../support/records.js'
import { publish, receiverEnv, subscribe } from '../../support/webhooks.js'

type Handler = Parameters<typeof listenHttps>[1]
type ReceiverModule = {
  createHandler(o: { secret: string, onEvent: (e: Record<string, unknown>) => Promise<void> }): Handler
  verifySignature(secret: string, raw: Buffer, signature: string): boolean
}

const EXAMPLE = join(ROOT, 'docs/examples/webhook-receiver.mjs')

// One app for the file; both example receivers are HTTPS servers with the tests' self-signed certificate.
const app = await build(t, receiverEnv(selfSigned().caFile, { WEBHOOK_RETRY_SCHEDULE: '0,0,0' }))

t.test('the guide shows the example receiver exactly as it is tested', async t => {
  const guide = readFileSync(join(ROOT, 'docs/webhooks.md'), 'utf8')
  t.ok(
    guide.includes(readFileSync(EXAMPLE, 'utf8')),
    'docs/webhooks.md embeds docs/examples/webhook-receiver.mjs verbatim'
  )
})

t.test('the example receiver accepts real deliveries once each and refuses forgeries with 401', async t => {
  const example = (await import(EXAMPLE)) as ReceiverModule
  t.equal(
    example.verifySignature(
      "It's a Secret to Everybody",
      Buffer.from('Hello, World!'),
      '757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17'
    ),
    true,
    'the contract test vector'
  )

  const { caFile } = selfSigned()
  const processed: Array<Record<string, unknown>> = []
  const answers: number[] = []
  let handler: Handler = (_req, res) => {
    res.statusCode = 503
    res.end()
  }
  const { url } = await listenHttps(t, (req, res) => {
    res.on('finish', () => answers.push(res.statusCode))
    handler!(req, res)
  })

  const i = await install(app)
  const secret = (await subscribe(app, i, { target_url: url })).signing_secret
  handler = example.createHandler({
    secret,
    onEvent: async e => {
      processed.push(e)
    }
  })

  const data = invoice({ id: 'inv_7' })
  const event = await publish(app, i, data)
  await eventually(() => processed.length > 0, { what: 'the example receiver to process the delivery' })
  t.match(
    processed,
    [{ id: event.id, topic: 'invoice.paid', data }],
    'processed the real delivery'
  )
  t.same(answers, [204])

  // The same delivery again (a retry) is acknowledged without doing the work twice; a forgery gets 401.
  const body = JSON.stringify({ id: event.id, topic: 'invoice.paid', data })
  const dispatcher = new Agent({ connect: { ca: readFileSync(caFile, 'utf8') } })
  t.teardown(() => dispatcher.close())
  const sign = (s: string, b: string) => createHmac('sha256', s).update(b).digest('hex')
  const post = (b: string, signature: string, eventId: string) =>
    request(url, {
      method: 'POST',
      dispatcher,
      body: b,
      headers: { 'content-type': 'application/json', 'x-service-signature': signature, 'x-service-event-id': eventId }
    })
  t.equal((await post(body, sign(secret, body), event.id)).statusCode, 200, 'a retry of a processed event')
  t.equal((await post(body, sign('whsec_wrong', body), 'evt_forged')).statusCode, 401, 'wrong key')
  t.equal((await post(body + ' ', sign(secret, body), 'evt_forged')).statusCode, 401, 'altered bytes')
  t.equal((await post(body, '', 'evt_forged')).statusCode, 401, 'no signature')
  t.equal(processed.length, 1, 'the work was done once')
})

const STANDARD_EXAMPLE = join(ROOT, 'docs/examples/webhook-receiver-standardwebhooks.mjs')

t.test('the Standard Webhooks example receiver, shown verbatim, accepts real deliveries and refuses forgeries',
  async t => {
    const guide = readFileSync(join(ROOT, 'docs/webhooks.md'), 'utf8')
    t.ok(guide.includes(readFileSync(STANDARD_EXAMPLE, 'utf8')), 'docs/webhooks.md embeds it verbatim')
    const example = (await import(STANDARD_EXAMPLE)) as { createHandler: ReceiverModule['createHandler'] }
    const { caFile } = selfSigned()
    const processed: Array<Record<string, unknown>> = []
    const answers: number[] = []
    let handler: Handler = (_req, res) => res.writeHead(503).end()
    const { url } = await listenHttps(t, (req, res) => {
      res.on('finish', () => answers.push(res.statusCode))
      handler!(req, res)
    })
    const i = await install(app)
    const secret = (await subscribe(app, i, { target_url: url })).signing_secret
    handler = example.createHandler({ secret, onEvent: async e => { processed.push(e) } })
    const data = invoice({ id: 'inv_8' })
    const event = await publish(app, i, data)
    await eventually(() => processed.length > 0, { what: 'the example receiver to process the delivery' })
    t.match(processed, [{ id: event.id, data }], 'processed the real delivery')
    t.same(answers, [204])

    const dispatcher = new Agent({ connect: { ca: readFileSync(caFile, 'utf8') } })
    t.teardown(() => dispatcher.close())
    const body = JSON.stringify({ id: 'evt_forged', topic: 'invoice.paid', data: {} })
    const ts = Math.floor(Date.now() / 1000)
    const sign = (s: string, id: string, at: number, b: string) => 'v1,' +
      createHmac('sha256', Buffer.from(s.slice(6), 'base64')).update(`${id}.${at}.${b}`).digest('base64')
    const post = (b: string, headers: Record<string, string>) =>
      request(url, { method: 'POST', dispatcher, body: b, headers: { 'content-type': 'application/json', ...headers } })
    const headers = (at: number, signature: string) =>
      ({ 'webhook-id': 'evt_forged', 'webhook-timestamp': String(at), 'webhook-signature': signature })
    t.equal((await post(body, headers(ts, sign(secret, 'evt_forged', ts, body)))).statusCode, 204,
      'a correctly signed message is accepted')
    t.equal((await post(body + ' ', headers(ts, sign(secret, 'evt_forged', ts, body)))).statusCode, 401,
      'altered bytes')
    t.equal((await post(body, headers(ts - 3600, sign(secret, 'evt_forged', ts - 3600, body)))).statusCode, 401,
      'an hour-old timestamp (a replay)')
    t.equal((await post(body, headers(ts, sign('whsec_' + Buffer.alloc(32).toString('base64'), 'evt_forged', ts,
      body)))).statusCode, 401, 'another secret')
  })
