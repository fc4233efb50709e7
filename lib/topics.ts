/** The topic registry (docs/rules.md#topics). Emitted topics are delivered; planned ones accepted, never delivered. */
export const EMITTED_TOPICS = ['invoice.paid', 'bill.created'] as const
export const PLANNED_TOPICS = [
  'work_order.released',
  'work_order.completed',
  'lot.created',
  'eco.released',
  'jobwork_challan.overdue'
] as const

export const TOPIC_DESCRIPTIONS: Record<string, string> = {
  'invoice.paid': 'An invoice was paid in full.',
  'bill.created': 'A bill was created.',
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

export function topicKind (topic: string): TopicKind {
  if ((EMITTED_TOPICS as readonly string[]).includes(topic)) return 'emitted'
  if ((PLANNED_TOPICS as readonly string[]).includes(topic)) return 'planned'
  return 'unknown'
}
