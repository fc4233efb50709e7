import { lookup } from 'node:dns/promises'
import { hostname } from 'node:os'
import t from 'tap'
import { checkTargetUrl, isBlockedAddress } from '../../../../../plugins/domain/webhooks/target-guard.js'
import { Sender } from '../../../../../plugins/domain/webhooks/sender.js'
import { build, install } from '../../../../support/helper.js'
import { startReceiver } from '../../../../support/receiver.js'
import { subscribeRaw } from '../../../../support/webhooks.js'

/** A real host name that this machine resolves to a loopback address (/etc/hosts), if there is one. */
async function loopbackName (): Promise<string | undefined> {
  for (const name of [hostname(), 'runsc', 'ip6-localhost', 'ip6-loopback']) {
    try {
      const addresses = await lookup(name, { all: true })
      if (addresses.length > 0 && addresses.every(a => a.address.startsWith('127.') || a.address === '::1')) return name
    } catch {}
  }
  return undefined
}

t.test('creation refuses every private target', async t => {
  const app = await build(t)
  const i = await install(app)
  const name = await loopbackName()
  const targets = [
    'http://hooks.example.com/x',
    'https://127.0.0.1/x',
    'https://[::1]/x',
    'https://10.0.0.1/x',
    'https://169.254.169.254/latest/meta-data',
    'https://0.0.0.0/x',
    'https://[::ffff:127.0.0.1]/x',
    'https://2130706433/x',
    'https://0x7f.0.0.1/x',
    'https://017700000001/x',
    'https://127.1/x',
    'https://localhost/x',
    'https://api.localhost/x',
    'https://100.64.0.1/x',
    'https://192.168.1.1/x',
    'https://172.16.0.1/x',
    'https://[fe80::1]/x',
    'https://[fd00::1]/x',
    'https://[::]/x',
    'https://224.0.0.1/x',
    'https://[64:ff9b::7f00:1]/x',
    'https://[2002:7f00:1::]/x',
    'https://[64:ff9b:1::7f00:1]/x',
    'https://[::ffff:0:127.0.0.1]/x',
    'https://[::ffff:0:7f00:1]/x',
    'https://[2001:0:4136:e378:8000:63bf:3fff:fdd2]/x',
    'https://localhost./x',
    'https://LOCALHOST./x',
    'https://192.0.2.10/x',
    'https://192.88.99.1/x',
    'https://hooks.example.com/x#fragment',
    'https://hooks.example.com/x#',
    ' https://hooks.example.com/x',
    'https://hooks.example.com/x\n',
    'https:hooks.example.com/x',
    'https:/\\/hooks.example.com/x',
    ...(name ? [`https://${name}/x`] : [])
  ]
  if (!name) t.comment('no host name resolves to loopback here; that case is left out')
  for (const target of targets) {
    const res = await subscribeRaw(app, i, { topics: ['invoice.paid'], target_url: target })
    t.equal(res.statusCode, 400, target)
    t.equal(res.json().error, 'invalid_target_url', target)
  }
})

t.test('address ranges', async t => {
  for (const a of [
    '127.0.0.1',
    '10.1.2.3',
    '::1',
    '::ffff:10.0.0.1',
    '::ffff:7f00:1',
    '169.254.169.254',
    '0.0.0.0',
    '255.255.255.255',
    'fc00::1',
    '::',
    '::ffff:0:127.0.0.1',
    '::ffff:0:a00:1',
    '2001:0:4136:e378:8000:63bf:3fff:fdd2',
    '192.88.99.1',
    '2002:c058:6301::'
  ]) {
    t.equal(isBlockedAddress(a), true, a)
  }
  const publicAddresses = [
    '93.184.216.34', '8.8.8.8', '2606:2800:220:1:248:1893:25c8:1946', '::ffff:8.8.8.8', '::ffff:0:8.8.8.8',
    '2001:4860::8888'
  ]
  for (const a of publicAddresses) {
    t.equal(isBlockedAddress(a), false, a)
  }
  t.equal(
    await checkTargetUrl('https://hooks.unresolvable.invalid/x', false),
    undefined,
    'a name that does not resolve now is accepted; delivery checks again when it connects'
  )
  t.equal(
    await checkTargetUrl('https://127.0.0.1/x', true),
    undefined,
    'WEBHOOK_ALLOW_PRIVATE_TARGETS lifts the address rule'
  )
  t.match(await checkTargetUrl('http://127.0.0.1/x', true), 'HTTPS', 'but never the scheme rule')
  t.equal(await checkTargetUrl('https://hooks.example.com/x#part', true), 'target_url must not contain a fragment.',
    'nor the fragment rule')
})

t.test('at connection time the resolved address is checked and used', async t => {
  const receiver = await startReceiver(t)
  const name = await loopbackName()
  const strict = new Sender({ allowPrivate: false, caFile: receiver.caFile, connections: 4 })
  t.teardown(() => strict.close())
  const keys = [{ secret: 'whsec_x', scheme: 'standard' as const }]
  const attempt = { eventId: 'evt_1', topic: 'invoice.paid', attempt: 1, body: '{}', keys }
  const literal = await strict.send({ ...attempt, targetUrl: receiver.url })
  t.match(literal, { status: 0, error: /refused/ }, 'a private literal is refused before connecting')
  if (name) {
    const resolved = await strict.send({ ...attempt, targetUrl: `https://${name}:${receiver.port}/hooks` })
    t.match(
      resolved,
      { status: 0, error: /blocked address/ },
      'a name resolving to loopback is refused when connecting (DNS rebinding)'
    )
  }
  t.equal(receiver.received.length, 0, 'nothing reached the receiver')

  const permissive = new Sender({ allowPrivate: true, caFile: receiver.caFile, connections: 4 })
  t.teardown(() => permissive.close())
  const ok = await permissive.send({ ...attempt, targetUrl: receiver.url })
  t.equal(ok.status, 200, 'the same target is reached when private targets are allowed')
})
