-- Apps, installs and the OAuth grants bound to them. Runs on Postgres 15 and on PGlite.

create table apps (
  client_id text primary key,
  slug text not null unique,
  name text not null,
  owner_sub text not null,
  client_secret_hash text not null,
  redirect_uris text[] not null,
  scopes text[] not null,
  api_key_enabled boolean not null default true,
  -- Tokens issued at or before this instant stay invalid for good, even after the key is enabled again.
  key_disabled_at timestamptz,
  created_at timestamptz not null default now()
);
create index apps_owner on apps (owner_sub, created_at);

create table installs (
  install_id text primary key,
  client_id text not null references apps (client_id),
  org_ref_id text not null,
  entity_ref_id text not null,
  scopes text[] not null,
  status text not null default 'active' check (status in ('active', 'uninstalled')),
  installed_by text not null,
  created_at timestamptz not null default now(),
  updated_at timestamptz not null default now(),
  uninstalled_at timestamptz
);
-- One active install per app and entity; uninstalled rows are kept for audit.
create unique index installs_one_active on installs (client_id, org_ref_id, entity_ref_id) where status = 'active';
create index installs_tenant on installs (org_ref_id, entity_ref_id, created_at);

create table authorization_codes (
  code_hash text primary key,
  client_id text not null references apps (client_id),
  install_id text not null references installs (install_id),
  redirect_uri text not null,
  code_challenge text not null,
  scopes text[] not null,
  expires_at timestamptz not null,
  used_at timestamptz
);

create table refresh_tokens (
  token_hash text primary key,
  install_id text not null references installs (install_id),
  client_id text not null references apps (client_id),
  -- The authorization code the chain started from: a replayed code revokes the chain.
  code_hash text not null,
  created_at timestamptz not null default now(),
  expires_at timestamptz not null,
  replaced_at timestamptz,
  replaced_by text,
  revoked_at timestamptz
);
create index refresh_tokens_install on refresh_tokens (install_id) where revoked_at is null;
create index refresh_tokens_client on refresh_tokens (client_id) where revoked_at is null;
create index refresh_tokens_code on refresh_tokens (code_hash);
