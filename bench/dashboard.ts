/**
 * Benchmark: every page of the marketplace dashboard at size, as users run it, against a bare Fastify route that
 * sends the same bytes.
 *
 *   npx tsx bench/dashboard.ts        (or: npm run bench:dashboard)
 *
 * Processes as in bench/me.ts: the service with `npm start` (the compiled build, NODE_ENV production, real Postgres,
 * its own delivery worker), its log lines on standard output read through a pipe, as a log collector reads them;
 * the baseline, bench/bare-server.ts, a bare Fastify route with the service's logger settings, its one log line per
 * request (through a pipe too) and the same LOG_LEVEL, answering each page's HTML as the service sent it; and
 * autocannon, a fresh process per slice, with a session cookie signed with the service's USER_SESSION_SECRET and
 * the form-token cookie the first page set, as a browser sends them.
 *
 * The data, made with set-based SQL (generate_series) on a fresh database: one developer's app with BENCH_INSTALLS
 * installs (every 20th uninstalled), one webhook subscription per install, and BENCH_ATTEMPTS attempts in the log
 * over the last BENCH_DAYS days, BENCH_BIG_ATTEMPTS of them in the first subscription (its log is the long one), the
 * rest spread over the others; each attempt with its delivery and event (one event per delivery, ~1 KB body). The
 * attempts come in blocks of ten: seven deliveries, four done at the first attempt (2xx), one after a 500 (500, 200),
 * one failed for good after three attempts (no answer, 500, no answer), one 500 still retrying when it is less than
 * two hours old (failed for good when older). The hourly counters (webhook_activity_hours) are computed from the
 * attempts with the migration's own aggregation, each subscription's last delivery and failure streak from its
 * attempts. Beside the app, three other developers' apps with BENCH_OTHER_INSTALLS installs in other orgs (one
 * subscription each), so that the installs and subscriptions tables are more than the one app's rows; the same three
 * are installed in the first org's five entities, where an org user sees 20 connections. Then VACUUM ANALYZE.
 *
 * Each page is measured for BENCH_SECONDS after a warm-up, in slices alternating with the bare route's, then alone
 * (one connection) for BENCH_ALONE_SECONDS. Figures: requests/s, client p50/p99 at BENCH_CONNECTIONS connections;
 * the server time of the same requests, p50/p99 of the `ms` of the service's own request log lines (Fastify's
 * elapsed time, from the request's arrival to the end of the answer's write; LOG_LEVEL info or debug writes them),
 * which at 10 connections includes the wait behind the other requests in the process, and at one connection does
 * not; the CPU time per request of the service, of the run database's Postgres backends and of the bare route. Then
 * EXPLAIN (ANALYZE, BUFFERS) of each page's statements through the service's own stores, with the pages' arguments,
 * once planned for the values (a custom plan) and once as a prepared statement's generic plan (the service prepares
 * its statements by name, and after five executions a connection may keep the generic plan): a line per plan, the
 * whole plans in bench/results/.
 *
 * Needs Postgres at 127.0.0.1:5432 with trust auth for user `postgres`: a fresh database `mg_bench_dash_<random>` is
 * created and dropped. About 2.5 minutes on 2 cores. Environment:
 *
 *   BENCH_INSTALLS       installs of the app, one subscription each (default 1000)
 *   BENCH_OTHER_INSTALLS installs of the three other apps in other orgs, one subscription each (default 9000)
 *   BENCH_ATTEMPTS       attempts in the log, a multiple of 10 (default 100000)
 *   BENCH_BIG_ATTEMPTS   of which in the first subscription, a multiple of 10 (default 95000)
 *   BENCH_DAYS           the log's attempts spread over this many days back from now (default 7)
 *   BENCH_DEEP_AT        where the log's later page starts, as a share of the long log (default 0.9)
 *   BENCH_PAGES          which pages (default all; the names of the table)
 *   BENCH_LOG_LEVEL      LOG_LEVEL of the service and the bare route (default info)
 *   BENCH_CONNECTIONS    concurrent connections (default 10)
 *   BENCH_SECONDS        seconds of each page on the service (default 3)
 *   BENCH_BARE_SECONDS   seconds of each page on the bare route (default 1)
 *   BENCH_ROUNDS         slices each side's seconds are cut into, alternating the sides (default 2)
 *   BENCH_WARMUP         seconds of warm-up of each page on the service, and of the bare route before the first
 *                        (default 1)
 *   BENCH_ALONE_SECONDS  seconds of each page at one connection (default 1)
 *   BENCH_EXPLAIN        `on` (default) or `off`
 *   BENCH_CPU_PROF=dir   a V8 CPU profile of the service into dir (it then starts as `node --cpu-prof … serve`)
 *   BENCH_ADMIN_URL      where to create the fresh database (default postgres://postgres@127.0.0.1:5432/postgres)
 *
 * Target: every page's server time p99 < 50 ms at BENCH_CONNECTIONS connections. Exits non-zero only when the run
 * itself fails (setup, an answer other than the page's 200), never for a missed target.
 */
import { createHash } from 'node:crypto'
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs'
import { loadavg } from 'node:os'
import { join } from 'node:path'
import pg from 'pg'
import { buildApp } from '../app.js'
import { sampleRecord } from '../cli/sandbox.js'
import { createAppStore } from '../plugins/domain/apps/store.js'
import { signUserSession, type SessionUser } from '../plugins/domain/auth/user-session.js'
import { createInstallStore, type InstallPosition } from '../plugins/domain/installs/store.js'
import { createAttemptLogStore, type AttemptFilter } from '../plugins/domain/webhooks/attempt-log-store.js'
import { createSubscriptionStore } from '../plugins/domain/webhooks/subscription-store.js'
import { loadConfig } from '../plugins/infrastructure/config/index.js'
import type { Db } from '../plugins/infrastructure/db/types.js'
import { ROOT } from '../lib/root.js'
import { RECORD_SAMPLES } from '../schemas/records.js'
import {
  benchDatabase, devSecrets, discard, fmt, list, loadSlice, mergeSlices, nodeAndCpus, now, positiveInt, printTable,
  quantile, runBench, sleep, stamp, summary, tempDir, verdict, type Cleanup, type RawResult, type SliceFigures
} from './lib.js'
import { cleanEnv, ensureBuilt, freePort, startServer, startService, type ServerProcess } from './processes.js'

const INSTALLS = positiveInt('BENCH_INSTALLS', 1000)
const OTHER_INSTALLS = positiveInt('BENCH_OTHER_INSTALLS', 9000)
const ATTEMPTS = positiveInt('BENCH_ATTEMPTS', 100_000)
const BIG_ATTEMPTS = positiveInt('BENCH_BIG_ATTEMPTS', 95_000)
const DAYS = positiveInt('BENCH_DAYS', 7)
const DEEP_AT = Number(process.env.BENCH_DEEP_AT ?? 0.9)
const LOG_LEVEL = [...list('BENCH_LOG_LEVEL', ['warn', 'info', 'error', 'debug'], ['info'])][0]!
const SECONDS = positiveInt('BENCH_SECONDS', 3)
const BARE_SECONDS = positiveInt('BENCH_BARE_SECONDS', 1)
const ROUNDS = positiveInt('BENCH_ROUNDS', 2)
const WARMUP = positiveInt('BENCH_WARMUP', 1, true)
const CONNECTIONS = positiveInt('BENCH_CONNECTIONS', 10)
const ALONE_SECONDS = positiveInt('BENCH_ALONE_SECONDS', 1)
const EXPLAIN = [...list('BENCH_EXPLAIN', ['on', 'off'], ['on'])][0] === 'on'
const PROFILE = process.env.BENCH_CPU_PROF
const TARGET_MS = 50
/** Where the whole plans go (not committed). */
const RESULTS = join(ROOT, 'bench', 'results')
/** What the dashboard shows a page of (routes/dashboard/developer.ts PAGE_SIZE) and the log's filtered scan bound. */
const PAGE_SIZE = 50
const LOG_SCAN_LIMIT = 1000

const PAGE_NAMES = [
  'apps', 'app', 'installs', 'installs-later', 'webhooks', 'log', 'log-failed', 'log-topic', 'log-window',
  'log-event', 'log-later', 'delivery', 'connections'
] as const
type PageName = typeof PAGE_NAMES[number]
const PAGES = list('BENCH_PAGES', PAGE_NAMES)

/** A topic of the catalog the long log holds only a few of (one delivery in 3,511): the topic filter's page. */
const RARE_TOPIC = 'invoice.voided'
const TOPICS = ['invoice.created', 'invoice.updated', 'invoice.paid', 'bill.created']
const DEV: SessionUser = { sub: 'usr_bench_developer', orgRefId: 'org_bench_dev', entityRefIds: [] }
const OTHER_DEV: SessionUser = { sub: 'usr_bench_other', orgRefId: 'org_bench_other', entityRefIds: [] }
/** The org user: the first org, whose five entities hold installs 1–5 of the app and the three other apps'. */
const ORG_USER: SessionUser = {
  sub: 'usr_00001', orgRefId: 'org_00001', entityRefIds: [1, 2, 3, 4, 5].map(i => `ent_${String(i).padStart(5, '0')}`)
}

// ---------------------------------------------------------------------------------------------------------------
// The data

const md5 = (s: string): string => createHash('md5').update(s).digest('hex')
/** Install i (from 1), its subscription; delivery and event number n (from 1): their ids as the SQL makes them. */
const installId = (i: number): string => `ins_${md5(`install ${i}`).slice(0, 12)}`
const subscriptionId = (i: number): string => `whs_${md5(`sub ${i}`).slice(0, 12)}`
const deliveryId = (n: number): string => `dlv_${md5(`d${n}`)}`
const eventId = (n: number): string => `evt_${md5(`e${n}`).slice(0, 16)}`

/** The SQL side of the ids above, and of install i's tenant (five entities an org). */
const SQL_IDS = {
  install: (i: string) => `'ins_' || substr(md5('install ' || ${i}), 1, 12)`,
  subscription: (i: string) => `'whs_' || substr(md5('sub ' || ${i}), 1, 12)`,
  org: (i: string) => `'org_' || lpad(((${i} - 1) / 5 + 1)::text, 5, '0')`,
  entity: (i: string) => `'ent_' || lpad(${i}::text, 5, '0')`,
  noiseInstall: (n: string) => `'ins_' || substr(md5('noise ' || ${n}), 1, 12)`
}
const ISO = (col: string): string => `to_char(${col} at time zone 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"')`

/**
 * $1 client id, $2 installs, $3 now, $4 the other apps' client ids, $5 their installs. Install i of the app: created
 * over the last 200 days in i order, every 20th uninstalled. The other apps' installs (other orgs) are created over
 * the same days, all in one time order: the table holds more than the one app, its rows mixed as they arrived.
 */
const INSERT_INSTALLS = `
insert into installs (install_id, client_id, org_ref_id, entity_ref_id, scopes, status, installed_by, created_at,
                      updated_at, uninstalled_at, last_used_at)
select * from (
  select ${SQL_IDS.install('i')}, $1, ${SQL_IDS.org('i')}, ${SQL_IDS.entity('i')},
         array['invoices:read', 'bills:read', 'customers:read'],
         case when i % 20 = 0 then 'uninstalled' else 'active' end, 'usr_' || lpad(i::text, 5, '0'),
         c as created_at, c, case when i % 20 = 0 then c + interval '20 days' end,
         case when i % 3 <> 0 and i % 20 <> 0 then $3::timestamptz - (i % 72) * interval '1 hour' end
    from generate_series(1, $2::int) i,
         lateral (select $3::timestamptz - interval '200 days' + i * 180.0 / $2 * interval '1 day' as c) t
  union all
  select ${SQL_IDS.noiseInstall('n')}, ($4::text[])[1 + n % cardinality($4::text[])],
         'org_n' || lpad(((n - 1) / 5 + 1)::text, 5, '0'), 'ent_n' || lpad(n::text, 6, '0'), array['invoices:read'],
         case when n % 25 = 0 then 'uninstalled' else 'active' end, 'usr_n' || n,
         c, c, case when n % 25 = 0 then c + interval '10 days' end, null
    from generate_series(1, $5::int) n,
         lateral (select $3::timestamptz - interval '200 days' + n * 190.0 / $5 * interval '1 day' as c) t
) x
order by created_at`

/**
 * $1 installs, $2 now, $3 the other apps' installs: one subscription per install, in time order; those of
 * uninstalled installs deleted, every 50th of the app's disabled by failures.
 */
const INSERT_SUBSCRIPTIONS = `
insert into webhook_subscriptions (id, install_id, org_ref_id, entity_ref_id, topics, target_url, secret_ciphertext,
                                   is_active, disabled_reason, disabled_at, created_at)
select * from (
  select ${SQL_IDS.subscription('i')}, ${SQL_IDS.install('i')}, ${SQL_IDS.org('i')}, ${SQL_IDS.entity('i')},
         array['invoice.created', 'invoice.updated', 'invoice.paid', '${RARE_TOPIC}', 'bill.created'],
         'https://hooks.example.com/ledger/' || i, 'not-a-ciphertext (bench/dashboard.ts)',
         i % 20 <> 0 and i % 50 <> 7,
         case when i % 20 = 0 then 'deleted' when i % 50 = 7 then 'consecutive_failures' end,
         case when i % 20 = 0 or i % 50 = 7 then $2::timestamptz - interval '1 hour' end,
         $2::timestamptz - interval '200 days' + i * 180.0 / $1 * interval '1 day' + interval '1 minute' as created_at
    from generate_series(1, $1::int) i
  union all
  select 'whs_' || substr(md5('noise sub ' || n), 1, 12), ${SQL_IDS.noiseInstall('n')},
         'org_n' || lpad(((n - 1) / 5 + 1)::text, 5, '0'), 'ent_n' || lpad(n::text, 6, '0'), array['invoice.paid'],
         'https://hooks.example.net/' || n, 'not-a-ciphertext (bench/dashboard.ts)', n % 25 <> 0,
         case when n % 25 = 0 then 'deleted' end, case when n % 25 = 0 then $2::timestamptz end,
         $2::timestamptz - interval '200 days' + n * 190.0 / $3 * interval '1 day' + interval '1 minute'
    from generate_series(1, $3::int) n
) x
order by created_at`

/**
 * Every delivery of the log, one row each, from the blocks of ten attempts (bench header): $1 blocks, $2 blocks of
 * the long log, $3 subscriptions, $4 seconds the log spans, $5 now. Block b of subscription s ends at t; its
 * attempt j (0–9) was made at t - (9 - j) × 5 s; delivery k (0–6) is number (b - 1) × 7 + k + 1.
 */
const MAKE_DELIVERIES = `
create temporary table bench_deliveries as
with blocks as (
  select b, case when b <= $2 then 1 else 2 + (b - $2 - 1) % ($3 - 1) end as s,
         date_trunc('milliseconds', $5::timestamptz - interval '1 minute' - make_interval(secs =>
           case when b <= $2 then (b - 1) * $4::float8 / $2
                else (b - $2 - 0.5) * $4::float8 / nullif($1 - $2, 0) end)) as t
    from generate_series(1, $1::int) b
)
select n, b, k, s, t, first_j, attempts, 'dlv_' || md5('d' || n) as id, 'evt_' || substr(md5('e' || n), 1, 16) as event,
       case when n % 3511 = 0 then '${RARE_TOPIC}' else (array['${TOPICS.join("', '")}'])[n % 4 + 1] end as topic,
       case when k <= 4 then 'succeeded' when k = 5 then 'failed'
            when t > $5::timestamptz - interval '2 hours' then 'pending' else 'failed' end as status,
       t - (9 - first_j) * interval '5 seconds' - interval '2 seconds' as created_at,
       t - (9 - first_j - attempts + 1) * interval '5 seconds' as last_at
  from blocks,
       lateral (values (0, 0, 1), (1, 1, 1), (2, 2, 1), (3, 3, 1), (4, 4, 2), (5, 6, 3), (6, 9, 1))
         as d(k, first_j, attempts),
       lateral (select (b - 1) * 7 + k + 1 as n) num`

/** $1 the event's data (an invoice as the sandbox makes it). */
const INSERT_EVENTS = `
insert into webhook_events (id, topic, org_ref_id, entity_ref_id, body, delivery_count, created_at)
select event, topic, ${SQL_IDS.org('s')}, ${SQL_IDS.entity('s')},
       '{"id":"' || event || '","type":"' || topic || '","created_at":"' || ${ISO('created_at')} || '","data":' ||
         $1 || '}',
       1, created_at
  from bench_deliveries order by created_at`

/** $1 now. A delivery still retrying goes out again in an hour: nothing is due while the benchmark runs. */
const INSERT_DELIVERIES = `
insert into webhook_deliveries (id, event_id, subscription_id, status, attempts, next_attempt_at, created_at,
                                completed_at)
select id, event, ${SQL_IDS.subscription('s')}, status, attempts,
       case when status = 'pending' then $1::timestamptz + interval '1 hour' else last_at end,
       created_at, case when status <> 'pending' then last_at end
  from bench_deliveries order by created_at`

/** Each delivery's attempts, in time order, as the worker records them (sender.ts: headers, kept answer, error). */
const INSERT_ATTEMPTS = `
insert into webhook_attempts (id, delivery_id, subscription_id, attempt, attempted_at, duration_ms, response_status,
                              response_body, error, error_class, request_headers, response_headers)
select 'att_' || md5('a' || an), d.id, ${SQL_IDS.subscription('d.s')}, x.attempt, at, 
       case x.status when 0 then case when x.j = 6 then 10000 else 3 end else 40 + an % 250 end,
       x.status,
       case when x.status between 200 and 299 then '{"received":true}'
            when x.status = 500 then '{"error":"internal_error","message":"upstream ledger unavailable"}' end,
       case when x.j = 6 then 'timed out after 10 s'
            when x.j = 8 then 'ECONNREFUSED: connect ECONNREFUSED 203.0.113.7:443' end,
       case when x.j = 6 then 'timeout' when x.j = 8 then 'connection_refused'
            when x.status = 500 then 'http_status' end,
       jsonb_build_object('content-type', 'application/json', 'user-agent', 'marketplace-webhooks/0.7.0',
         'x-service-signature', 'sha256=' || md5(an || 's') || md5(an || 't'), 'x-service-topic', d.topic,
         'x-service-event-id', d.event, 'x-service-delivery-attempt', x.attempt::text, 'webhook-id', d.event,
         'webhook-timestamp', extract(epoch from at)::bigint::text,
         'webhook-signature', 'v1,' || md5(an || 'u') || md5(an || 'v')),
       case when x.status <> 0 then jsonb_build_object('content-type', 'application/json; charset=utf-8',
         'content-length', '17', 'date', to_char(at at time zone 'UTC', 'Dy, DD Mon YYYY HH24:MI:SS "GMT"')) end
  from bench_deliveries d
  join (values (0, 1, 0, 200), (1, 1, 1, 200), (2, 1, 2, 200), (3, 1, 3, 204), (4, 1, 4, 500), (4, 2, 5, 200),
               (5, 1, 6, 0), (5, 2, 7, 500), (5, 3, 8, 0), (6, 1, 9, 500)) as x(k, attempt, j, status) on x.k = d.k,
       lateral (select (d.b - 1) * 10 + x.j + 1 as an, d.t - (9 - x.j) * interval '5 seconds' as at) a
 order by at`

/** migrations/012_dashboard.sql's backfill: the hourly counters, as the worker keeps them, from the attempts. */
const ACTIVITY_BACKFILL = `
insert into webhook_activity_hours (client_id, hour, succeeded, failed, exhausted)
select i.client_id, date_trunc('hour', a.attempted_at, 'UTC'),
       count(*) filter (where a.response_status between 200 and 299),
       count(*) filter (where a.response_status not between 200 and 299),
       count(*) filter (where a.response_status not between 200 and 299 and d.status = 'failed'
                          and a.attempt = d.attempts)
  from webhook_attempts a
  join webhook_deliveries d on d.id = a.delivery_id
  join webhook_subscriptions s on s.id = a.subscription_id
  join installs i on i.install_id = s.install_id
 group by 1, 2`

/** Each subscription's last delivery and its current streak of failures (since its last 2xx), from its attempts. */
const SUBSCRIPTION_STATE = `
update webhook_subscriptions s
   set last_delivery_at = l.attempted_at, last_delivery_status = l.response_status,
       consecutive_failures = f.n, failing_since = f.since
  from webhook_subscriptions s2
  cross join lateral (select attempted_at, response_status from webhook_attempts a
                       where a.subscription_id = s2.id order by attempted_at desc limit 1) l
  cross join lateral (select count(*)::int as n, min(attempted_at) as since from webhook_attempts a
                       where a.subscription_id = s2.id and a.attempted_at > coalesce(
                         (select max(attempted_at) from webhook_attempts b
                           where b.subscription_id = s2.id and b.response_status between 200 and 299),
                         '-infinity')) f
 where s.id = s2.id`

/** $1 other apps' client ids: each installed in the org user's five entities. */
const INSERT_OTHER_INSTALLS = `
insert into installs (install_id, client_id, org_ref_id, entity_ref_id, scopes, installed_by, created_at, updated_at)
select 'ins_' || substr(md5('other ' || o || ' ' || e), 1, 12), c, 'org_00001', 'ent_' || lpad(e::text, 5, '0'),
       array['invoices:read'], 'usr_00001', now() - o * interval '3 days', now() - o * interval '3 days'
  from unnest($1::text[]) with ordinality as a(c, o), generate_series(1, 5) e`

async function seed (c: pg.Client, clientId: string, others: string[], at: Date): Promise<void> {
  const step = async (label: string, sql: string, params: unknown[] = []): Promise<void> => {
    const t0 = now()
    const res = await c.query(sql, params)
    console.log(`    ${label}: ${res.rowCount === null ? '' : `${fmt(res.rowCount)} rows, `}` +
      `${fmt((now() - t0) / 1000, 1)} s`)
  }
  const blocks = ATTEMPTS / 10
  const bigBlocks = BIG_ATTEMPTS / 10
  const invoice = JSON.stringify(sampleRecord('invoice.paid', RECORD_SAMPLES, at.toISOString()))
  await c.query('set synchronous_commit = off')
  await step('installs', INSERT_INSTALLS, [clientId, INSTALLS, at, others, OTHER_INSTALLS])
  await step('the org user\'s other connections', INSERT_OTHER_INSTALLS, [others])
  await step('subscriptions', INSERT_SUBSCRIPTIONS, [INSTALLS, at, OTHER_INSTALLS])
  await step('deliveries (generated)', MAKE_DELIVERIES, [blocks, bigBlocks, INSTALLS, DAYS * 86_400, at])
  await step('webhook_events', INSERT_EVENTS, [invoice])
  await step('webhook_deliveries', INSERT_DELIVERIES, [at])
  await step('webhook_attempts', INSERT_ATTEMPTS)
  await step('webhook_activity_hours', ACTIVITY_BACKFILL)
  await step('subscriptions\' last delivery and streak', SUBSCRIPTION_STATE)
  await c.query('drop table bench_deliveries')
  await step('vacuum analyze', 'vacuum analyze')
}

// ---------------------------------------------------------------------------------------------------------------
// Pages

interface Page {
  name: PageName
  /** What it is, for the table. */
  title: string
  path: string
  cookie: string
  /** Every answer must contain this (the page's own title). */
  expect: string
  html: string
}

async function get (url: string, cookie: string): Promise<{ status: number, html: string, setCookies: string[] }> {
  const res = await fetch(url, { headers: { cookie }, redirect: 'manual' })
  return { status: res.status, html: await res.text(), setCookies: res.headers.getSetCookie() }
}

/** The cursor of a page's "next" link (views: `<a href="?…" rel="next">`). */
function nextCursor (html: string): string | undefined {
  const href = /<a href="\?([^"]*)" rel="next">/.exec(html)?.[1]
  return href === undefined ? undefined : new URLSearchParams(href.replace(/&amp;/g, '&')).get('cursor') ?? undefined
}

const rowsOf = (html: string): number => Math.max(0, (html.match(/<tr[\s>]/g) ?? []).length - 1)
const titleOf = (html: string): string => /<title>([^<]*)<\/title>/.exec(html)?.[1] ?? ''

// ---------------------------------------------------------------------------------------------------------------
// Measurement

/**
 * The service's request log lines, read from its standard output through a pipe as a log collector reads them: the
 * `ms` of each line for the page being measured, from `listen` to `take`.
 */
function requestTimes () {
  let rest = ''
  let path: string | undefined
  let times: number[] = []
  return {
    read (text: string): void {
      const lines = (rest + text).split('\n')
      rest = lines.pop()!
      if (path === undefined) return
      for (const line of lines) {
        if (!line.includes('"msg":"request"')) continue
        try {
          const l = JSON.parse(line) as { url?: string, ms?: number }
          if (l.url === path && typeof l.ms === 'number') times.push(l.ms)
        } catch {}
      }
    },
    listen (p: string): void {
      path = p
      times = []
    },
    /** The times read since `listen`, once the lines of the last answers had time to arrive. */
    async take (): Promise<number[]> {
      await sleep(200)
      const taken = times
      path = undefined
      times = []
      return taken
    }
  }
}
type RequestTimes = ReturnType<typeof requestTimes>

/** Postgres backends of the run's database: CPU seconds each so far. */
async function backendCpu (meter: pg.Client): Promise<Map<number, number>> {
  const { rows } = await meter.query<{ pid: number }>(
    'select pid from pg_stat_activity where datname = current_database() and pid <> pg_backend_pid()')
  const cpu = (pid: number): number => {
    try {
      const stat = readFileSync(`/proc/${pid}/stat`, 'utf8')
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ')
      return (Number(fields[11]) + Number(fields[12])) / 100
    } catch {
      return 0
    }
  }
  return new Map(rows.map(r => [r.pid, cpu(r.pid)]))
}

interface Row {
  page: Page
  service: SliceFigures
  bare: SliceFigures
  serverP50: number
  serverP99: number
  logged: number
  /** At one connection: the client's p99 and the server time's. */
  aloneP99: number
  aloneServerP99: number
  cpuMicros: number
  bareCpuMicros: number
  pgMicros: number
  load: number
}

async function measurePage (
  page: Page, index: number, service: ServerProcess, bare: ServerProcess, log: RequestTimes, meter: pg.Client
): Promise<Row> {
  const slice = (server: ServerProcess, seconds: number, connections = CONNECTIONS): Promise<RawResult> =>
    server === service
      ? loadSlice({ url: service.url + page.path, connections, duration: seconds, headers: { cookie: page.cookie } },
        { expect: page.expect })
      : loadSlice({ url: `${bare.url}/page/${index}`, connections, duration: seconds }, { expect: page.expect })
  // The bare route is the same route for every page: warmed up once, before the first.
  if (WARMUP > 0) mergeSlices(page.name, service.url, CONNECTIONS, [await slice(service, WARMUP)])
  if (WARMUP > 0 && index === 0) mergeSlices(`${page.name} (bare)`, bare.url, CONNECTIONS, [await slice(bare, WARMUP)])
  const results = { service: [] as RawResult[], bare: [] as RawResult[] }
  const times: number[] = []
  let cpu = 0
  let bareCpu = 0
  let pgCpu = 0
  for (let round = 0; round < ROUNDS; round++) {
    for (const side of round % 2 === 0 ? ['bare', 'service'] as const : ['service', 'bare'] as const) {
      if (side === 'bare') {
        const cpu0 = bare.cpuSeconds()
        results.bare.push(await slice(bare, BARE_SECONDS / ROUNDS))
        bareCpu += bare.cpuSeconds() - cpu0
        continue
      }
      const cpu0 = service.cpuSeconds()
      const pg0 = await backendCpu(meter)
      log.listen(page.path)
      results.service.push(await slice(service, SECONDS / ROUNDS))
      cpu += service.cpuSeconds() - cpu0
      for (const [pid, seconds] of await backendCpu(meter)) pgCpu += seconds - (pg0.get(pid) ?? 0)
      times.push(...await log.take())
    }
  }
  // One request at a time: the server time without a queue in the service, the lower bound of the figure above.
  log.listen(page.path)
  const alone = mergeSlices(`${page.name} (1 connection)`, service.url, 1, [await slice(service, ALONE_SECONDS, 1)])
  const aloneTimes = (await log.take()).sort((x, y) => x - y)
  const s = mergeSlices(page.name, service.url, CONNECTIONS, results.service)
  const b = mergeSlices(`${page.name} (bare)`, bare.url, CONNECTIONS, results.bare)
  times.sort((x, y) => x - y)
  return {
    page,
    service: s,
    bare: b,
    serverP50: quantile(times, 0.5),
    serverP99: quantile(times, 0.99),
    logged: times.length,
    aloneP99: alone.p99,
    aloneServerP99: quantile(aloneTimes, 0.99),
    cpuMicros: cpu * 1e6 / s.total,
    bareCpuMicros: bareCpu * 1e6 / b.total,
    pgMicros: pgCpu * 1e6 / s.total,
    load: loadavg()[0]!
  }
}

// ---------------------------------------------------------------------------------------------------------------
// EXPLAIN

/** A value as an SQL literal, for EXECUTE of a statement prepared without types (Postgres infers them). */
function literal (v: unknown): string {
  if (v === null || v === undefined) return 'null'
  if (typeof v === 'number') return String(v)
  if (v instanceof Date) return pg.escapeLiteral(v.toISOString())
  if (Array.isArray(v)) return pg.escapeLiteral(`{${v.map(x => `"${String(x).replace(/["\\]/g, '\\$&')}"`).join(',')}}`)
  return pg.escapeLiteral(String(v))
}

interface Plan {
  statement: string
  mode: 'custom' | 'generic'
  ms: number
  /** The planner's estimate of the whole plan (its top node's total cost). */
  cost: number
  lines: string[]
}

/**
 * A Db for the service's stores that runs EXPLAIN (ANALYZE, BUFFERS) of every statement it is given, as a custom
 * plan (the statement with its values) and as a generic plan (PREPARE, then EXECUTE with plan_cache_mode
 * force_generic_plan); it answers the statement's rows, so that a store call goes on as it would.
 */
function explainingDb (c: pg.Client, plans: Plan[], label: () => string): Db {
  const explain = async (mode: Plan['mode'], text: string, values?: unknown[]): Promise<void> => {
    const { rows } = await c.query<{ 'QUERY PLAN': string }>({ text: `explain (analyze, buffers) ${text}`, values })
    const lines = rows.map(r => r['QUERY PLAN'])
    const ms = Number(/Execution Time: ([\d.]+) ms/.exec(lines.join('\n'))?.[1] ?? NaN)
    const cost = Number(/cost=[\d.]+\.\.([\d.]+)/.exec(lines[0] ?? '')?.[1] ?? NaN)
    plans.push({ statement: label(), mode, ms, cost, lines })
  }
  const db = {
    async query<T> (sql: string, params: unknown[] = []): Promise<T[]> {
      await explain('custom', sql, params)
      await c.query(`prepare bench_explained as ${sql}`)
      try {
        await c.query('set plan_cache_mode = force_generic_plan')
        await explain('generic', `execute bench_explained(${params.map(literal).join(', ')})`)
      } finally {
        await c.query('reset plan_cache_mode')
        await c.query('deallocate bench_explained')
      }
      return (await c.query({ text: sql, values: params })).rows as T[]
    }
  }
  return db as unknown as Db
}

interface ExplainArgs {
  clientId: string
  sid: string
  dayStart: Date
  installsAfter: InstallPosition
  logAfter: { at: Date, id: string }
  window: { since: Date, until: Date }
  event: string
  delivery: string
}

async function explainAll (c: pg.Client, a: ExplainArgs, file: string): Promise<Plan[]> {
  const plans: Plan[] = []
  let current = ''
  const db = explainingDb(c, plans, () => current)
  const apps = createAppStore(db)
  const installs = createInstallStore(db)
  const subscriptions = createSubscriptionStore(db)
  const log = createAttemptLogStore(db)
  const page = (filter: AttemptFilter, after?: { at: Date, id: string }) =>
    log.page(a.sid, { limit: PAGE_SIZE, scanLimit: LOG_SCAN_LIMIT, after, filter })
  const steps: Array<[string, () => Promise<unknown>]> = [
    ['apps: apps.listOwnedBy', () => apps.listOwnedBy(DEV.sub)],
    ['apps: installs.countActive', () => installs.countActive([a.clientId])],
    ['apps, webhooks: activity (24 h)', () => log.activity([a.clientId], a.dayStart)],
    ['app and every app page: apps.find', () => apps.find(a.clientId)],
    ['installs: installs.listForApp', () => installs.listForApp(a.clientId, PAGE_SIZE + 1)],
    ['installs-later: installs.listForApp after',
      () => installs.listForApp(a.clientId, PAGE_SIZE + 1, a.installsAfter)],
    ['webhooks: subscriptions.listForApp', () => subscriptions.listForApp(a.clientId, PAGE_SIZE + 1)],
    ['log pages: subscriptions.findOwned', () => subscriptions.findOwned(a.sid)],
    ['log pages: subscriptions.find', () => subscriptions.find(installId(1), a.sid)],
    ['log: page', () => page({})],
    ['log-failed: page status=failed', () => page({ outcome: 'failed' })],
    [`log-topic: page topic=${RARE_TOPIC}`, () => page({ topic: RARE_TOPIC })],
    ['log-window: page since/until', () => page(a.window)],
    ['log-event: page event_id', () => page({ eventId: a.event })],
    ['log-later: page after cursor', () => page({}, a.logAfter)],
    ['delivery: delivery', () => log.delivery(a.sid, a.delivery)],
    ['delivery: attemptsOf', () => log.attemptsOf(a.delivery)],
    ['connections: installs.listActiveIn', () => installs.listActiveIn(ORG_USER.orgRefId, ORG_USER.entityRefIds)]
  ]
  await c.query('set jit = off') // as the service's connections
  for (const [label, run] of steps) {
    current = label
    await run()
  }
  writeFileSync(file, plans.map(p => `-- ${p.statement} (${p.mode} plan)\n${p.lines.join('\n')}\n`).join('\n'))
  return plans
}

const BIG_TABLES = /Seq Scan on (webhook_attempts|webhook_deliveries|installs|webhook_events)\b/

/** A plan's scans, one short text each: `Index Scan using x on t (rows × loops, n removed by filter)`. */
function scans (plan: string[]): string[] {
  const found: string[] = []
  const scan = new RegExp('^( *)(?:->  )?((?:Parallel )?(?:Seq|Index Only|Index|Bitmap Heap|Bitmap Index) Scan' +
    '(?: Backward)?)(?: using (\\S+))?(?: on (\\S+))?.*actual time=\\S+ rows=(\\d+) loops=(\\d+)')
  for (const [k, l] of plan.entries()) {
    const m = scan.exec(l)
    if (!m) continue
    // The node's own detail lines follow it, indented deeper, up to its first child node.
    let removed = 0
    for (const d of plan.slice(k + 1)) {
      if (d.includes('->') || d.search(/\S/) <= m[1]!.length) break
      removed += Number(/Rows Removed by Filter: (\d+)/.exec(d)?.[1] ?? 0)
    }
    found.push(`${m[2]}${m[3] ? ` using ${m[3]}` : ''}${m[4] ? ` on ${m[4]}` : ''} (${m[5]} × ${m[6]}` +
      `${removed > 0 ? `, ${removed} removed by filter` : ''})`)
  }
  return found
}

/**
 * Which plan a connection of the service keeps for a statement after its first five executions (Postgres'
 * plancache.c, choose_custom_plan): the generic one when its estimated cost is below the custom plans' average,
 * which counts their planning too (1,000 × cpu_operator_cost per relation, plus one); estimated here from the one
 * custom plan of the pages' values, with the relations counted as the plan's scans.
 */
function kept (custom: Plan, generic: Plan): Plan {
  const planning = 1000 * 0.0025 * (scans(custom.lines).length + 1)
  return generic.cost < custom.cost + planning ? generic : custom
}

/**
 * Two lines per statement: the time and buffers of its custom and generic plans and which one the service keeps,
 * then the scans of the kept plan. A sequential scan of a big table in the kept plan is flagged; false if any was.
 */
function reportPlans (plans: Plan[], file: string): boolean {
  console.log('\n  EXPLAIN (ANALYZE, BUFFERS) of each page\'s statements, custom and generic plan, and the plan a ' +
    `connection keeps (whole plans in ${file}):`)
  const buffers = (p: Plan): string => /Buffers: (.*)/.exec(p.lines.slice(0, 6).join('\n'))?.[1] ?? ''
  let clean = true
  for (let i = 0; i + 1 < plans.length; i += 2) {
    const [custom, generic] = [plans[i]!, plans[i + 1]!]
    const keep = kept(custom, generic)
    const seq = keep.lines.some(l => BIG_TABLES.test(l))
    if (seq) clean = false
    console.log(`    ${custom.statement}: custom ${fmt(custom.ms, 2)} ms (${buffers(custom)}), generic ` +
      `${fmt(generic.ms, 2)} ms (${buffers(generic)}); kept: ${keep.mode}${seq ? '  SEQ SCAN OF A BIG TABLE' : ''}`)
    console.log(`      ${scans(keep.lines).join('; ')}`)
  }
  return clean
}

function report (rows: Row[], plansClean: boolean | undefined, seconds: number): void {
  console.log('')
  const cpu = (r: Row): string => `${fmt(r.cpuMicros)} / ${fmt(r.pgMicros)} / ${fmt(r.bareCpuMicros)}`
  printTable([
    ['page', 'what', 'req/s', 'p50 ms', 'p99 ms', 'server p50 ms', 'server p99 ms', '1 conn.: p99 / server p99 ms',
      'bare: req/s, p99 ms', 'CPU µs/req: service / Postgres / bare', 'load avg', `server p99 < ${TARGET_MS} ms`],
    ...rows.map(r => [
      r.page.name, r.page.title, fmt(r.service.rps), fmt(r.service.p50), fmt(r.service.p99), fmt(r.serverP50, 1),
      fmt(r.serverP99, 1), `${fmt(r.aloneP99)} / ${fmt(r.aloneServerP99, 1)}`,
      `${fmt(r.bare.rps)}, ${fmt(r.bare.p99)}`, cpu(r), r.load.toFixed(2), verdict(r.serverP99 < TARGET_MS)
    ])
  ], 2)
  console.log('')
  for (const r of rows) {
    console.log(`markdown row: | ${r.page.name} | ${r.page.title} | ${fmt(r.service.rps)} | ` +
      `${fmt(r.service.p50)} / ${fmt(r.service.p99)} | ${fmt(r.serverP50, 1)} / **${fmt(r.serverP99, 1)}** | ` +
      `${fmt(r.aloneP99)} / ${fmt(r.aloneServerP99, 1)} | ${fmt(r.bare.rps)} / ${fmt(r.bare.p99)} | ${cpu(r)} | ` +
      `${verdict(r.serverP99 < TARGET_MS)} |`)
    summary(`${r.page.name}: server p99 at ${CONNECTIONS} connections`, `${fmt(r.serverP99, 1)} ms`,
      { text: `< ${TARGET_MS} ms`, met: r.serverP99 < TARGET_MS })
  }
  const unlogged = rows.filter(r => r.logged === 0)
  const worst = rows.reduce((w, r) => r.serverP99 > w.serverP99 ? r : w, rows[0]!)
  const misses = rows.filter(r => !(r.serverP99 < TARGET_MS)).map(r => r.page.name)
  console.log(`\n  ${stamp()} UTC, ${fmt(seconds)} s, load average now ${loadavg().map(l => l.toFixed(2)).join(' ')}` +
    (plansClean === undefined ? '' : `; plans: ${plansClean ? 'no' : 'a'} sequential scan of a big table`))
  console.log(unlogged.length > 0
    ? `  VERDICT: no server times (LOG_LEVEL ${LOG_LEVEL} writes no request lines); client p99 worst ` +
      `${fmt(Math.max(...rows.map(r => r.service.p99)))} ms`
    : `  VERDICT: ${verdict(misses.length === 0)}: server time p99 < ${TARGET_MS} ms at ${CONNECTIONS} ` +
      `connections on ${rows.length - misses.length} of ${rows.length} pages (worst: ${worst.page.name}, ` +
      `${fmt(worst.serverP99, 1)} ms` +
      `${misses.length > 0 ? `; missed: ${misses.join(', ')}` : ''})`)
}

// ---------------------------------------------------------------------------------------------------------------

async function main (cleanups: Cleanup[]): Promise<void> {
  if (process.env.BENCH_DATABASE_URL) {
    throw new Error('bench/dashboard.ts makes its own database (unset BENCH_DATABASE_URL)')
  }
  if (ATTEMPTS % 10 !== 0 || BIG_ATTEMPTS % 10 !== 0 || BIG_ATTEMPTS >= ATTEMPTS || INSTALLS < 6) {
    throw new Error('BENCH_ATTEMPTS and BENCH_BIG_ATTEMPTS must be multiples of 10, the second below the first; ' +
      'BENCH_INSTALLS at least 6')
  }
  if (!(DEEP_AT > 0 && DEEP_AT < 1)) throw new Error('BENCH_DEEP_AT must lie between 0 and 1')
  const started = now()
  await ensureBuilt()
  const { url: databaseUrl, drop } = await benchDatabase('mg_bench_dash')
  cleanups.push(drop)
  const dataDir = tempDir('mg-bench-dash-', cleanups)
  const servicePort = await freePort()
  const env = { DATA_DIR: dataDir, DATABASE_URL: databaseUrl, PUBLIC_BASE_URL: `http://127.0.0.1:${servicePort}` }
  const at = new Date()

  console.log('marketplace-gateway bench: the dashboard\'s pages at size (npm start) vs a bare Fastify route sending ' +
    'the same bytes')
  console.log(`  ${fmt(INSTALLS)} installs of one app, one subscription each; ${fmt(ATTEMPTS)} attempts over ${DAYS} ` +
    `days, ${fmt(BIG_ATTEMPTS)} in one subscription; ${CONNECTIONS} connections, ${SECONDS} s a page on the service ` +
    `and ${BARE_SECONDS} s on the bare route in ${ROUNDS} alternating slices (warm-up ${WARMUP} s), then ` +
    `${ALONE_SECONDS} s at one connection; LOG_LEVEL ` +
    `${LOG_LEVEL} on both; autocannon in its own process`)
  console.log(`  ${nodeAndCpus()}, Postgres ${new URL(databaseUrl).host}, load average ` +
    `${loadavg().map(l => l.toFixed(2)).join(' ')}`)

  // The apps through the API, by their developers, on the service's database and keys (migrations run here).
  const setup = await buildApp({ ...loadConfig(env), webhookWorker: false, logLevel: 'warn' }, { logStream: discard() })
  const register = async (user: SessionUser, slug: string, name: string): Promise<string> => {
    const res = await setup.inject({
      method: 'POST',
      url: '/apps',
      headers: { authorization: `Bearer ${setup.userSessions.sign(user)}`, 'content-type': 'application/json' },
      payload: {
        slug,
        name,
        redirect_uris: ['https://app.example.com/callback'],
        scopes: ['invoices:read', 'bills:read', 'customers:read'],
        publisher: 'Bench Software Ltd',
        website_url: 'https://app.example.com'
      }
    })
    if (res.statusCode !== 201) throw new Error(`register ${slug}: ${res.statusCode} ${res.body}`)
    return (res.json() as { client_id: string }).client_id
  }
  let clientId: string
  let others: string[]
  try {
    await setup.ready()
    clientId = await register(DEV, 'bench-ledger-sync', 'Ledger Sync')
    others = [
      await register(OTHER_DEV, 'bench-payroll-bridge', 'Payroll Bridge'),
      await register(OTHER_DEV, 'bench-stock-alerts', 'Stock Alerts'),
      await register(OTHER_DEV, 'bench-tax-filing', 'Tax Filing')
    ]
  } finally {
    await setup.close()
  }

  const db = new pg.Client({ connectionString: databaseUrl })
  await db.connect()
  cleanups.push(() => db.end())
  console.log('  seeding:')
  const t0 = now()
  await seed(db, clientId, others, at)
  const { rows: [counts] } = await db.query<Record<string, string>>(
    `select (select count(*) from installs) as installs, (select count(*) from webhook_events) as events,
            (select count(*) from webhook_deliveries) as deliveries,
            (select count(*) from webhook_attempts) as attempts,
            (select count(*) from webhook_attempts where subscription_id = $1) as big,
            (select count(*) from webhook_attempts where subscription_id = $1
                and attempted_at > now() - interval '24 hours') as big_day,
            (select sum(succeeded + failed) from webhook_activity_hours) as counted,
            pg_size_pretty(pg_total_relation_size('webhook_attempts')) as attempts_size,
            pg_size_pretty(pg_total_relation_size('webhook_events')) as events_size`,
    [subscriptionId(1)])
  console.log(`    ${counts!.installs} installs, ${counts!.events} events, ${counts!.deliveries} deliveries, ` +
    `${counts!.attempts} attempts (${counts!.big} in the long log, ${counts!.big_day} of them in the last 24 h; ` +
    `${counts!.counted} in the hourly counters); webhook_attempts ${counts!.attempts_size}, webhook_events ` +
    `${counts!.events_size} with indexes; ${fmt((now() - t0) / 1000, 1)} s`)
  if (Number(counts!.counted) !== ATTEMPTS || Number(counts!.attempts) !== ATTEMPTS) {
    throw new Error('the counters do not count every attempt')
  }

  const secrets = devSecrets(dataDir)
  const log = requestTimes()
  const service = await startService({
    cleanups,
    env: { ...secrets, ...env },
    port: servicePort,
    logLevel: LOG_LEVEL,
    onOutput: log.read,
    nodeArgs: PROFILE ? ['--cpu-prof', `--cpu-prof-dir=${PROFILE}`] : undefined
  })

  // Sessions as the accounting system signs them, and the form-token cookie the first page sets (a browser keeps it).
  const sessionSecret = secrets.USER_SESSION_SECRET!
  const cookieOf = async (user: SessionUser, path: string): Promise<string> => {
    const session = `session=${signUserSession(sessionSecret, user)}`
    const first = await get(service.url + path, session)
    const csrf = first.setCookies.map(c => c.split(';')[0]!).find(c => c.startsWith('_csrf='))
    if (first.status !== 200 || !csrf) throw new Error(`GET ${path}: ${first.status}, no form-token cookie`)
    return `${session}; ${csrf}`
  }
  const dev = await cookieOf(DEV, '/dashboard/apps')
  const orgUser = await cookieOf(ORG_USER, '/dashboard/connections')

  const sid = subscriptionId(1)
  const app = `/dashboard/apps/${clientId}`
  const logPath = `/dashboard/webhooks/${sid}`
  const bigBlocks = BIG_ATTEMPTS / 10
  const eventN = (Math.round(bigBlocks / 2) - 1) * 7 + 6 // the delivery failed for good after three attempts
  const iso = (d: Date): string => d.toISOString().slice(0, 19) + 'Z'
  const window = { since: new Date(at.getTime() - 30 * 3_600_000), until: new Date(at.getTime() - 26 * 3_600_000) }
  const deepUntil = new Date(at.getTime() - 60_000 - DEEP_AT * DAYS * 86_400_000)

  // The later pages' cursors, as a user gets them: the installs' page before the last through its next links; the
  // long log's page at BENCH_DEEP_AT through the cursor of a page that starts there (until), used without the filter.
  const installsLater = Math.max(2, Math.ceil(INSTALLS / PAGE_SIZE) - 1)
  let installsCursor: string | undefined
  for (let page = 1, html = (await get(service.url + `${app}/installs`, dev)).html; page < installsLater; page++) {
    installsCursor = nextCursor(html)
    if (!installsCursor) throw new Error(`no next link on page ${page} of the installs`)
    html = (await get(service.url + `${app}/installs?cursor=${installsCursor}`, dev)).html
  }
  const deep = await get(service.url + `${logPath}?until=${iso(deepUntil)}`, dev)
  const logCursor = nextCursor(deep.html)
  if (deep.status !== 200 || !logCursor) throw new Error(`no next link on the log until ${iso(deepUntil)}`)

  const specs: Array<[PageName, string, string, string]> = [
    ['apps', 'GET /dashboard/apps', '/dashboard/apps', dev],
    ['app', 'GET /dashboard/apps/{id}', app, dev],
    ['installs', 'GET …/installs (first page)', `${app}/installs`, dev],
    ['installs-later', `GET …/installs?cursor= (page ${installsLater})`, `${app}/installs?cursor=${installsCursor}`,
      dev],
    ['webhooks', 'GET /dashboard/apps/{id}/webhooks', `${app}/webhooks`, dev],
    ['log', 'GET /dashboard/webhooks/{sid} (long log)', logPath, dev],
    ['log-failed', '… ?status=failed', `${logPath}?status=failed`, dev],
    ['log-topic', `… ?topic=${RARE_TOPIC} (rare)`, `${logPath}?topic=${RARE_TOPIC}`, dev],
    ['log-window', '… ?since=&until= (4 h, a day ago)',
      `${logPath}?since=${iso(window.since)}&until=${iso(window.until)}`, dev],
    ['log-event', '… ?event_id=', `${logPath}?event_id=${eventId(eventN)}`, dev],
    ['log-later', `… ?cursor= (at ${DEEP_AT * 100} % of the log)`, `${logPath}?cursor=${logCursor}`, dev],
    ['delivery', 'GET …/deliveries/{did} (3 attempts)', `${logPath}/deliveries/${deliveryId(eventN)}`, dev],
    ['connections', 'GET /dashboard/connections (20)', '/dashboard/connections', orgUser]
  ]
  const pages: Page[] = []
  console.log('  the pages (answer 200, size, table rows):')
  for (const [name, title, path, cookie] of specs) {
    if (!PAGES.has(name)) continue
    const res = await get(service.url + path, cookie)
    if (res.status !== 200) throw new Error(`GET ${path}: ${res.status}\n${res.html.slice(0, 2000)}`)
    pages.push({ name, title, path, cookie, expect: `<title>${titleOf(res.html)}</title>`, html: res.html })
    console.log(`    ${name.padEnd(15)} ${fmt(res.html.length / 1024, 1).padStart(5)} KiB ` +
      `${String(rowsOf(res.html)).padStart(3)} ` +
      `rows  ${path.length > 110 ? path.slice(0, 107) + '…' : path}`)
  }
  const byEvent = pages.find(p => p.name === 'log-event')
  if (byEvent && !byEvent.html.includes(deliveryId(eventN))) {
    throw new Error('the event filter does not show the event\'s delivery')
  }

  const pagesFile = join(dataDir, 'pages.json')
  writeFileSync(pagesFile, JSON.stringify(pages.map(p => p.html)))
  const barePort = await freePort()
  const bare = await startServer({
    name: 'bare Fastify',
    cleanups,
    command: process.execPath,
    args: ['--import', 'tsx', 'bench/bare-server.ts'],
    env: cleanEnv({ PORT: String(barePort), LOG_LEVEL, BARE_PAGES_FILE: pagesFile }),
    port: barePort,
    readyPath: '/health',
    // Its log lines through a pipe too, read and dropped: both sides pay for their logging alike.
    onOutput: () => {}
  })
  const meter = new pg.Client({ connectionString: databaseUrl })
  await meter.connect()
  cleanups.push(() => meter.end())

  const rows: Row[] = []
  for (const [index, page] of pages.entries()) {
    const row = await measurePage(page, index, service, bare, log, meter)
    rows.push(row)
    console.log(`    ${page.name.padEnd(15)} ${fmt(row.service.rps).padStart(6)} req/s, p99 ` +
      `${fmt(row.service.p99)} ms; ` +
      `server p99 ${fmt(row.serverP99, 1)} ms; bare ${fmt(row.bare.rps)} req/s (load average ${row.load.toFixed(2)})`)
  }
  await service.stop()
  await bare.stop()

  let plansClean: boolean | undefined
  if (EXPLAIN) {
    const position = async <T>(sql: string, params: unknown[]): Promise<T> => (await db.query(sql, params)).rows[0] as T
    const inst = await position<{ created_at: Date, install_id: string }>(
      `select created_at, install_id from installs where client_id = $1 order by created_at, install_id
        offset $2 limit 1`, [clientId, (installsLater - 1) * PAGE_SIZE - 1])
    const att = await position<{ attempted_at: Date, id: string }>(
      `select attempted_at, id from webhook_attempts where subscription_id = $1 and attempted_at < $2
        order by attempted_at desc, id desc limit 1`, [sid, deepUntil])
    mkdirSync(RESULTS, { recursive: true })
    const file = join(RESULTS, `dashboard-plans-${new Date().toISOString().replace(/[:.]/g, '-')}.txt`)
    const plans = await explainAll(db, {
      clientId,
      sid,
      dayStart: new Date(Math.floor(Date.now() / 3_600_000) * 3_600_000 - 23 * 3_600_000),
      installsAfter: [inst.created_at.toISOString(), inst.install_id],
      logAfter: { at: att.attempted_at, id: att.id },
      window,
      event: eventId(eventN),
      delivery: deliveryId(eventN)
    }, file)
    plansClean = reportPlans(plans, file)
  }
  report(rows, plansClean, (now() - started) / 1000)
}

runBench(main)
