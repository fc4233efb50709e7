/** The topic registry (docs/rules.md#topics). Emitted topics are delivered; planned ones accepted, never delivered. */
/**
 * The record topics: each carries the whole record of its kind as `data`, validated, and kept for the read routes
 * (docs/records.md).
 */
export const RECORD_TOPICS = {
  'invoice.created': 'invoice',
  'invoice.updated': 'invoice',
  'invoice.paid': 'invoice',
  'invoice.voided': 'invoice',
  'bill.created': 'bill',
  'bill.updated': 'bill',
  'bill.paid': 'bill',
  'customer.created': 'customer',
  'customer.updated': 'customer',
  'customer.archived': 'customer'
} as const
export type RecordKindName = (typeof RECORD_TOPICS)[keyof typeof RECORD_TOPICS]

export const EMITTED_TOPICS = Object.keys(RECORD_TOPICS) as ReadonlyArray<keyof typeof RECORD_TOPICS>
export const PLANNED_TOPICS = [
  'work_order.released',
  'work_order.completed',
  'lot.created',
  'eco.released',
  'jobwork_challan.overdue'
] as const

export const TOPIC_DESCRIPTIONS: Record<string, string> = {
  'invoice.created': 'An invoice was created. data: the invoice.',
  'invoice.updated': 'An invoice changed. data: the invoice as it is now.',
  'invoice.paid': 'An invoice was paid in full. data: the invoice.',
  'invoice.voided': 'An invoice was voided. data: the invoice.',
  'bill.created': 'A bill was created. data: the bill.',
  'bill.updated': 'A bill changed. data: the bill as it is now.',
  'bill.paid': 'A bill was paid in full. data: the bill.',
  'customer.created': 'A customer was created. data: the customer.',
  'customer.updated': 'A customer changed. data: the customer as it is now.',
  'customer.archived': 'A customer was archived. data: the customer.',
  'work_order.released': 'Planned: a work order was released to the shop floor.',
  'work_order.completed': 'Planned: a work order was completed.',
  'lot.created': 'Planned: a lot was created.',
  'eco.released': 'Planned: an engineering change order was released.',
  'jobwork_challan.overdue': 'Planned: a job-work challan is overdue.'
}

/** Test deliveries' topic: sent only on request, to one subscription (POST …/test); no subscription lists it. */
export const TEST_TOPIC = 'webhook.test'
TOPIC_DESCRIPTIONS[TEST_TOPIC] = 'A test delivery, sent only when asked for (POST …/webhooks/{id}/test) and only to ' +
  'that subscription. Subscriptions cannot list it.'

export type TopicKind = 'emitted' | 'planned' | 'unknown'

/** The record kind a topic carries; undefined for topics without a record. */
export const recordKindOf = (topic: string): RecordKindName | undefined =>
  Object.hasOwn(RECORD_TOPICS, topic) ? RECORD_TOPICS[topic as keyof typeof RECORD_TOPICS] : undefined

export function topicKind (topic: string): TopicKind {
  if (Object.hasOwn(RECORD_TOPICS, topic)) return 'emitted'
  if ((PLANNED_TOPICS as readonly string[]).includes(topic)) return 'planned'
  return 'unknown'
}
