-- Self-registered clients (docs/rules.md#clients). Postgres 15 and PGlite.

-- Every registration is a client of its own now: identical public registrations no longer share one.
drop index apps_registration;
alter table apps drop column registration_hash;

-- Registrations never used are forgotten: the sweep looks for old self-registered clients, and for whether anything
-- was ever granted to each (an install or an authorization code).
create index apps_unused_registrations on apps (created_at) where registered_by = 'dcr';
create index installs_client on installs (client_id);
create index authorization_codes_client on authorization_codes (client_id);
