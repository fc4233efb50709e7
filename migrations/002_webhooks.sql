-- Webhook subscriptions, published events, the delivery queue and its attempts log. Postgres 15 and PGlite.

create table webhook_subscriptions (
  id text primary key,
  install_id text not null references installs (install_id),
  org_ref_id text not null,
  entity_ref_id text not null,
  topics text[] not null,
  target_url text not null,
  -- AES-256-GCM under WEBHOOK_SECRET_KEY: the secret must sign every delivery, so it cannot be a hash.
  secret_ciphertext text not null,
  is_active boolean not null default true,
  disabled_reason text check (disabled_reason in ('deleted', 'consecutive_failures', 'gone')),
  disabled_at timestamptz,
  created_at timestamptz not null default now(),
  last_delivery_at timestamptz,
  last_delivery_status integer,
  consecutive_failures integer not null default 0,
  -- When the current streak of failures began; null while healthy.
  failing_since timestamptz
);
create index webhook_subscriptions_install on webhook_subscriptions (install_id, created_at);
create index webhook_subscriptions_fanout on webhook_subscriptions (org_ref_id, entity_ref_id) where is_active;

create table webhook_events (
  id text primary key,
  -- The producer's idempotency key: the same id again changes nothing.
  producer_id text unique,
  topic text not null,
  org_ref_id text not null,
  entity_ref_id text not null,
  -- The exact bytes every attempt sends and signs.
  body text not null,
  delivery_count integer not null,
  created_at timestamptz not null
);

create table webhook_deliveries (
  id text primary key,
  event_id text not null references webhook_events (id),
  subscription_id text not null references webhook_subscriptions (id),
  status text not null default 'pending' check (status in ('pending', 'succeeded', 'failed', 'cancelled')),
  attempts integer not null default 0,
  next_attempt_at timestamptz not null default now(),
  -- A claim is a lease: a worker that dies loses it when it expires, and another worker takes the delivery.
  locked_by text,
  locked_until timestamptz,
  created_at timestamptz not null default now(),
  completed_at timestamptz
);
create index webhook_deliveries_due on webhook_deliveries (next_attempt_at) where status = 'pending';
create index webhook_deliveries_subscription on webhook_deliveries (subscription_id) where status = 'pending';

create table webhook_attempts (
  id text primary key,
  delivery_id text not null references webhook_deliveries (id),
  subscription_id text not null references webhook_subscriptions (id),
  attempt integer not null,
  attempted_at timestamptz not null,
  duration_ms integer not null,
  -- HTTP status, or 0 when there was no HTTP answer (time-out, refused, TLS error).
  response_status integer not null,
  response_body text,
  error text
);
create index webhook_attempts_subscription on webhook_attempts (subscription_id, attempted_at desc);
