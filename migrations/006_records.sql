-- The accounting records apps read: the newest copy of each invoice, bill and customer, kept from the producer's
-- events (docs/records.md). Postgres 15 and PGlite.
--
-- `body` is the record's JSON text exactly as the producer sent it (a record is served as it was sent, key order
-- and all); the other columns are what lists filter and order on. Ids compare byte-wise (collation "C"), so a page
-- boundary is the same on every database and every locale.

create table invoices (
  org_ref_id text not null,
  entity_ref_id text not null,
  id text collate "C" not null,
  updated_at timestamptz not null,
  status text not null,
  -- The customer's id: the customer_id filter.
  party_id text,
  due_date date,
  body text not null,
  primary key (org_ref_id, entity_ref_id, id)
);
-- Every list is a range of this index in (updated_at, id) order: a page deep in the list costs what the first does.
create index invoices_sync on invoices (org_ref_id, entity_ref_id, updated_at, id);

create table bills (like invoices including all);
comment on column bills.party_id is 'The supplier''s id: the supplier_id filter.';

create table customers (like invoices including all);
comment on column customers.party_id is 'Unused: customers have no party.';
