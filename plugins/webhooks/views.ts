import type { AttemptLogEntry } from './queue.js'
import type { Subscription } from './subscriptions.js'

/** The public shapes of webhook resources, shared by the REST routes and the MCP tools. */

const iso = (d: Date | null): string | null => d?.toISOString() ?? null

export const createdView = (s: Subscription & { signingSecret: string }) => ({
  id: s.id,
  topics: s.topics,
  target_url: s.targetUrl,
  signing_secret: s.signingSecret,
  created_at: s.createdAt.toISOString()
})

/** A listing item, in the spec's casing; `DisabledReason` only when inactive ones were asked for. */
export const listItemView = (s: Subscription, withReason: boolean) => ({
  _id: s.id,
  Topics: s.topics,
  TargetUrl: s.targetUrl,
  IsActive: s.isActive,
  LastDeliveryAt: iso(s.lastDeliveryAt),
  LastDeliveryStatus: s.lastDeliveryStatus,
  ConsecutiveFailures: s.consecutiveFailures,
  createdAt: s.createdAt.toISOString(),
  ...(withReason ? { DisabledReason: s.disabledReason } : {})
})

export const attemptView = (a: AttemptLogEntry) => ({
  id: a.id,
  delivery_id: a.deliveryId,
  event_id: a.eventId,
  topic: a.topic,
  attempt: a.attempt,
  attempted_at: a.attemptedAt.toISOString(),
  duration_ms: a.durationMs,
  response_status: a.responseStatus,
  response_body: a.responseBody,
  error: a.error,
  delivery_status: a.deliveryStatus as 'pending' | 'succeeded' | 'failed' | 'cancelled'
})
