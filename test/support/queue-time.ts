import type { Queryable } from '../../plugins/infrastructure/db/index.js'

/*
 * The delivery queue keeps its times on the database's clock (`now()`), the one clock that every worker process
 * shares; a worker's own clock never decides when a delivery is due or a lease has run out. So a test cannot move
 * the queue's time with the app's hand-moved clock: it moves the rows' times instead, here and nowhere else.
 */

/** The subscription's pending retries are due now. */
export async function retriesDueNow (db: Queryable, subscriptionId: string): Promise<void> {
  await db.query(
    "update webhook_deliveries set next_attempt_at = now() where subscription_id = $1 and status = 'pending'",
    [subscriptionId])
}

/** The subscription's pending deliveries fall due `seconds` from now (negative: already due that long ago). */
export async function dueIn (db: Queryable, subscriptionId: string, seconds: number): Promise<void> {
  await db.query(`update webhook_deliveries set next_attempt_at = now() + make_interval(secs => $2)
    where subscription_id = $1 and status = 'pending'`, [subscriptionId, seconds])
}

/** The delivery's lease ran out a second ago, as when its worker died. */
export async function leaseExpired (db: Queryable, deliveryId: string): Promise<void> {
  await db.query("update webhook_deliveries set locked_until = now() - interval '1 second' where id = $1", [deliveryId])
}

/** The overlap of the subscription's previous signing secret ended a second ago. */
export async function secretOverlapEnded (db: Queryable, subscriptionId: string): Promise<void> {
  await db.query(
    "update webhook_subscriptions set previous_secret_expires_at = now() - interval '1 second' where id = $1",
    [subscriptionId])
}

/** Whatever an earlier test left pending is cancelled: the next claim sees an empty queue. */
export async function cancelPending (db: Queryable): Promise<void> {
  await db.query("update webhook_deliveries set status = 'cancelled', locked_until = null where status = 'pending'")
}
