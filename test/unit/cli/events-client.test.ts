// The producer's side of POST /events for the command line: batches within the route's limits, refusals mapped to
// the lines of an NDJSON file (cli/events-client.ts, cli/event-import.ts).
import t from 'tap'
import { Batch, MAX_BATCH, refusal, refusalHint } from '../../../cli/events-client.js'
import { problemsByLine } from '../../../cli/event-import.js'
import { EVENTS_BODY_LIMIT } from '../../../lib/limits.js'
import { MAX_EVENT_BATCH } from '../../../schemas/events.js'

t.test('the batch size is the route\'s', async t => {
  t.equal(MAX_BATCH, MAX_EVENT_BATCH)
})

t.test('a batch closes at its size or before the body limit, counting bytes, and sends the events as given',
  async t => {
    const b = new Batch<number>(3, 30)
    t.ok(b.fits('{"a":"ü"}'))
    b.add('{"a":"ü"}', 1)
    b.add('{"b":2}', 2)
    t.equal(b.body(), '[{"a":"ü"},{"b":2}]')
    t.equal(Buffer.byteLength(b.body()), 20)
    t.notOk(b.fits('{"c":"12345"}'), '20 + 1 + 13 bytes would pass 30')
    t.ok(b.fits('{"c":"1"}'), '20 + 1 + 9 = 30 fits')
    b.add('{"c":"1"}', 3)
    t.equal(Buffer.byteLength(b.body()), 30)
    t.notOk(b.fits('{}'), 'three is the size')
    b.clear()
    t.ok(b.fits('x'.repeat(100)), 'an empty batch takes anything (the route answers 413 for it)')
    t.equal(new Batch(MAX_BATCH).limit, EVENTS_BODY_LIMIT)
  })

t.test('a refusal in a few words, and the hint for a wrong token', async t => {
  const answer = (status: number, body: string) => {
    let json
    try { json = JSON.parse(body) } catch {}
    return { ok: false as const, status, body, json }
  }
  t.equal(refusal(answer(400, '{"error":"validation_error","message":"Request validation failed.","details":[]}')),
    '400 validation_error: Request validation failed.')
  t.equal(refusal(answer(502, '<html>Bad gateway</html>\n')), '502 <html>Bad gateway</html>')
  t.match(refusalHint(answer(401, '{"error":"invalid_token"}')), /another EVENTS_TOKEN/)
  t.equal(refusalHint(answer(400, '{}')), '')
})

t.test('problems are named at the file\'s line of their event', async t => {
  const batch = [{ meta: { line: 12, topic: 'invoice.created' } }, { meta: { line: 14, topic: 'invoice.deleted' } }]
  const refused = (status: number, json: object) =>
    ({ ok: false as const, status, body: JSON.stringify(json), json })
  t.same(problemsByLine('e.ndjson', refused(400, {
    error: 'validation_error',
    details: [
      { path: '/1/data/total', message: 'must equal subtotal + tax_total (1303.05)' },
      { path: '/0', message: 'must have required property \'topic\'' },
      { path: '/', message: 'nests deeper than 64 levels' }
    ]
  }), batch), [
    'e.ndjson:14: /data/total must equal subtotal + tax_total (1303.05)',
    'e.ndjson:12: (the event) must have required property \'topic\'',
    'e.ndjson: / nests deeper than 64 levels'
  ])
  t.same(problemsByLine('e.ndjson', refused(400, {
    error: 'unknown_topic', message: 'Unknown topic: invoice.deleted', unknown: ['invoice.deleted']
  }), batch), ['e.ndjson:14: Unknown topic: invoice.deleted'])
  t.same(problemsByLine('e.ndjson', refused(422, {
    error: 'topic_not_emitted', message: 'Topic invoice.created is planned and not emitted yet.'
  }), batch), ['e.ndjson:12: Topic invoice.created is planned and not emitted yet.'])
  t.same(problemsByLine('e.ndjson', refused(409, { error: 'event_conflict' }), batch), [], 'no line to name')
})
