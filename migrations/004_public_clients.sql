-- Clients that register themselves (docs/decisions.md#clients-that-register-themselves). Postgres 15 and
-- PGlite.

-- A public client has no secret (RFC 6749 2.1): it proves itself with PKCE alone. Clients registered by Dynamic
-- Client Registration or identified by a Client ID Metadata Document have no owning developer.
alter table apps alter column client_secret_hash drop not null;
alter table apps alter column owner_sub drop not null;
alter table apps add column client_type text not null default 'confidential'
  check (client_type in ('confidential', 'public'));
alter table apps add column registered_by text not null default 'developer'
  check (registered_by in ('developer', 'dcr', 'cimd'));
-- Shown on the consent page; optional on app registration.
alter table apps add column publisher text;
alter table apps add column website_url text;
-- A public DCR client's registration, canonical and hashed: an identical registration returns the same client.
alter table apps add column registration_hash text;
create unique index apps_registration on apps (registration_hash) where registration_hash is not null;
-- A CIMD client's metadata is fetched again once this has passed (the document's HTTP caching headers).
alter table apps add column metadata_expires_at timestamptz;

-- RFC 8707: the resource a grant was made for (null: the public API, the default), kept along the refresh chain.
alter table authorization_codes add column resource text;
alter table refresh_tokens add column resource text;
