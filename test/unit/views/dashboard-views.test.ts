// The dashboard's view helpers that hold a rule of their own: masked signatures, the chart's hours, the notices.
import t from 'tap'
import { maskSignature } from '../../../views/attempts.js'
import { activityChart, lastHours } from '../../../views/chart.js'
import { encodeNotice, noticeText } from '../../../views/notices.js'

t.test('signatures are masked, their scheme and version kept', async t => {
  t.equal(maskSignature('v1,K5oZfzN95Z9UVu1EsfQmfVNQhnkZ2pj9o9NDN/H/pI4='), 'v1,••••••••')
  t.equal(maskSignature('v1,abc= v1,def='), 'v1,•••••••• v1,••••••••', 'each of several')
  t.equal(maskSignature('sha256=0123abcd'), 'sha256=••••••••')
  t.equal(maskSignature('0123abcd'), '••••••••', 'a bare value')
})

t.test('the last 24 hours: whole hours up to the current one, absent hours as 0, the same hour summed', async t => {
  const now = Date.parse('2026-11-28T10:42:00Z')
  const hours = lastHours(now, 24, [
    { hour: new Date('2026-11-28T10:00:00Z'), succeeded: 3, failed: 1 },
    { hour: new Date('2026-11-28T10:00:00Z'), succeeded: 2, failed: 0 },
    { hour: new Date('2026-11-27T11:00:00Z'), succeeded: 1, failed: 4 }
  ])
  t.equal(hours.length, 24)
  t.equal(hours[0]!.hour.toISOString(), '2026-11-27T11:00:00.000Z', 'the oldest hour first')
  t.same(hours.at(-1), { hour: new Date('2026-11-28T10:00:00Z'), succeeded: 5, failed: 1 })
  t.same(hours[0], { hour: new Date('2026-11-27T11:00:00Z'), succeeded: 1, failed: 4 })
  t.equal(hours.slice(1, -1).reduce((n, h) => n + h.succeeded + h.failed, 0), 0)
})

t.test('the chart is an image with its title, one bar per figure, scaled to the largest', async t => {
  const hours = lastHours(Date.parse('2026-11-28T10:00:00Z'), 2, [
    { hour: new Date('2026-11-28T10:00:00Z'), succeeded: 10, failed: 5 }
  ])
  const svg = activityChart(hours, 'c1', 'Attempts <per> hour').toString()
  t.match(svg, /<svg role="img" aria-labelledby="c1"/)
  t.match(svg, '<title id="c1">Attempts &lt;per&gt; hour</title>', 'the title escaped')
  t.equal(svg.match(/<rect /g)?.length, 4, 'two figures an hour')
  const heights = [...svg.matchAll(/height="(\d+)"/g)].map(m => Number(m[1]))
  t.same(heights.slice(2), [128, 64], 'succeeded fills the plot, failed half of it')
})

t.test('a notice is one of the fixed texts, its arguments as given; anything else is none', async t => {
  t.equal(noticeText(encodeNotice(['retried', 'dlv_1'])), 'Delivery dlv_1 is due again and goes out within seconds.')
  t.equal(noticeText(encodeNotice(['replayed', '1', 'false'])), '1 delivery is queued again.')
  t.match(noticeText(encodeNotice(['replayed', '3', 'true'])), /^3 deliveries are queued again\. More matched/)
  t.equal(noticeText(Buffer.from('["constructor"]').toString('base64url')), undefined, 'not an own message')
  t.equal(noticeText(Buffer.from('["retried",1]').toString('base64url')), undefined, 'arguments are text')
  t.equal(noticeText('%%%'), undefined)
  t.equal(noticeText(undefined), undefined)
})
