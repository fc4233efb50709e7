-- The records' sync index keyed by one tenant column instead of two (docs/decisions.md, "Reads that arrive
-- together go to the database together"). Postgres 15 and PGlite.
--
-- With (org_ref_id, entity_ref_id, updated_at, id), a lookup by (org, entity, id) could take the sync index as well
-- as the primary key, and the planner, which multiplies the two columns' distinct counts, estimates a tenant at one
-- row as soon as tenants² exceed the records: it then took the sync index and read the tenant's whole range for
-- every lookup. Keyed by an expression of the tenant, the sync index serves lists only, and lookups only the
-- primary key.

-- The tenant as one text, unambiguous (the length of the org id first): the same function builds the index and
-- the lists' bounds. Every part immutable (`::text`, not `integer || text`, which is only stable), so that the
-- planner inlines it: called as a function it cost a call per row read.
create function record_tenant (org_ref_id text, entity_ref_id text) returns text
  language sql immutable strict parallel safe
  as $$ select length(org_ref_id)::text || ':' || org_ref_id || entity_ref_id $$;

-- The new indexes first, the old ones dropped last: building an index blocks only writes, and dropping one locks its
-- table until the migration commits, which is then a moment.
create index invoices_tenant_sync on invoices (record_tenant(org_ref_id, entity_ref_id), updated_at, id);
create index bills_tenant_sync on bills (record_tenant(org_ref_id, entity_ref_id), updated_at, id);
create index customers_tenant_sync on customers (record_tenant(org_ref_id, entity_ref_id), updated_at, id);
drop index invoices_sync;
drop index bills_org_ref_id_entity_ref_id_updated_at_id_idx;
drop index customers_org_ref_id_entity_ref_id_updated_at_id_idx;
