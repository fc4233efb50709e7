import type { Db } from '../../infrastructure/db/types.js'

/** What became of an attempt: a 2xx answer; no such answer and a retry is coming; no such answer and none is. */
export type AttemptOutcome = 'succeeded' | 'pending' | 'failed'

export interface AttemptLogEntry {
  id: string
  deliveryId: string
  eventId: string
  topic: string
  attempt: number
  attemptedAt: Date
  durationMs: number
  responseStatus: number
  responseBody: string | null
  error: string | null
  errorClass: string | null
  requestHeaders: Record<string, string> | null
  responseHeaders: Record<string, string> | null
  deliveryStatus: 'pending' | 'succeeded' | 'failed' | 'cancelled'
  outcome: AttemptOutcome
  /** When the delivery goes out again: on its latest attempt while it is pending, else null. */
  nextAttemptAt: Date | null
}

interface AttemptLogRow {
  id: string
  delivery_id: string
  event_id: string
  topic: string
  attempt: number
  attempted_at: Date
  duration_ms: number
  response_status: number
  response_body: string | null
  error: string | null
  error_class: string | null
  request_headers: Record<string, string> | null
  response_headers: Record<string, string> | null
  delivery_status: AttemptLogEntry['deliveryStatus']
  outcome: AttemptOutcome
  next_attempt_at: Date | null
}

const toEntry = (r: AttemptLogRow): AttemptLogEntry => ({
  id: r.id,
  deliveryId: r.delivery_id,
  eventId: r.event_id,
  topic: r.topic,
  attempt: r.attempt,
  attemptedAt: r.attempted_at,
  durationMs: r.duration_ms,
  responseStatus: r.response_status,
  responseBody: r.response_body,
  error: r.error,
  errorClass: r.error_class,
  requestHeaders: r.request_headers,
  responseHeaders: r.response_headers,
  deliveryStatus: r.delivery_status,
  outcome: r.outcome,
  nextAttemptAt: r.next_attempt_at
})

/** The log's columns for attempts `a` of deliveries `d` of events `e`. */
const ENTRY_COLUMNS = `a.id, a.delivery_id, d.event_id, e.topic, a.attempt, a.attempted_at, a.duration_ms,
       a.response_status, a.response_body, a.error, a.error_class, a.request_headers, a.response_headers,
       d.status as delivery_status,
       case when a.response_status between 200 and 299 then 'succeeded'
            when d.status = 'pending' then 'pending' else 'failed' end as outcome,
       case when d.status = 'pending' and a.attempt = d.attempts then d.next_attempt_at end as next_attempt_at`

/** Which attempts a page of the log shows; unset fields do not filter. */
export interface AttemptFilter {
  outcome?: AttemptOutcome | undefined
  topic?: string | undefined
  eventId?: string | undefined
  /** Attempted at or after. */
  since?: Date | undefined
  /** Attempted before. */
  until?: Date | undefined
}

/** A position in the log: the attempt with this time and id (pages go on after it). */
export interface LogPosition { at: Date, id: string }

export interface LogPage {
  /** At most `limit` attempts, newest first. */
  entries: AttemptLogEntry[]
  /** Where the next page starts, or null when the log ends here. */
  next: LogPosition | null
  /**
   * Set when the page ended early: the outcome or topic filter was checked on `scanLimit` attempts without
   * filling the page. `next` then continues the search from the oldest attempt checked.
   */
  searchedTo: Date | null
}

/** One delivery of a subscription with its event: what every attempt of it sent. */
export interface DeliveryDetail {
  id: string
  eventId: string
  topic: string
  status: AttemptLogEntry['deliveryStatus']
  attempts: number
  nextAttemptAt: Date | null
  createdAt: Date
  /** The exact bytes every attempt sent and signed. */
  body: string
}

/** An app's webhook activity in one hour. */
export interface ActivityHour {
  hour: Date
  succeeded: number
  failed: number
  exhausted: number
}

/**
 * Reads of the attempts log and of the apps' hourly activity (what the worker records through
 * delivery-queue-store.ts `record`): the log's pages, one delivery, and the figures of the last hours.
 */
export function createAttemptLogStore (db: Db) {
  return {
    /**
     * A page of a subscription's log, newest first, after `after`. Time and event bounds are index ranges; the
     * outcome and topic filters are checked on at most `scanLimit` attempts, so that a filter matching nothing in
     * a long log costs one bounded read, and the page says how far it searched.
     *
     * The statement holds only the conditions given (one text per combination, at most 64): the service prepares
     * its statements, and a prepared statement's generic plan cannot drop a `($n is null or …)` condition, so such
     * a condition would leave the cursor and the time bounds out of the index range (a later page read every newer
     * attempt of the log) and the event filter outside the index of its deliveries (it read the whole log). The
     * page's attempts are read in log order and looked up in their deliveries and events one by one as they come
     * (`offset 0` keeps each lookup a nested loop on the primary key: the planner cannot estimate the outcome
     * filter and would otherwise hash the whole deliveries table), so a filtered page stops once it is full; the
     * window that says how far it searched (`scanLimit` attempts) is read from the index alone.
     */
    async page (
      subscriptionId: string,
      o: { limit: number, scanLimit: number, after?: LogPosition | undefined, filter: AttemptFilter }
    ): Promise<LogPage> {
      const f = o.filter
      const filtered = f.outcome !== undefined || f.topic !== undefined
      const params: unknown[] = [subscriptionId]
      const arg = (value: unknown): string => `$${params.push(value)}`
      const bounds = ['a.subscription_id = $1']
      if (o.after) bounds.push(`(a.attempted_at, a.id) < (${arg(o.after.at)}::timestamptz, ${arg(o.after.id)}::text)`)
      if (f.since !== undefined) bounds.push(`a.attempted_at >= ${arg(f.since)}::timestamptz`)
      if (f.until !== undefined) bounds.push(`a.attempted_at < ${arg(f.until)}::timestamptz`)
      if (f.eventId !== undefined) {
        bounds.push(`a.delivery_id in
                 (select id from webhook_deliveries where event_id = ${arg(f.eventId)}::text and subscription_id = $1)`)
      }
      const checks = ['true']
      if (f.topic !== undefined) checks.push(`e.topic = ${arg(f.topic)}::text`)
      if (f.outcome !== undefined) {
        checks.push(`${arg(f.outcome)}::text = case when a.response_status between 200 and 299 then 'succeeded'
                                                   when d.status = 'pending' then 'pending' else 'failed' end`)
      }
      const window = arg(filtered ? o.scanLimit : o.limit + 1)
      const attempts = `select a.* from webhook_attempts a where ${bounds.join(' and ')}
                          order by a.attempted_at desc, a.id desc limit ${window}`
      const rows = await db.query<AttemptLogRow & { scanned: number, end_at: Date | null, end_id: string | null }>(
        `with window_ as (
           select a.id, a.attempted_at from (${attempts}) a
         ), scan as (
           select count(*)::int as scanned, min(attempted_at) as end_at,
                  (select id from window_ order by attempted_at, id limit 1) as end_id
             from window_
         ), matched as (
           select ${ENTRY_COLUMNS}
             from (${attempts}) a
             cross join lateral (select d.event_id, d.status, d.attempts, d.next_attempt_at from webhook_deliveries d
                                  where d.id = a.delivery_id offset 0) d
             cross join lateral (select e.topic from webhook_events e where e.id = d.event_id offset 0) e
            where ${checks.join(' and ')}
            order by a.attempted_at desc, a.id desc
            limit ${arg(o.limit + 1)}
         )
         select m.*, s.scanned, s.end_at, s.end_id from scan s left join matched m on true
          order by m.attempted_at desc, m.id desc`,
        params
      )
      const { scanned, end_at: endAt, end_id: endId } = rows[0]!
      const entries = rows.filter(r => r.id !== null).map(toEntry)
      const shown = entries.slice(0, o.limit)
      if (entries.length > o.limit) {
        const last = shown.at(-1)!
        return { entries: shown, next: { at: last.attemptedAt, id: last.id }, searchedTo: null }
      }
      if (filtered && scanned === o.scanLimit && endAt !== null && endId !== null) {
        return { entries: shown, next: { at: endAt, id: endId }, searchedTo: endAt }
      }
      return { entries: shown, next: null, searchedTo: null }
    },

    /** One delivery of the subscription with its event; undefined when the subscription has no such delivery. */
    async delivery (subscriptionId: string, deliveryId: string): Promise<DeliveryDetail | undefined> {
      const [row] = await db.query<{
        id: string
        event_id: string
        topic: string
        status: DeliveryDetail['status']
        attempts: number
        next_attempt_at: Date
        created_at: Date
        body: string
      }>(
        `select d.id, d.event_id, e.topic, d.status, d.attempts, d.next_attempt_at, d.created_at, e.body
           from webhook_deliveries d join webhook_events e on e.id = d.event_id
          where d.id = $1 and d.subscription_id = $2`,
        [deliveryId, subscriptionId]
      )
      return row && {
        id: row.id,
        eventId: row.event_id,
        topic: row.topic,
        status: row.status,
        attempts: row.attempts,
        nextAttemptAt: row.status === 'pending' ? row.next_attempt_at : null,
        createdAt: row.created_at,
        body: row.body
      }
    },

    /** Every attempt of one delivery, newest first. */
    async attemptsOf (deliveryId: string): Promise<AttemptLogEntry[]> {
      const rows = await db.query<AttemptLogRow>(
        `select ${ENTRY_COLUMNS}
           from webhook_attempts a
           join webhook_deliveries d on d.id = a.delivery_id
           join webhook_events e on e.id = d.event_id
          where a.delivery_id = $1
          order by a.attempt desc, a.attempted_at desc`,
        [deliveryId]
      )
      return rows.map(toEntry)
    },

    /** The apps' activity per hour from `since` (an hour's start), oldest hour first; hours without any are absent. */
    async activity (clientIds: string[], since: Date): Promise<Array<ActivityHour & { clientId: string }>> {
      if (clientIds.length === 0) return []
      const rows = await db.query<{
        client_id: string
        hour: Date
        succeeded: number
        failed: number
        exhausted: number
      }>(
        `select client_id, hour, succeeded, failed, exhausted from webhook_activity_hours
          where client_id = any($1) and hour >= $2 order by client_id, hour`,
        [clientIds, since]
      )
      return rows.map(r => ({
        clientId: r.client_id, hour: r.hour, succeeded: r.succeeded, failed: r.failed, exhausted: r.exhausted
      }))
    }
  }
}

export type AttemptLogStore = ReturnType<typeof createAttemptLogStore>
