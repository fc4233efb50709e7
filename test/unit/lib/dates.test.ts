import t from 'tap'
import fc from 'fast-check'
import { parseTypedInstant } from '../../../lib/dates.js'

t.test('a typed instant: ISO 8601 with a zone, or a datetime-local value read as UTC', async t => {
  t.equal(parseTypedInstant('2026-11-28T09:30')?.toISOString(), '2026-11-28T09:30:00.000Z', 'datetime-local')
  t.equal(parseTypedInstant('2026-11-28T09:30:05')?.toISOString(), '2026-11-28T09:30:05.000Z', 'with seconds')
  t.equal(parseTypedInstant('2026-11-28T09:30:05.123Z')?.toISOString(), '2026-11-28T09:30:05.123Z')
  t.equal(parseTypedInstant('2026-11-28T09:30:00+01:00')?.toISOString(), '2026-11-28T08:30:00.000Z', 'an offset')
  t.equal(parseTypedInstant(' 2026-11-28 09:30z ')?.toISOString(), '2026-11-28T09:30:00.000Z', 'a space, a small z')
  for (const bad of ['', 'yesterday', '2026-11-28', '2026-02-30T00:00', '2026-11-28T24:30', '0000-01-01T00:00Z',
    '2026-11-28T09:30+1', '2026-11-28T09:30:00.1234Z', '12026-01-01T00:00']) {
    t.equal(parseTypedInstant(bad), undefined, `refused: ${JSON.stringify(bad)}`)
  }
})

t.test('every instant of the years 1 to 9999 reads back from its ISO text and its datetime-local value', async t => {
  const instants = fc.date({
    min: new Date('0001-01-01T00:00:00Z'), max: new Date('9999-12-31T23:59:59Z'), noInvalidDate: true
  })
  fc.assert(fc.property(instants, d => {
    t.equal(parseTypedInstant(d.toISOString())?.getTime(), d.getTime())
    const seconds = new Date(Math.floor(d.getTime() / 1000) * 1000)
    t.equal(parseTypedInstant(seconds.toISOString().slice(0, 19))?.getTime(), seconds.getTime())
  }))
})
