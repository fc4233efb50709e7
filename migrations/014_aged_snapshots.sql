-- The aged reports added up once and read a page at a time (docs/decisions.md, "Aged reports: added up once per
-- change, read from a snapshot"). Postgres 15 and PGlite.

-- The open-items indexes with the tenant's own columns, so that adding up a tenant's open items is an index-only
-- scan: the expression key alone does not give Postgres the columns the expression is computed from, and it read
-- the heap for every item. The new indexes first, the old ones dropped last (dropping locks the table until the
-- migration commits, which is then a moment).
create index invoices_open_items_covering on invoices (record_tenant(org_ref_id, entity_ref_id), party_id, currency)
  include (org_ref_id, entity_ref_id, due_date, amount_due_minor)
  where status = 'authorised' and amount_due_minor <> 0;
create index bills_open_items_covering on bills (record_tenant(org_ref_id, entity_ref_id), party_id, currency)
  include (org_ref_id, entity_ref_id, due_date, amount_due_minor)
  where status = 'authorised' and amount_due_minor <> 0;
drop index invoices_open_items;
drop index bills_open_items;

-- How many times each tenant's invoices (report 'invoices') or bills ('bills') have changed: a snapshot made at
-- version N answers for the tenant as long as the version is still N. Kept by the triggers below, so that every
-- writer (events, imports, a person with psql) moves it in the transaction of its change.
create table aged_report_versions (
  org_ref_id text not null,
  entity_ref_id text not null,
  report text not null,
  version bigint not null,
  primary key (org_ref_id, entity_ref_id, report)
);

-- One report of one tenant added up to one day, from the records as they were at one version.
create table aged_snapshots (
  id bigint generated always as identity primary key,
  org_ref_id text not null,
  entity_ref_id text not null,
  report text not null,
  as_of date not null,
  version bigint not null,
  unique (org_ref_id, entity_ref_id, report, as_of, version)
);

-- A snapshot's sums in minor units: one row per contact and currency (an entry), and one per currency with no
-- contact (that currency's totals over every contact). The contact's name is its newest document's.
create table aged_balances (
  snapshot_id bigint not null references aged_snapshots on delete cascade,
  party_id text,
  party_name text,
  currency text not null,
  over_90 numeric not null,
  d61_90 numeric not null,
  d31_60 numeric not null,
  d1_30 numeric not null,
  current numeric not null,
  total numeric not null,
  count bigint not null,
  oldest date
);
-- The entries in rank order (each bucket descending, then contact and currency byte-wise): a page is a range.
create index aged_balances_rank on aged_balances
  (snapshot_id, (-over_90), (-d61_90), (-d31_60), (-d1_30), (-current), party_id collate "C", currency collate "C")
  where party_id is not null;
create index aged_balances_totals on aged_balances (snapshot_id, currency) where party_id is null;
create index aged_balances_party on aged_balances (snapshot_id, party_id) where party_id is not null;

-- Moves the version of every tenant whose rows the statement changed. Statement-level, over the changed rows: one
-- row written per tenant, not one per record. Tenants in a fixed order, so that two transactions that change the
-- same tenants wait for each other instead of each holding a version the other needs.
create function aged_report_touch () returns trigger language plpgsql as $$
begin
  insert into aged_report_versions as v (org_ref_id, entity_ref_id, report, version)
  select distinct c.org_ref_id, c.entity_ref_id, tg_table_name, 1 from changed c order by 1, 2
  on conflict (org_ref_id, entity_ref_id, report) do update set version = v.version + 1;
  return null;
end
$$;

-- A transition table names one event, so each table takes three triggers.
create trigger invoices_aged_inserted after insert on invoices referencing new table as changed
  for each statement execute function aged_report_touch();
create trigger invoices_aged_updated after update on invoices referencing new table as changed
  for each statement execute function aged_report_touch();
create trigger invoices_aged_deleted after delete on invoices referencing old table as changed
  for each statement execute function aged_report_touch();
create trigger bills_aged_inserted after insert on bills referencing new table as changed
  for each statement execute function aged_report_touch();
create trigger bills_aged_updated after update on bills referencing new table as changed
  for each statement execute function aged_report_touch();
create trigger bills_aged_deleted after delete on bills referencing old table as changed
  for each statement execute function aged_report_touch();
