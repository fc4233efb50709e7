import type { FastifyBaseLogger } from 'fastify'
import t from 'tap'
import { throttledLog } from '../../../lib/throttled-log.js'
import { ManualClock } from '../../support/clock.js'

function recorder () {
  const lines: Array<{ obj: Record<string, unknown>, msg: string }> = []
  const log = { warn: (obj: Record<string, unknown>, msg: string) => { lines.push({ obj, msg }) } }
  return { lines, log: log as unknown as FastifyBaseLogger }
}

const HOUR = 3_600_000

t.test('the first failure of a kind is logged with its error', async t => {
  const { lines, log } = recorder()
  const report = throttledLog(log, 'redis unavailable')
  report('refused', Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:6379'), { code: 'ECONNREFUSED' }))
  t.same(lines, [{
    obj: {
      kind: 'refused',
      error: 'connect ECONNREFUSED 127.0.0.1:6379',
      code: 'ECONNREFUSED',
      suppressed: 0,
      interval_s: 10
    },
    msg: 'redis unavailable'
  }], 'the default interval is ten seconds')
})

t.test('inside a window, further failures of the same kind are folded, other kinds still logged', async t => {
  const { lines, log } = recorder()
  const report = throttledLog(log, 'db unavailable', HOUR)
  for (let i = 0; i < 1_000; i++) report('timeout', new Error(`attempt ${i}`))
  report('refused', { code: 'ECONNREFUSED' })
  report('refused', { code: 'ECONNREFUSED' })
  t.equal(lines.length, 2, 'one line per kind')
  t.same(lines.map(l => [l.obj.kind, l.obj.error, l.obj.suppressed, l.obj.interval_s]),
    [['timeout', 'attempt 0', 0, 3600], ['refused', undefined, 0, 3600]])
  t.ok(lines.every(l => l.msg === 'db unavailable'))
})

t.test('whatever was thrown is logged without failing', async t => {
  const { lines, log } = recorder()
  const report = throttledLog(log, 'x', HOUR)
  report('a', undefined)
  report('b', 'a string')
  report('c', null)
  t.same(lines.map(l => [l.obj.kind, l.obj.error, l.obj.code]),
    [['a', undefined, undefined], ['b', undefined, undefined], ['c', undefined, undefined]])
})

t.test('each logger call has its own windows', async t => {
  const { lines, log } = recorder()
  const one = throttledLog(log, 'one', HOUR)
  const two = throttledLog(log, 'two', HOUR)
  one('timeout', new Error('e'))
  two('timeout', new Error('e'))
  one('timeout', new Error('e'))
  t.same(lines.map(l => l.msg), ['one', 'two'])
})

t.test('once a window has passed, the next failure is logged with the count folded into the window before', async t => {
  const { lines, log } = recorder()
  const clock = new ManualClock()
  const report = throttledLog(log, 'db unavailable', 10_000, clock)
  report('timeout', new Error('first'))
  for (let i = 0; i < 5; i++) report('timeout', new Error('folded'))
  clock.advance(9_999)
  report('timeout', new Error('still inside'))
  t.equal(lines.length, 1, 'nothing more inside the window')
  clock.advance(1)
  report('timeout', new Error('next window'))
  t.same(lines.map(l => [l.obj.error, l.obj.suppressed]), [['first', 0], ['next window', 6]],
    'the next line says how many were folded')
  clock.advance(10_000)
  report('timeout', new Error('quiet window'))
  t.same(lines.at(-1)!.obj.suppressed, 0, 'a window with nothing folded counts none')
})
