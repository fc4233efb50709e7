-- Webhooks receivers can use (docs/decisions.md). Postgres 15 and PGlite.

-- How `webhook-signature` is keyed. 'legacy': subscriptions created before this migration (base64url secrets, keyed with
-- the UTF-8 bytes of the whole string) keep verifying as they did; 'standard': the base64-decoded bytes after
-- `whsec_`, as the Standard Webhooks and Svix libraries expect. Existing rows get 'legacy', new ones 'standard'.
alter table webhook_subscriptions add column signing_scheme text not null default 'legacy'
  check (signing_scheme in ('legacy', 'standard'));
alter table webhook_subscriptions alter column signing_scheme set default 'standard';

-- The secret a rotation replaced: it still signs, next to the new one, until previous_secret_expires_at.
alter table webhook_subscriptions add column previous_secret_ciphertext text;
alter table webhook_subscriptions add column previous_signing_scheme text
  check (previous_signing_scheme in ('legacy', 'standard'));
alter table webhook_subscriptions add column previous_secret_expires_at timestamptz;

-- Replays by idempotency key: a repeat of the same request gets the first answer, not a second replay.
create table webhook_replays (
  subscription_id text not null references webhook_subscriptions (id),
  idempotency_key text not null,
  -- The request's parameters: the same key with others is refused.
  fingerprint text not null,
  replayed integer not null default 0,
  -- The end of the range as the first request resolved it (`until` defaults to its arrival).
  until_at timestamptz,
  truncated boolean not null default false,
  created_at timestamptz not null default now(),
  primary key (subscription_id, idempotency_key)
);

-- The delivery log that helps (null on attempts made before): what was sent, what came back, and why it failed.
alter table webhook_attempts add column request_headers jsonb;
alter table webhook_attempts add column response_headers jsonb;
alter table webhook_attempts add column error_class text;
