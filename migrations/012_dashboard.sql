-- What the marketplace dashboard reads (docs/dashboard.md). Postgres 15 and PGlite.

-- When an install's access token last passed the public pipeline: written at most once a minute per install.
alter table installs add column last_used_at timestamptz;

-- An app's installs, oldest first, a page at a time (the dashboard's installs page); covers what installs_client did.
create index installs_client_listing on installs (client_id, created_at, install_id);
drop index installs_client;

-- An app's webhook activity per hour, kept as attempts are recorded, so that the dashboard's 24-hour figures read
-- at most 24 rows an app however many attempts the hours hold: `succeeded` attempts (each one a delivery done),
-- `failed` attempts, and `exhausted` deliveries (failed for good, their attempts used up).
create table webhook_activity_hours (
  client_id text not null,
  hour timestamptz not null,
  succeeded integer not null default 0,
  failed integer not null default 0,
  exhausted integer not null default 0,
  primary key (client_id, hour)
);

-- The attempts already in the log, counted once; a delivery whose last attempt failed and that is no longer
-- pending ran out of attempts (or was cancelled; before this table the two were not told apart).
insert into webhook_activity_hours (client_id, hour, succeeded, failed, exhausted)
select i.client_id, date_trunc('hour', a.attempted_at, 'UTC'),
       count(*) filter (where a.response_status between 200 and 299),
       count(*) filter (where a.response_status not between 200 and 299),
       count(*) filter (where a.response_status not between 200 and 299 and d.status = 'failed'
                          and a.attempt = d.attempts)
  from webhook_attempts a
  join webhook_deliveries d on d.id = a.delivery_id
  join webhook_subscriptions s on s.id = a.subscription_id
  join installs i on i.install_id = s.install_id
 group by 1, 2;

-- A subscription's log in the order its pages show it, newest first and then by id: a page, its cursor and its
-- time bounds are one index range read in order under the page's LIMIT, with no sort, in a prepared statement's
-- generic plan as well. Covers what webhook_attempts_subscription did.
create index webhook_attempts_log on webhook_attempts (subscription_id, attempted_at desc, id desc);
drop index webhook_attempts_subscription;

-- A delivery's attempts (its page) and an event's deliveries (the log's event filter).
create index webhook_attempts_delivery on webhook_attempts (delivery_id, attempt);
create index webhook_deliveries_event on webhook_deliveries (event_id);
