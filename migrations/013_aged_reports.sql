-- What the aged receivables and payables reports read (docs/records.md#aged-receivables-and-payables), kept beside
-- each invoice and bill so that a report adds up columns and never parses a record's JSON. Postgres 15 and PGlite.
--
-- `currency`: the record's ISO 4217 code. `amount_due_minor`: its amount_due in the currency's minor units, an
-- integer held as numeric (a record's money may exceed bigint), so that sums are exact. `party_name`: the name of
-- the customer (invoices) or the supplier (bills) as this record gives it.
alter table invoices add column currency text, add column amount_due_minor numeric, add column party_name text;
alter table bills add column currency text, add column amount_due_minor numeric, add column party_name text;
alter table customers add column currency text, add column amount_due_minor numeric, add column party_name text;
comment on column customers.amount_due_minor is 'Unused: customers owe nothing themselves.';

-- The records already kept. Their money has exactly the currency's minor digits (the events are checked), so the
-- digits without the point are the minor units: "1250.00" is 125000, "-0.50" is -50, JPY "1250" is 1250.
update invoices
   set currency = body::jsonb ->> 'currency',
       amount_due_minor = replace(body::jsonb ->> 'amount_due', '.', '')::numeric,
       party_name = body::jsonb -> 'customer' ->> 'name';
update bills
   set currency = body::jsonb ->> 'currency',
       amount_due_minor = replace(body::jsonb ->> 'amount_due', '.', '')::numeric,
       party_name = body::jsonb -> 'supplier' ->> 'name';
update customers set currency = body::jsonb ->> 'currency';

-- The open items of a tenant, by contact and currency: what a report adds up, read in the order it groups them
-- (an index-only scan of the tenant's open items, however many paid and voided records the tenant keeps).
create index invoices_open_items on invoices (record_tenant(org_ref_id, entity_ref_id), party_id, currency)
  include (due_date, amount_due_minor)
  where status = 'authorised' and amount_due_minor <> 0;
create index bills_open_items on bills (record_tenant(org_ref_id, entity_ref_id), party_id, currency)
  include (due_date, amount_due_minor)
  where status = 'authorised' and amount_due_minor <> 0;

-- A contact's newest record, whose name a report shows: the last entry of the contact's range.
create index invoices_party_newest on invoices (record_tenant(org_ref_id, entity_ref_id), party_id, updated_at, id)
  include (party_name);
create index bills_party_newest on bills (record_tenant(org_ref_id, entity_ref_id), party_id, updated_at, id)
  include (party_name);
