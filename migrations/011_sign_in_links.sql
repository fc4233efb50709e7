-- Dashboard sign-in links are usable once (docs/dashboard.md). Postgres 15 and PGlite.

-- The id (`jti`) of every link used, kept until the link would have expired anyway: after that its signature
-- refuses it, so the row is no longer needed and is deleted the next time a link is used.
create table used_sign_in_links (
  jti text primary key,
  expires_at timestamptz not null
);
create index used_sign_in_links_expiry on used_sign_in_links (expires_at);
