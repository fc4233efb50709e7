import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { ROOT } from '../../../lib/root.js'
import {
  EMITTED_TOPICS, PLANNED_TOPICS, RECORD_TOPICS, recordKindOf, TEST_TOPIC, TOPIC_DESCRIPTIONS, topicKind
} from '../../../lib/topics.js'

t.test('the registry is the one docs/rules.md#topics lists', async t => {
  const section = readFileSync(join(ROOT, 'docs/rules.md'), 'utf8').split('\n### Topics\n')[1]!.split('\n### ')[0]!
  const emitted = /Emitted \(delivered\)(.*?)\. Planned/s.exec(section)?.[1]
  const planned = /never delivered\):\s+(.*?)\.\n/s.exec(section)?.[1]
  // The topics among the quoted words (the sentence also quotes `data`).
  const names = (s: string | undefined) => [...(s ?? '').matchAll(/`([a-z_]+\.[a-z_]+)`/g)].map(m => m[1])
  t.same([...EMITTED_TOPICS], names(emitted))
  t.same([...PLANNED_TOPICS], names(planned))
})

t.test('the emitted topics are the record topics, each carrying the record its name starts with', async t => {
  t.same([...EMITTED_TOPICS], [
    'invoice.created', 'invoice.updated', 'invoice.paid', 'invoice.voided',
    'bill.created', 'bill.updated', 'bill.paid',
    'customer.created', 'customer.updated', 'customer.archived'
  ])
  t.same(Object.keys(RECORD_TOPICS), [...EMITTED_TOPICS])
  for (const topic of EMITTED_TOPICS) t.equal(recordKindOf(topic), topic.split('.')[0], topic)
  for (const topic of [...PLANNED_TOPICS, TEST_TOPIC, 'invoice.deleted', 'toString', 'constructor', '__proto__']) {
    t.equal(recordKindOf(topic), undefined, `${topic}: no record`)
  }
})

t.test('every topic is of one kind and described', async t => {
  for (const topic of EMITTED_TOPICS) t.equal(topicKind(topic), 'emitted', topic)
  for (const topic of PLANNED_TOPICS) {
    t.equal(topicKind(topic), 'planned', topic)
    t.match(TOPIC_DESCRIPTIONS[topic], /^Planned: /, `${topic} says it is planned`)
  }
  for (const topic of EMITTED_TOPICS) t.notMatch(TOPIC_DESCRIPTIONS[topic], /Planned/, `${topic} does not`)
  t.same(Object.keys(TOPIC_DESCRIPTIONS).sort(), [...EMITTED_TOPICS, ...PLANNED_TOPICS, TEST_TOPIC].sort(),
    'described: the registry and the test topic, nothing else')
})

t.test('the test topic is described but is not a topic a subscription can list', async t => {
  t.equal(TEST_TOPIC, 'webhook.test')
  t.equal(topicKind(TEST_TOPIC), 'unknown')
  t.match(TOPIC_DESCRIPTIONS[TEST_TOPIC], /only when asked for/)
})

t.test('anything else is unknown, however close', async t => {
  for (const topic of ['', 'invoice', 'invoice.paid.', 'Invoice.paid', 'invoice_paid', ' invoice.paid', 'invoice.*',
    'work_order', 'toString', 'constructor', 'length']) {
    t.equal(topicKind(topic), 'unknown', JSON.stringify(topic))
  }
})
