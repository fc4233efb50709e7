-- The aged reports added up once per change and read a page at a time (docs/decisions.md, "Aged receivables and
-- payables": "Added up once per change, read from a snapshot"). Postgres 15 and PGlite.

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

-- The tenants a transaction has changed so far, moved to a new version when it commits (the trigger
-- aged_report_changes_commit below), not at each statement: a version row is then locked for the moment of a commit,
-- and the transactions that write one tenant's documents at once do not wait for each other's whole work. A row
-- lives only inside its transaction (written by it, deleted at its commit), hence unlogged.
create unlogged table aged_report_changes (
  xact xid8 not null,
  org_ref_id text not null,
  entity_ref_id text not null,
  report text not null,
  primary key (xact, org_ref_id, entity_ref_id, report)
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
-- A contact's entries, and every row of a snapshot (what dropping the snapshot deletes).
create index aged_balances_party on aged_balances (snapshot_id, party_id);

-- Notes the tenants whose rows the statement changed, once per transaction. Statement-level, over the changed rows:
-- one row per tenant, not one per record.
create function aged_report_changed () returns trigger language plpgsql as $$
begin
  insert into aged_report_changes (xact, org_ref_id, entity_ref_id, report)
  select distinct pg_current_xact_id(), c.org_ref_id, c.entity_ref_id, tg_table_name from changed c
  on conflict do nothing;
  return null;
end
$$;

-- At commit: every tenant the transaction noted moves to a new version, at the first firing (the later ones find
-- nothing left), in one order for every transaction (report, then tenant, byte-wise), so that two transactions
-- that changed the same tenants lock their versions in the same order, whatever order they wrote in.
create function aged_report_commit () returns trigger language plpgsql as $$
begin
  with noted as (
    delete from aged_report_changes c where c.xact = new.xact
    returning c.org_ref_id, c.entity_ref_id, c.report
  )
  insert into aged_report_versions as v (org_ref_id, entity_ref_id, report, version)
  select n.org_ref_id, n.entity_ref_id, n.report, 1 from noted n
   order by n.report, n.org_ref_id collate "C", n.entity_ref_id collate "C"
  on conflict (org_ref_id, entity_ref_id, report) do update set version = v.version + 1;
  return null;
end
$$;
create constraint trigger aged_report_changes_commit after insert on aged_report_changes
  deferrable initially deferred for each row execute function aged_report_commit();

-- TRUNCATE names no rows: every tenant's version of the report moves (the table is locked whole meanwhile).
create function aged_report_truncated () returns trigger language plpgsql as $$
begin
  update aged_report_versions set version = version + 1 where report = tg_table_name;
  return null;
end
$$;

-- A transition table names one event, so each table takes a trigger per event; an update two, as it may move a
-- row to another tenant: both the tenants its rows left (the old rows) and the ones they reached changed.
create trigger invoices_aged_inserted after insert on invoices referencing new table as changed
  for each statement execute function aged_report_changed();
create trigger invoices_aged_updated after update on invoices referencing new table as changed
  for each statement execute function aged_report_changed();
create trigger invoices_aged_left after update on invoices referencing old table as changed
  for each statement execute function aged_report_changed();
create trigger invoices_aged_deleted after delete on invoices referencing old table as changed
  for each statement execute function aged_report_changed();
create trigger invoices_aged_truncated after truncate on invoices
  for each statement execute function aged_report_truncated();
create trigger bills_aged_inserted after insert on bills referencing new table as changed
  for each statement execute function aged_report_changed();
create trigger bills_aged_updated after update on bills referencing new table as changed
  for each statement execute function aged_report_changed();
create trigger bills_aged_left after update on bills referencing old table as changed
  for each statement execute function aged_report_changed();
create trigger bills_aged_deleted after delete on bills referencing old table as changed
  for each statement execute function aged_report_changed();
create trigger bills_aged_truncated after truncate on bills
  for each statement execute function aged_report_truncated();
