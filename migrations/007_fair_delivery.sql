-- Fair delivery (docs/webhook-delivery.md#fair-delivery). Postgres 15 and PGlite.

-- Each subscription's queue, in the order it is served: a claim visits the subscriptions that have pending
-- deliveries (one index probe each, a skip scan) and reads the first few due rows of each, so its cost follows the
-- number of subscriptions with work, never the length of anyone's backlog.
create index webhook_deliveries_queue on webhook_deliveries (subscription_id, next_attempt_at, id)
  where status = 'pending';
drop index webhook_deliveries_subscription;
drop index webhook_deliveries_due;

-- Attempts in flight are the leased rows: a claim counts them per subscription and per tenant, across every worker,
-- and the reaper finds expired leases here. There are never more of them than the workers' slots.
create index webhook_deliveries_leased on webhook_deliveries (locked_until)
  where status = 'pending' and locked_until is not null;
