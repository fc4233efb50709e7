// The developer's pages and actions of the dashboard (docs/dashboard.md): their apps with the last 24 hours'
// figures, an app with its API key form, its installs ("last used" written at most once a minute), its webhooks
// with the chart and its table, a subscription's attempts log (filters, keyset pages, the bounded scan), one
// delivery, and the actions (key, resend, recover, test event, secret rotation); anyone else's ids as unknown ones,
// the form token and same-origin checks, and escaping. Time on the app's side is a hand-moved clock
// (test/support/clock.ts): within a test it moves only when the test moves it.
import t from 'tap'
import { standardSignature } from '../../../../plugins/domain/webhooks/signing.js'
import { createInstallStore } from '../../../../plugins/domain/installs/store.js'
import { ManualClock } from '../../../support/clock.js'
import { bearer, build, eventually, install, unique, type Installed } from '../../../support/helper.js'
import { selfSigned, startReceiver } from '../../../support/receiver.js'
import { hooksUrl, publish, receiverEnv, subscribe } from '../../../support/webhooks.js'
import {
  newestFirst, recordAttempts, seedAttempts, type LogSubscription, type Seeded
} from '../../../support/attempt-log.js'
import {
  Browser, decode, formFields, formsTo, mainText, noticeOf, registerApp, shown, subOf, tableRows, text,
  withoutTokens, type RegisteredApp
} from '../../../support/dashboard.js'

type Test = Parameters<Parameters<typeof t.test>[0]>[0]
type Response = Awaited<ReturnType<Browser['get']>>

// The app's clock is kept half a minute behind the wall clock at the start of each test: a test may then move it a
// minute on (the installs' "last used") and stay within the minute that tokens and authorization codes, stamped on
// the database's clock, allow between the two.
const LAG_MS = 30_000
const clock = new ManualClock(Date.now() - LAG_MS)
// Retries wait an hour (so a failed delivery stays pending until a test says otherwise), nothing is disabled, and
// a recovery sends at most two deliveries.
const app = await build(t, receiverEnv(selfSigned().caFile, {
  WEBHOOK_REPLAY_LIMIT: '2',
  WEBHOOK_RETRY_SCHEDULE: '3600,3600,3600',
  WEBHOOK_DISABLE_AFTER_FAILURES: '1000',
  WEBHOOK_DISABLE_AFTER_HOURS: '0'
}), { clock })
t.beforeEach(() => { clock.advance(Math.max(0, Date.now() - LAG_MS - clock.now())) })

const HOUR = 3_600_000
/** A fixed past instant on a whole hour: seeded logs count their times from it. */
const BASE = Date.parse('2026-06-01T12:00:00.000Z')
const at = (seconds: number): Date => new Date(BASE + seconds * 1000)

/** A developer signed in to the dashboard, with a browser of their own. */
function developer (sub = unique('dev')): Browser {
  return new Browser(app, app.userSessions.sign({ sub, orgRefId: unique('devorg'), entityRefIds: [] }))
}

/** An install of the developer's app in a new tenant (or the one given). */
const installOf = (a: RegisteredApp, o: { orgRefId?: string, entityRefId?: string, scopes?: string[] } = {}) =>
  install(app, { app: a, ...o })

const logSubscription = (id: string, i: Installed): LogSubscription =>
  ({ id, orgRefId: i.orgRefId, entityRefId: i.entityRefId })

/** A developer, their app, an install of it and a subscription to a receiver of the test's own. */
async function subscribed (t: Test, o: { name?: string, respond?: Parameters<typeof startReceiver>[1] } = {}) {
  const dev = developer()
  const a = await registerApp(app, dev.session, { name: o.name })
  const i = await installOf(a)
  const receiver = await startReceiver(t, o.respond)
  const s = await subscribe(app, i, { topics: ['invoice.paid', 'bill.created'], target_url: receiver.url })
  return { dev, a, i, receiver, sid: s.id, sub: logSubscription(s.id, i) }
}

const subscriptionPath = (sid: string) => `/dashboard/webhooks/${sid}`

function isPage (t: Test, res: Response, status: number, what: string) {
  t.equal(res.statusCode, status, `${what}: ${status}`)
  t.equal(res.headers['content-type'], 'text/html; charset=utf-8', `${what}: a page`)
  t.equal(res.headers['cache-control'], 'no-store', `${what}: not stored`)
}

/** The event ids of the attempts log's rows, in order. */
const loggedEvents = (res: Response): string[] => (tableRows(res.body, 'Attempts, newest first') ?? []).map(r => r[1]!)

/** The link to the next page of a list, resolved against `path`; undefined on the last page. */
function nextLink (res: Response, path: string): string | undefined {
  const m = /<a href="([^"]*)" rel="next">/.exec(res.body)
  return m ? path + decode(m[1]!) : undefined
}

const lastUsed = async (installId: string): Promise<Date | null> => (await app.db.query<{ at: Date | null }>(
  'select last_used_at as at from installs where install_id = $1', [installId]))[0]!.at

const deliveries = (sid: string) => app.db.query<{ id: string, event_id: string, status: string, attempts: number }>(
  'select id, event_id, status, attempts from webhook_deliveries where subscription_id = $1 order by created_at, id',
  [sid])

const me = (token: string) => app.inject({ method: 'GET', url: '/public/v1/me', headers: bearer(token) })

t.test('/dashboard takes a developer with an app to Apps; the apps page lists theirs with their figures', async t => {
  const dev = developer()
  const empty = await dev.get('/dashboard/apps')
  isPage(t, empty, 200, 'no apps yet')
  t.match(mainText(empty.body), 'You have no apps yet.')

  const ledger = await registerApp(app, dev.session, { name: 'Ledger Sync' })
  const quiet = await registerApp(app, dev.session, { name: 'Quiet App' })
  const someoneElses = await registerApp(app, developer().session, { name: 'Not Yours' })
  const landing = await dev.get('/dashboard')
  t.equal(landing.statusCode, 303)
  t.equal(landing.headers.location, '/dashboard/apps')

  // Two active installs and an uninstalled one; the other app's key disabled.
  const i1 = await installOf(ledger)
  await installOf(ledger)
  const gone = await installOf(ledger)
  const uninstalled = await app.inject({
    method: 'DELETE', url: `/installs/${gone.installId}`, headers: bearer(gone.userToken)
  })
  t.equal(uninstalled.statusCode, 200, 'uninstalled through the API')
  await installOf(someoneElses)
  const disabled = await app.inject({
    method: 'POST', url: `/apps/${quiet.clientId}/api-key/disable`, headers: bearer(dev.session)
  })
  t.equal(disabled.statusCode, 200)

  // Deliveries: done ones (their attempts succeeded) and ones that failed for good, in the last 24 whole hours
  // (from 23 hours before the current one), and before them.
  const s = await subscribe(app, i1, { target_url: 'https://127.0.0.1:9/hooks' })
  const hour = Math.floor(clock.now() / HOUR) * HOUR
  const first = hour - 23 * HOUR
  await recordAttempts(app.db, logSubscription(s.id, i1), [
    { at: new Date(first - 1) }, { at: new Date(first - HOUR) }, { at: new Date(first - 1), succeeded: false },
    { at: new Date(first) }, { at: new Date(first + 1), succeeded: false },
    { at: new Date(hour) }, { at: new Date(clock.now()) },
    { at: new Date(hour + 1), succeeded: false, retry: true },
    { at: new Date(clock.now()), succeeded: false }
  ])

  const page = await dev.get('/dashboard/apps')
  isPage(t, page, 200, 'the apps page')
  t.match(page.body, 'aria-current="page"', 'Apps is the current section')
  const rows = tableRows(page.body, 'Your apps')!
  t.same(rows.map(r => r[0]), ['Ledger Sync', 'Quiet App'], "the developer's apps, not another developer's")
  const [l, q] = rows as [string[], string[]]
  t.same(l.slice(0, 3), ['Ledger Sync', ledger.appSlug, 'Enabled'], 'name, slug and key state')
  t.equal(l[3], '2 active installs of Ledger Sync', 'the active installs only')
  t.equal(l[4], '3 succeeded, 2 failed (webhooks of Ledger Sync)',
    'deliveries of the last 24 hours: done, and failed for good (a failure to be retried is neither)')
  t.same(q.slice(2), ['Disabled', '0 active installs of Quiet App', '0 succeeded, 0 failed (webhooks of Quiet App)'])
  t.notMatch(page.body, 'Not Yours')
  t.match(page.body, `href="/dashboard/apps/${ledger.clientId}"`, 'each app links to its page')
})

t.test("an app's page, and its key form: disabled, the app's tokens get 401; enabled, old tokens stay refused",
  async t => {
    const dev = developer()
    const a = await registerApp(app, dev.session, { name: 'Keyed App', scopes: ['invoices:read', 'bills:read'] })
    const i = await installOf(a)
    t.equal((await me(i.accessToken)).statusCode, 200, 'the token works first')

    const path = `/dashboard/apps/${a.clientId}`
    const page = await dev.get(path)
    isPage(t, page, 200, 'the app page')
    const said = mainText(page.body)
    for (const fact of [`Client ID ${a.clientId}`, `Slug ${a.appSlug}`,
      'Redirect URIs https://app.example.com/callback https://app.example.com/other',
      'Scopes invoices:read, bills:read', 'API key: Enabled']) {
      t.match(said, fact, fact)
    }
    t.notMatch(said, a.clientSecret, 'never the secret')
    t.same(formFields(formsTo(page.body, `${path}/api-key`)[0]!),
      { _csrf: formFields(page.body)._csrf, enabled: 'false' },
      'the form disables the key, with the page\'s token')

    const done = await dev.submit(page, `${path}/api-key`)
    t.equal(done.statusCode, 303)
    t.equal(done.headers.location, path)
    const after = await dev.follow(done)
    t.equal(noticeOf(after.body),
      'The API key of Keyed App is disabled: every access token of the app is refused from now on.')
    t.match(mainText(after.body), 'API key: Disabled')
    t.match(mainText(after.body), 'Last disabled')
    t.equal(formFields(formsTo(after.body, `${path}/api-key`)[0]!).enabled, 'true', 'now the form enables it')
    const refused = await me(i.accessToken)
    t.equal(refused.statusCode, 401, 'the access token is refused')
    t.match(refused.json(), { error: 'invalid_client', message: "The app's API key is disabled." })
    t.equal(noticeOf((await dev.get(path)).body), undefined, 'the notice is said once')

    const enabled = await dev.follow(await dev.submit(after, `${path}/api-key`))
    t.equal(noticeOf(enabled.body),
      'The API key of Keyed App is enabled: new tokens work; tokens issued before the disable stay refused.')
    t.match(mainText(enabled.body), 'API key: Enabled')
    const still = await me(i.accessToken)
    t.equal(still.statusCode, 401, 'a token issued before the disable stays refused')
    t.equal(still.json().error, 'invalid_client')
  })

t.test("an app's installs: every one, with its tenant, scopes, who installed it, when, last use and status",
  async t => {
    const dev = developer()
    const a = await registerApp(app, dev.session, { name: 'Installed App' })
    const first = await installOf(a, { scopes: ['invoices:read'] })
    const second = await installOf(a, { scopes: ['bills:read', 'customers:read'] })
    const gone = await installOf(a)
    await app.inject({ method: 'DELETE', url: `/installs/${gone.installId}`, headers: bearer(gone.userToken) })
    await installOf(await registerApp(app, developer().session))
    t.equal((await me(second.accessToken)).statusCode, 200)
    const used = await eventually(() => lastUsed(second.installId), { what: 'the use noted' })

    const rows = await app.db.query<{ install_id: string, created_at: Date, uninstalled_at: Date | null }>(
      'select install_id, created_at, uninstalled_at from installs where client_id = $1', [a.clientId])
    const created = (i: Installed) => rows.find(r => r.install_id === i.installId)!.created_at
    const page = await dev.get(`/dashboard/apps/${a.clientId}/installs`)
    isPage(t, page, 200, 'the installs page')
    t.same(tableRows(page.body, 'Installs of Installed App'), [
      [first.orgRefId, first.entityRefId, 'invoices:read', subOf(first.userToken), shown(created(first)), 'never',
        'Active'],
      [second.orgRefId, second.entityRefId, 'bills:read, customers:read', subOf(second.userToken),
        shown(created(second)), shown(used!), 'Active'],
      [gone.orgRefId, gone.entityRefId, 'invoices:read, bills:read, customers:read', subOf(gone.userToken),
        shown(created(gone)), 'never',
        `Uninstalled ${shown(rows.find(r => r.install_id === gone.installId)!.uninstalled_at!)}`]
    ], 'oldest first, the uninstalled one too')
    t.equal(nextLink(page, ''), undefined, 'one page')
  })

/** A list's pages from `path` on, following each "next" link (at most 10 pages): the rows of each. */
async function walkList (t: Test, dev: Browser, path: string, caption: string): Promise<string[][][]> {
  const pages: string[][][] = []
  let url: string | undefined = path
  while (url && pages.length < 10) {
    const page = await dev.get(url)
    isPage(t, page, 200, url)
    pages.push(tableRows(page.body, caption) ?? [])
    url = nextLink(page, path)
  }
  return pages
}

t.test('the installs page goes on a page at a time: 50 each, without a gap or a repeat', async t => {
  const dev = developer()
  const a = await registerApp(app, dev.session, { name: 'Popular App' })
  // 55 installs, three at a time in the same instant (their order is then by id), stamped to the microsecond as the
  // database stamps an install.
  const made = Array.from({ length: 55 }, (_, k) => ({
    id: `ins_${String(k).padStart(3, '0')}_${unique('x')}`,
    entity: `ent_${k}`,
    at: new Date(BASE + Math.floor(k / 3) * 1000)
  }))
  await app.db.query(
    `insert into installs (install_id, client_id, org_ref_id, entity_ref_id, scopes, installed_by, created_at)
     select u.id, $1, 'org_popular', u.entity, array['invoices:read'], 'user_1', u.at + interval '456 microseconds'
       from unnest($2::text[], $3::text[], $4::timestamptz[]) as u(id, entity, at)`,
    [a.clientId, made.map(m => m.id), made.map(m => m.entity), made.map(m => m.at)])
  const path = `/dashboard/apps/${a.clientId}/installs`
  const pages = await walkList(t, dev, path, 'Installs of Popular App')
  t.same(pages.map(p => p.length), [50, 5])
  t.same(pages.flat().map(r => r[1]), made.map(m => m.entity), 'every install once, oldest first')
  const bad = await dev.get(`${path}?cursor=nonsense`)
  isPage(t, bad, 400, 'a cursor that is not one')
  t.match(mainText(bad.body), 'invalid_cursor')
})

t.test('"last used": written when a token is used, then at most once a minute', async t => {
  const dev = developer()
  const a = await registerApp(app, dev.session, { name: 'Used App' })
  const i = await installOf(a)
  t.equal(await lastUsed(i.installId), null, 'never used: the consent and the token exchange are not uses')
  const t0 = clock.now()
  t.equal((await me(i.accessToken)).statusCode, 200)
  await eventually(() => lastUsed(i.installId), { until: d => d?.getTime() === t0, what: 'the first use noted' })
  const page = await dev.get(`/dashboard/apps/${a.clientId}/installs`)
  t.equal(tableRows(page.body, 'Installs of Used App')![0]![5], shown(t0), 'the installs page shows it')

  clock.advance(30_000)
  t.equal((await me(i.accessToken)).statusCode, 200)
  t.same(await lastUsed(i.installId), new Date(t0), '30 s later: left as it was')
  clock.advance(31_000)
  t.equal((await me(i.accessToken)).statusCode, 200)
  await eventually(() => lastUsed(i.installId), {
    until: d => d?.getTime() === t0 + 61_000, what: 'the use 61 s later noted'
  })

  // The store keeps the same bound for uses another instance notes.
  const store = createInstallStore(app.db)
  await store.noteUse(i.installId, new Date(t0 + 61_000 + 59_999))
  t.same(await lastUsed(i.installId), new Date(t0 + 61_000), 'less than a minute after the last: not written')
  await store.noteUse(i.installId, new Date(t0 + 121_000))
  t.same(await lastUsed(i.installId), new Date(t0 + 121_000), 'a minute after: written')
})

t.test("an app's webhooks: every install's subscriptions, failing first, and the last 24 hours as a chart and a table",
  async t => {
    const dev = developer()
    const a = await registerApp(app, dev.session, { name: 'Hooked App' })
    const i1 = await installOf(a)
    const i2 = await installOf(a)
    const other = await installOf(await registerApp(app, developer().session))
    const target = (name: string) => `https://127.0.0.1:9/hooks/${name}`
    const healthy = await subscribe(app, i1, { topics: ['invoice.paid'], target_url: target('healthy') })
    const failing = await subscribe(app, i2, {
      topics: ['invoice.paid', 'bill.created'], target_url: target('failing')
    })
    const deleted = await subscribe(app, i1, { target_url: target('deleted') })
    const tooMany = await subscribe(app, i2, { target_url: target('too-many') })
    const theirs = await subscribe(app, other, { target_url: target('theirs') })
    t.equal((await app.inject({
      method: 'DELETE', url: `${hooksUrl(i1)}/${deleted.id}`, headers: bearer(i1.accessToken)
    })).statusCode, 200)
    await app.db.query(`update webhook_subscriptions set is_active = false, disabled_reason = 'consecutive_failures',
      disabled_at = now(), consecutive_failures = 12 where id = $1`, [tooMany.id])

    const hour = Math.floor(clock.now() / HOUR) * HOUR
    const first = hour - 23 * HOUR
    await recordAttempts(app.db, logSubscription(healthy.id, i1), [
      { at: new Date(first - 1) }, { at: new Date(first - 1) }, { at: new Date(first - 2), succeeded: false },
      { at: new Date(first) }, { at: new Date(first + 1), succeeded: false }
    ])
    await recordAttempts(app.db, logSubscription(healthy.id, i1), [{ at: new Date(hour) }, { at: new Date(hour + 1) }])
    await recordAttempts(app.db, logSubscription(failing.id, i2), [
      { at: new Date(hour + 2), succeeded: false, retry: true, status: 0 },
      { at: new Date(hour + 3), succeeded: false, retry: true, status: 0 }
    ])
    await recordAttempts(app.db, logSubscription(theirs.id, other), [{ at: new Date(hour) }])

    const page = await dev.get(`/dashboard/apps/${a.clientId}/webhooks`)
    isPage(t, page, 200, 'the webhooks page')
    const said = mainText(page.body)
    t.match(said, '3 succeeded, 3 failed, across every install.', 'the attempts of the last 24 hours')

    const svg = /<svg\b([^>]*)>([\s\S]*?)<\/svg>/.exec(page.body)
    t.ok(svg, 'an inline SVG chart')
    t.match(svg![1], /\brole="img"/, 'an image to assistive technology')
    const labelledBy = /aria-labelledby="([^"]+)"/.exec(svg![1]!)![1]!
    t.equal(text(new RegExp(`<title id="${labelledBy}">([^<]*)</title>`).exec(svg![2]!)![1]!),
      'Attempts per hour over the last 24 hours: 3 succeeded, 3 failed', 'its title says the figures')

    const hours = tableRows(page.body, 'Attempts per hour over the last 24 hours (UTC)')!
    const label = (ms: number) => {
      const iso = new Date(ms).toISOString()
      return `${iso.slice(0, 10)} ${iso.slice(11, 13)}:00`
    }
    t.equal(hours.length, 24, 'the same numbers in a table, hour by hour')
    t.same(hours.map(h => h[0]), Array.from({ length: 24 }, (_, k) => label(first + k * HOUR)), 'oldest first, UTC')
    t.same(hours[0], [label(first), '1', '1'], 'the first hour of the window')
    t.same(hours[23], [label(hour), '2', '2'], 'the current hour')
    t.ok(hours.slice(1, 23).every(h => h[1] === '0' && h[2] === '0'), 'nothing in the others')

    const subs = tableRows(page.body, 'Webhook subscriptions of Hooked App')!
    t.same(subs.map(s => s[0]), [failing.id, deleted.id, tooMany.id, healthy.id].map(id => `${id} attempts log`),
      "failing first, then disabled, then healthy; not another app's")
    const [f, d, m, h] = subs as [string[], string[], string[], string[]]
    t.same(f.slice(1), [`${i2.orgRefId} / ${i2.entityRefId}`, 'invoice.paid, bill.created', target('failing'),
      'Failing', '2', `${shown(hour + 3)}, HTTP 0 (no answer)`])
    t.same(d.slice(4, 7), ['Disabled deleted by the app (deleted)', '0', 'none yet'])
    t.same(m.slice(4, 6), ['Disabled disabled after failing for too long (consecutive_failures)', '12'])
    t.same(h.slice(1), [`${i1.orgRefId} / ${i1.entityRefId}`, 'invoice.paid', target('healthy'), 'Active', '0',
      `${shown(hour + 1)}, HTTP 200`])
    t.match(page.body, `href="/dashboard/webhooks/${failing.id}"`, 'each links to its log')
  })

t.test('the webhooks page goes on a page at a time: 50 each, failing, disabled, healthy, without a gap or a repeat',
  async t => {
    const dev = developer()
    const a = await registerApp(app, dev.session, { name: 'Busy App' })
    const i = await installOf(a)
    // 60 subscriptions made as the database stamps them (to the microsecond), a failing, a disabled and a healthy
    // one in turn; some in the same instant (their order is then by id).
    const made = Array.from({ length: 60 }, (_, k) => ({
      id: `whs_${String(k).padStart(3, '0')}_${unique('x')}`,
      state: (['failing', 'disabled', 'healthy'] as const)[k % 3]!,
      at: new Date(BASE + Math.floor(k / 4) * 1000)
    }))
    await app.db.query(
      `insert into webhook_subscriptions (id, install_id, org_ref_id, entity_ref_id, topics, target_url,
                                         secret_ciphertext, is_active, disabled_reason, consecutive_failures,
                                         created_at)
       select u.id, $1, $2, $3, array['invoice.paid'], 'https://127.0.0.1:9/hooks', 'ciphertext',
              u.state <> 'disabled', case when u.state = 'disabled' then 'gone' end,
              case when u.state = 'failing' then 1 else 0 end, u.at + interval '789 microseconds'
         from unnest($4::text[], $5::text[], $6::timestamptz[]) as u(id, state, at)`,
      [i.installId, i.orgRefId, i.entityRefId, made.map(m => m.id), made.map(m => m.state), made.map(m => m.at)])
    const pages = await walkList(t, dev, `/dashboard/apps/${a.clientId}/webhooks`, 'Webhook subscriptions of Busy App')
    t.same(pages.map(p => p.length), [50, 10])
    const order = ['failing', 'disabled', 'healthy'].flatMap(state => made.filter(m => m.state === state))
    t.same(pages.flat().map(r => r[0]), order.map(m => `${m.id} attempts log`),
      'every subscription once: failing, then disabled, then healthy, each oldest first')
  })

t.test("a subscription's attempts log: its facts, each attempt's row, the actions' forms", async t => {
  const { dev, i, sid, sub, receiver } = await subscribed(t, { name: 'Logged App' })
  const seeded = await seedAttempts(app.db, sub, [
    { at: at(0) },
    { at: at(60), status: 500 },
    { at: at(120), status: 0, pending: true, topic: 'bill.created' }
  ])
  const page = await dev.get(subscriptionPath(sid))
  isPage(t, page, 200, 'the log')
  const said = mainText(page.body)
  for (const fact of ['State Active', `Tenant ${i.orgRefId} / ${i.entityRefId}`, `Target ${receiver.url}`,
    'Topics invoice.paid, bill.created', 'Consecutive failures 0']) {
    t.match(said, fact, fact)
  }
  t.match(said, 'Apps / Logged App / Webhooks', 'where it belongs')
  const [pending, failed, ok] = seeded.slice().reverse() as [Seeded, Seeded, Seeded]
  t.same(tableRows(page.body, 'Attempts, newest first'), [
    [`${shown(pending.at)}: attempt 1 of ${pending.eventId}`, pending.eventId, 'bill.created', '1', '0 (no answer)',
      '12 ms', 'Retrying', shown(pending.nextAttemptAt!), `Resend delivery ${pending.deliveryId}`],
    [`${shown(failed.at)}: attempt 1 of ${failed.eventId}`, failed.eventId, 'invoice.paid', '1', '500', '12 ms',
      'Failed', '', `Resend delivery ${failed.deliveryId}`],
    [`${shown(ok.at)}: attempt 1 of ${ok.eventId}`, ok.eventId, 'invoice.paid', '1', '200', '12 ms', 'Succeeded', '',
      '']
  ], 'newest first: time, event, topic, attempt, HTTP status, duration, outcome, next retry; Resend unless succeeded')
  t.match(page.body, `href="/dashboard/webhooks/${sid}/deliveries/${ok.deliveryId}"`, 'each row links to its delivery')
  for (const action of ['replay', 'test', 'rotate-secret']) {
    t.equal(formsTo(page.body, `${subscriptionPath(sid)}/${action}`).length, 1, `the ${action} form`)
  }
  const recover = formFields(formsTo(page.body, `${subscriptionPath(sid)}/replay`)[0]!)
  t.equal(recover.since, new Date(clock.now() - 24 * HOUR).toISOString().slice(0, 19), 'Recover: since a day ago')
  t.same([recover.until, recover.status], ['', 'failed'])
  t.equal(nextLink(page, ''), undefined, 'one page')
  t.notMatch(page.body, 'Searched back to')
  t.notMatch(page.body, /whsec_/, 'never the signing secret')
})

t.test('the log filters: status, topic, since, until and event id, alone and together; a bad one is a 400 page',
  async t => {
    const { dev, sid, sub } = await subscribed(t)
    const seeded = newestFirst(await seedAttempts(app.db, sub, Array.from({ length: 30 }, (_, k) => ({
      at: at(k * 60),
      topic: k % 3 === 0 ? 'bill.created' : 'invoice.paid',
      status: k % 5 === 0 ? 502 : 200,
      pending: k % 10 === 0
    }))))
    const path = subscriptionPath(sid)
    const check = async (query: Record<string, string>, keep: (r: Seeded) => boolean, what: string) => {
      const page = await dev.get(`${path}?${new URLSearchParams(query)}`)
      isPage(t, page, 200, what)
      t.same(loggedEvents(page), seeded.filter(keep).map(r => r.eventId), what)
      return page
    }
    await check({}, () => true, 'no filter')
    await check({ status: 'succeeded' }, r => r.outcome === 'succeeded', 'succeeded')
    await check({ status: 'failed' }, r => r.outcome === 'failed', 'failed')
    await check({ status: 'pending' }, r => r.outcome === 'pending', 'pending (retrying)')
    await check({ topic: 'bill.created' }, r => r.topic === 'bill.created', 'topic')
    await check({ since: '2026-06-01T12:10:00Z' }, r => r.at >= at(600), 'since, ISO 8601')
    await check({ since: '2026-06-01T12:10' }, r => r.at >= at(600), 'since as a datetime-local field sends it: UTC')
    await check({ since: '2026-06-01T14:10:00+02:00' }, r => r.at >= at(600), 'since with an offset')
    await check({ until: '2026-06-01T12:10:00' }, r => r.at < at(600), 'until: before it')
    await check({ event_id: seeded[7]!.eventId }, r => r.eventId === seeded[7]!.eventId, 'event id')
    await check({ event_id: 'evt_none' }, () => false, 'an unknown event id')
    const all = await check({
      status: 'failed', topic: 'invoice.paid', since: '2026-06-01T12:03', until: '2026-06-01T12:26'
    }, r => r.outcome === 'failed' && r.topic === 'invoice.paid' && r.at >= at(180) && r.at < at(1560), 'together')
    t.ok(loggedEvents(all).length > 0, 'something matches them all')
    t.same(formFields(formsTo(all.body, path)[0]!), {
      status: 'failed', topic: 'invoice.paid', since: '2026-06-01T12:03', until: '2026-06-01T12:26', event_id: ''
    }, 'the filter form shows them back')
    const none = await check({ topic: 'customer.updated' }, () => false, 'nothing matches')
    t.match(mainText(none.body), 'No attempt matches.')
    t.match(none.body, `<a href="${path}">Clear filters</a>`)

    const refused = async (query: Record<string, string>, fields: string[], what: string) => {
      const page = await dev.get(`${path}?${new URLSearchParams(query)}`)
      isPage(t, page, 400, what)
      const said = mainText(page.body)
      t.match(said, 'The filters of the attempts log are not valid.', what)
      t.match(said, 'validation_error')
      t.same([...said.matchAll(/\b(status|topic|since|until) must\b/g)].map(m => m[1]), fields, `${what}: named`)
    }
    await refused({ status: 'bogus' }, ['status'], 'an unknown status')
    await refused({ status: 'cancelled' }, ['status'], 'a delivery state that is not a filter')
    await refused({ topic: 'invoice.nope' }, ['topic'], 'a topic outside the catalog')
    await refused({ since: 'yesterday' }, ['since'], 'since that is not a time')
    await refused({ until: '2026-02-30T10:00' }, ['until'], 'a day that does not exist')
    await refused({ since: '2026-06-01T13:00', until: '2026-06-01T12:00' }, ['since'], 'since after until')
    await refused({ since: '2026-06-01T12:00', until: '2026-06-01T12:00' }, ['since'], 'since equal to until')
    await refused({ status: 'x', topic: 'y', since: 'z', until: 'w' }, ['since', 'until', 'status', 'topic'],
      'every bad filter at once')
    const badCursor = await dev.get(`${path}?cursor=nonsense`)
    isPage(t, badCursor, 400, 'a cursor that is not one')
  })

t.test('the log pages by keyset: 50 a page, newest first, without a gap or a repeat, filters kept', async t => {
  const { dev, sid, sub } = await subscribed(t)
  // 120 attempts, three at a time in the same instant (their order is then by id).
  const seeded = newestFirst(await seedAttempts(app.db, sub, Array.from({ length: 120 }, (_, k) => ({
    at: at(-Math.floor(k / 3)), status: k % 2 === 0 ? 200 : 503
  }))))
  const path = subscriptionPath(sid)
  const walk = async (start: string) => {
    const pages: string[][] = []
    let url: string | undefined = start
    while (url) {
      const page = await dev.get(url)
      isPage(t, page, 200, url)
      pages.push(loggedEvents(page))
      url = nextLink(page, path)
    }
    return pages
  }
  const pages = await walk(path)
  t.same(pages.map(p => p.length), [50, 50, 20])
  t.same(pages.flat(), seeded.map(r => r.eventId), 'every attempt once, in order')
  const failed = await walk(`${path}?status=failed`)
  t.same(failed.map(p => p.length), [50, 10], 'the next link keeps the filter')
  t.same(failed.flat(), seeded.filter(r => r.status === 503).map(r => r.eventId))

  // A cursor is the subscription's own: another log does not read it.
  const page = await dev.get(path)
  const cursor = new URLSearchParams(decode(/<a href="\?([^"]*)" rel="next">/.exec(page.body)![1]!)).get('cursor')!
  const elsewhere = await subscribe(app, (await installOf(await registerApp(app, dev.session))), {
    target_url: 'https://127.0.0.1:9/hooks'
  })
  isPage(t, await dev.get(`${subscriptionPath(elsewhere.id)}?cursor=${encodeURIComponent(cursor)}`), 400,
    "another subscription's cursor")
})

t.test('a filter matching nothing in over 1000 attempts: an empty page that says how far it searched, and goes on',
  async t => {
    const { dev, sid, sub } = await subscribed(t)
    // 1100 attempts that succeeded, a second apart, and one failure before them all.
    const seeded = newestFirst(await seedAttempts(app.db, sub, [
      ...Array.from({ length: 1100 }, (_, k) => ({ at: at(-k) })),
      { at: at(-2000), status: 500 }
    ]))
    const path = subscriptionPath(sid)
    const first = await dev.get(`${path}?status=failed`)
    isPage(t, first, 200, 'the first page')
    t.same(loggedEvents(first), [], 'no row')
    const said = mainText(first.body)
    t.match(said, 'No attempt matches in this part of the log.')
    t.match(said, `Searched back to ${shown(seeded[999]!.at)}; older attempts were not searched yet.`,
      'searched the newest 1000')
    t.match(said, 'Search older attempts')
    const more = nextLink(first, path)!
    t.match(more, /status=failed/, 'the link keeps the filter')
    const second = await dev.get(more)
    isPage(t, second, 200, 'the search goes on')
    t.same(loggedEvents(second), [seeded[1100]!.eventId], 'and finds the failure')
    t.notMatch(mainText(second.body), 'Searched back to')
    t.equal(nextLink(second, path), undefined, 'the end of the log')
  })

t.test("a delivery's page: what was sent (signatures masked), the body, and the receiver's answer as text",
  async t => {
    const { dev, i, sid, receiver } = await subscribed(t, {
      respond: (_r, res) => {
        res.setHeader('x-receiver-note', '<i>noted</i>')
        res.writeHead(202, { 'content-type': 'text/html' })
        res.end('<b>bold</b>')
      }
    })
    const event = await publish(app, i)
    const [received] = await receiver.waitFor(1)
    const [delivery] = await eventually(() => deliveries(sid), {
      until: d => d.length === 1 && d[0]!.status === 'succeeded', what: 'the delivery recorded'
    })
    const path = `${subscriptionPath(sid)}/deliveries/${delivery!.id}`
    const log = await dev.get(subscriptionPath(sid))
    t.match(log.body, `href="${path}"`, 'the log links to it')
    const page = await dev.get(path)
    isPage(t, page, 200, 'the delivery page')
    const said = mainText(page.body)
    t.match(said, `Delivery ${delivery!.id}`)
    t.match(said, `Event ${event.id} (invoice.paid)`)
    t.match(said, 'Status succeeded')
    t.match(said, 'Attempt 1: Succeeded')
    t.match(said, 'HTTP 202')

    const signature = String(received!.headers['webhook-signature'])
    const serviceSignature = String(received!.headers['x-service-signature'])
    t.match(signature, /^v1,\S{20,}$/)
    t.notMatch(page.body, signature.slice(3), 'the signature is not shown')
    t.notMatch(page.body, serviceSignature, 'nor the service signature')
    t.match(page.body, 'webhook-signature: v1,••••••••', 'masked, its scheme kept')
    t.match(page.body, 'x-service-signature: ••••••••')
    t.match(page.body, `webhook-id: ${event.id}`, 'the other headers as sent')
    t.match(page.body, 'x-service-topic: invoice.paid')
    t.match(page.body, `&quot;id&quot;: &quot;${event.id}&quot;`, 'the body, as JSON')
    t.equal(JSON.parse(received!.body.toString()).id, event.id)

    t.match(page.body, '&lt;b&gt;bold&lt;/b&gt;', "the receiver's answer as text")
    t.notMatch(page.body, '<b>bold</b>', 'never as markup')
    t.match(page.body, 'x-receiver-note: &lt;i&gt;noted&lt;/i&gt;')
    t.notMatch(page.body, '<i>noted</i>')
    t.match(page.body, `action="${path}/retry"`, 'an ended delivery can be sent again')

    const unknown = await dev.get(`${subscriptionPath(sid)}/deliveries/dlv_unknown`)
    isPage(t, unknown, 404, 'an unknown delivery')
    t.match(mainText(unknown.body), 'No such delivery for this subscription.')
  })

t.test('Resend: the delivery is pending again, goes out, and the page it came from says so', async t => {
  const held: Array<() => void> = []
  const { dev, sid, sub, receiver } = await subscribed(t, {
    respond: (_r, res) => { held.push(() => res.end('ok')) }
  })
  t.teardown(() => { for (const release of held) release() })
  const [failed] = await seedAttempts(app.db, sub, [{ at: at(0), status: 500 }])
  await seedAttempts(app.db, sub, [{ at: at(60) }])
  const query = 'status=failed'
  const page = await dev.get(`${subscriptionPath(sid)}?${query}`)
  const action = `${subscriptionPath(sid)}/deliveries/${failed!.deliveryId}/retry`
  const form = formFields(formsTo(page.body, action)[0]!)
  t.equal(form.back, query, 'the form comes back to the page it is on')

  const done = await dev.submit(page, action)
  t.equal(done.statusCode, 303)
  t.equal(done.headers.location, `${subscriptionPath(sid)}?${query}`)
  const back = await dev.follow(done)
  t.equal(noticeOf(back.body), `Delivery ${failed!.deliveryId} is due again and goes out within seconds.`)

  const [request] = await receiver.waitFor(1)
  t.equal(request!.headers['x-service-delivery-attempt'], '2', 'its second attempt')
  t.match((await deliveries(sid)).find(d => d.id === failed!.deliveryId), { status: 'pending', attempts: 1 },
    'pending while its attempt is out')
  held.shift()!()
  await eventually(async () => (await deliveries(sid)).find(d => d.id === failed!.deliveryId), {
    until: d => d?.status === 'succeeded' && d.attempts === 2, what: 'the second attempt recorded'
  })
  const log = await dev.get(`${subscriptionPath(sid)}?event_id=${failed!.eventId}`)
  t.same((tableRows(log.body, 'Attempts, newest first') ?? []).map(r => [r[3], r[6]]),
    [['2', 'Succeeded'], ['1', 'Failed']], 'the log shows both attempts')

  // Only the log's own query comes back: never another place.
  const elsewhere = await dev.post(action, { _csrf: form._csrf!, back: 'https://evil.example/?status=failed' })
  t.equal(elsewhere.headers.location, subscriptionPath(sid))
  t.equal((await receiver.waitFor(2))[1]!.headers['x-service-delivery-attempt'], '3', 'and it goes out again')
  held.shift()!()
})

t.test('Recover: new deliveries of the failed ones, the notice says how many, once per form', async t => {
  const { dev, sid, sub, receiver } = await subscribed(t)
  const now = clock.now()
  const seeded = await seedAttempts(app.db, sub, [
    { at: new Date(now - 3 * HOUR), status: 500 },
    { at: new Date(now - 2 * HOUR), status: 0 },
    { at: new Date(now - HOUR), status: 410 },
    { at: new Date(now - HOUR / 2) },
    { at: new Date(now - 30 * HOUR), status: 500 }
  ])
  const path = subscriptionPath(sid)
  const count = async (eventId: string) => (await deliveries(sid)).filter(d => d.event_id === eventId).length
  const counts = () => Promise.all(seeded.map(s => count(s.eventId)))
  const page = await dev.get(path)
  const done = await dev.submit(page, `${path}/replay`)
  t.equal(done.statusCode, 303)
  t.equal(done.headers.location, path)
  const truncated =
    '2 deliveries are queued again. More matched than one recovery sends: recover again to send the rest.'
  t.equal(noticeOf((await dev.follow(done)).body), truncated,
    'the oldest failed ones of the last day, as many as one recovery sends (WEBHOOK_REPLAY_LIMIT)')
  t.same(await counts(), [2, 2, 1, 1, 1], 'a new delivery each')

  const twice = await dev.submit(page, `${path}/replay`)
  t.equal(noticeOf((await dev.follow(twice)).body), truncated, 'the same form again: its answer')
  t.same(await counts(), [2, 2, 1, 1, 1], 'and nothing more')

  const rest = await dev.submit(await dev.get(path), `${path}/replay`)
  t.equal(noticeOf((await dev.follow(rest)).body), '1 delivery is queued again.', 'recovered again: the rest')
  t.same(await counts(), [2, 2, 2, 1, 1])
  await receiver.waitFor(3)
  await eventually(() => deliveries(sid), {
    until: d => d.every(x => x.status !== 'pending'), what: 'the recovered deliveries sent'
  })

  const fresh = await dev.get(path)
  t.equal(noticeOf((await dev.follow(await dev.submit(fresh, `${path}/replay`))).body),
    '0 deliveries are queued again.', 'their latest deliveries succeeded')
  const one = await dev.submit(await dev.get(path), `${path}/replay`, {
    status: 'all',
    since: new Date(now - HOUR / 2).toISOString(),
    until: new Date(now - HOUR / 2 + 1000).toISOString().slice(0, 19)
  })
  t.equal(noticeOf((await dev.follow(one)).body), '1 delivery is queued again.', 'every delivered one of a range')
  t.equal(await count(seeded[3]!.eventId), 2)

  const before = await eventually(() => deliveries(sid), {
    until: d => d.every(x => x.status !== 'pending'), what: 'the recovered delivery sent'
  })
  const refused = async (change: Record<string, string>, field: string, message: string) => {
    const res = await dev.submit(await dev.get(path), `${path}/replay`, change)
    isPage(t, res, 400, `${field} ${message}`)
    t.match(mainText(res.body), `${field} ${message}`)
  }
  await refused({ since: '' }, 'since', 'is required')
  await refused({ since: 'last week' }, 'since', 'must be a date and time')
  await refused({ until: '2026-13-01T00:00' }, 'until', 'must be a date and time')
  await refused({ status: 'pending' }, 'status', 'must be failed or all')
  await refused({ since: new Date(now).toISOString(), until: new Date(now - HOUR).toISOString() }, 'since',
    'must be before until')
  t.same(await deliveries(sid), before, 'nothing recovered')
})

t.test('Send test event: a webhook.test delivery to this subscription, in its log', async t => {
  const { dev, sid, receiver } = await subscribed(t)
  const path = subscriptionPath(sid)
  const done = await dev.submit(await dev.get(path), `${path}/test`)
  t.equal(done.statusCode, 303)
  const notice = noticeOf((await dev.follow(done)).body)!
  const eventId = /^Test event (evt_\S+) is queued; its attempt shows in the log within seconds\.$/.exec(notice)?.[1]
  t.ok(eventId, notice)
  const [request] = await receiver.waitFor(1)
  t.equal(request!.headers['x-service-topic'], 'webhook.test')
  t.equal(request!.headers['webhook-id'], eventId)
  await eventually(() => deliveries(sid), { until: d => d[0]?.status === 'succeeded', what: 'the test delivered' })
  const log = await dev.get(path)
  t.same((tableRows(log.body, 'Attempts, newest first') ?? []).map(r => [r[1], r[2], r[6]]),
    [[eventId, 'webhook.test', 'Succeeded']])
})

t.test('Rotate signing secret: the new secret shown once, not stored, and deliveries signed with it', async t => {
  const { dev, sid, receiver } = await subscribed(t)
  const path = subscriptionPath(sid)
  const res = await dev.submit(await dev.get(path), `${path}/rotate-secret`)
  isPage(t, res, 200, 'the new secret')
  const secrets = res.body.match(/whsec_[A-Za-z0-9+/]{43}=/g) ?? []
  t.equal(secrets.length, 1, 'shown once')
  const secret = secrets[0]!
  t.match(mainText(res.body), 'It is shown only this once')
  t.match(mainText(res.body), 'The previous secret keeps signing beside it until')
  t.notMatch((await dev.get(path)).body, secret, 'not on the page again')

  await dev.submit(await dev.get(path), `${path}/test`)
  const [request] = await receiver.waitFor(1)
  const id = String(request!.headers['webhook-id'])
  const timestamp = Number(request!.headers['webhook-timestamp'])
  const expected = standardSignature([{ secret, scheme: 'standard' }], id, timestamp, request!.body)
  const signatures = String(request!.headers['webhook-signature']).split(' ')
  t.ok(signatures.includes(expected), 'signed with the new secret')
  t.equal(signatures.length, 2, 'and with the previous one, during the overlap')
  const [delivery] = await eventually(() => deliveries(sid), {
    until: d => d[0]?.status === 'succeeded', what: 'the test delivered'
  })
  const detail = await dev.get(`${path}/deliveries/${delivery!.id}`)
  t.match(detail.body, 'webhook-signature: v1,•••••••• v1,••••••••', 'both masked on the delivery page')
  for (const signature of signatures) t.notMatch(detail.body, signature.slice(3))
  t.notMatch(detail.body, secret)
})

t.test("another developer's app, subscription or delivery is the same 404 as an unknown one, and nothing changes",
  async t => {
    const mine = await subscribed(t)
    const theirs = await subscribed(t)
    const [myDelivery] = await seedAttempts(app.db, mine.sub, [{ at: at(0), status: 500 }])
    const [theirDelivery] = await seedAttempts(app.db, theirs.sub, [{ at: at(0), status: 500 }])
    const browser = mine.dev
    const pages: Array<[string, string, string]> = [
      [`/dashboard/apps/${theirs.a.clientId}`, '/dashboard/apps/app_unknown', 'app'],
      [`/dashboard/apps/${theirs.a.clientId}/installs`, '/dashboard/apps/app_unknown/installs', 'installs'],
      [`/dashboard/apps/${theirs.a.clientId}/webhooks`, '/dashboard/apps/app_unknown/webhooks', 'webhooks'],
      [subscriptionPath(theirs.sid), subscriptionPath('whs_unknown'), 'log'],
      [`${subscriptionPath(theirs.sid)}/deliveries/${theirDelivery!.deliveryId}`,
        `${subscriptionPath('whs_unknown')}/deliveries/${theirDelivery!.deliveryId}`, 'delivery'],
      [`${subscriptionPath(mine.sid)}/deliveries/${theirDelivery!.deliveryId}`,
        `${subscriptionPath(mine.sid)}/deliveries/dlv_unknown`, 'their delivery through my subscription']
    ]
    for (const [theirUrl, unknownUrl, what] of pages) {
      const res = await browser.get(theirUrl)
      isPage(t, res, 404, what)
      t.match(mainText(res.body), 'Page not found')
      t.equal(withoutTokens(res.body), withoutTokens((await browser.get(unknownUrl)).body), `${what}: as an unknown id`)
    }

    const state = async () => ({
      keys: await app.db.query('select client_id, api_key_enabled, key_disabled_at from apps where client_id = any($1)',
        [[theirs.a.clientId, mine.a.clientId]]),
      subscriptions: await app.db.query(`select id, secret_ciphertext, previous_secret_ciphertext, is_active
        from webhook_subscriptions where id = any($1) order by id`, [[theirs.sid, mine.sid]]),
      deliveries: await app.db.query(`select id, status, attempts, next_attempt_at from webhook_deliveries
        where subscription_id = any($1) order by id`, [[theirs.sid, mine.sid]])
    })
    const before = await state()
    const token = await browser.token()
    const since = new Date(clock.now() - 365 * 24 * HOUR).toISOString()
    const actions: Array<[string, string, Record<string, string>, string]> = [
      [`/dashboard/apps/${theirs.a.clientId}/api-key`, '/dashboard/apps/app_unknown/api-key', { enabled: 'false' },
        'the key'],
      [`${subscriptionPath(theirs.sid)}/deliveries/${theirDelivery!.deliveryId}/retry`,
        `${subscriptionPath('whs_unknown')}/deliveries/${theirDelivery!.deliveryId}/retry`, {}, 'Resend'],
      [`${subscriptionPath(mine.sid)}/deliveries/${theirDelivery!.deliveryId}/retry`,
        `${subscriptionPath(mine.sid)}/deliveries/dlv_unknown/retry`, {}, 'Resend of theirs through mine'],
      [`${subscriptionPath(theirs.sid)}/deliveries/${myDelivery!.deliveryId}/retry`,
        `${subscriptionPath('whs_unknown')}/deliveries/${myDelivery!.deliveryId}/retry`, {},
        'Resend of mine through theirs'],
      [`${subscriptionPath(theirs.sid)}/replay`, `${subscriptionPath('whs_unknown')}/replay`,
        { since, status: 'all' }, 'Recover'],
      [`${subscriptionPath(theirs.sid)}/test`, `${subscriptionPath('whs_unknown')}/test`, {}, 'Send test event'],
      [`${subscriptionPath(theirs.sid)}/rotate-secret`, `${subscriptionPath('whs_unknown')}/rotate-secret`, {},
        'Rotate']
    ]
    for (const [theirUrl, unknownUrl, fields, what] of actions) {
      const res = await browser.post(theirUrl, { _csrf: token, ...fields })
      isPage(t, res, 404, what)
      t.notOk(res.cookies.some(c => c.name === 'notice'), `${what}: no notice`)
      const unknown = await browser.post(unknownUrl, { _csrf: token, ...fields })
      t.equal(withoutTokens(res.body), withoutTokens(unknown.body), `${what}: as an unknown id`)
    }
    t.same(await state(), before, 'nothing changed')
    t.equal(theirs.receiver.received.length + mine.receiver.received.length, 0, 'nothing was sent')
  })

t.test('an action needs a session, a same-origin request and the form token of that session; else 403 and nothing',
  async t => {
    const { dev, a, sid, sub, receiver } = await subscribed(t)
    const [failed] = await seedAttempts(app.db, sub, [{ at: new Date(clock.now() - HOUR), status: 500 }])
    const other = developer()
    const otherToken = await other.token()
    const state = async () => ({
      app: await app.db.query('select api_key_enabled, key_disabled_at from apps where client_id = $1', [a.clientId]),
      subscription: await app.db.query(
        'select secret_ciphertext, previous_secret_ciphertext from webhook_subscriptions where id = $1', [sid]),
      deliveries: await app.db.query(
        'select id, status, attempts, next_attempt_at from webhook_deliveries where subscription_id = $1 order by id',
        [sid])
    })
    const before = await state()
    const page = await dev.get(subscriptionPath(sid))
    const token = formFields(page.body)._csrf!
    const since = new Date(clock.now() - 24 * HOUR).toISOString()
    const actions: Array<[string, Record<string, string>]> = [
      [`/dashboard/apps/${a.clientId}/api-key`, { enabled: 'false' }],
      [`${subscriptionPath(sid)}/replay`, { since, status: 'failed' }],
      [`${subscriptionPath(sid)}/deliveries/${failed!.deliveryId}/retry`, {}],
      [`${subscriptionPath(sid)}/test`, {}],
      [`${subscriptionPath(sid)}/rotate-secret`, {}]
    ]
    const refused = (res: Response, what: string) => {
      isPage(t, res, 403, what)
      t.match(mainText(res.body), 'This action was refused', what)
      t.match(mainText(res.body), 'Nothing was changed.', what)
    }
    for (const [url, fields] of actions) {
      refused(await dev.post(url, fields), `${url} without a token`)
      refused(await dev.post(url, { ...fields, _csrf: 'forged' }), `${url} with a forged token`)
      refused(await dev.post(url, { ...fields, _csrf: otherToken }), `${url} with another session's token`)
      // The same browser (its form-token cookie), signed in as someone else: the page's token is not theirs.
      const switched = new Browser(app, other.session)
      Object.assign(switched.cookies, { ...dev.cookies, session: other.session })
      refused(await switched.post(url, { ...fields, _csrf: token }), `${url}: the token of another user's session`)
      refused(await dev.post(url, { ...fields, _csrf: token }, { origin: 'https://evil.example' }),
        `${url} from another origin`)
      refused(await dev.post(url, { ...fields, _csrf: token }, { 'sec-fetch-site': 'cross-site' }),
        `${url} cross-site`)
      refused(await dev.post(url, { ...fields, _csrf: token }, { 'sec-fetch-site': 'same-site' }),
        `${url} from a sibling site`)
      const anonymous = await app.inject({
        method: 'POST',
        url,
        headers: { 'content-type': 'application/x-www-form-urlencoded', 'sec-fetch-site': 'same-origin' },
        cookies: { _csrf: dev.cookies._csrf! },
        payload: new URLSearchParams({ ...fields, _csrf: token }).toString()
      })
      refused(anonymous, `${url} without a session`)
      t.match(mainText(anonymous.body), 'Sign in to the dashboard first.')
    }
    t.same(await state(), before, 'nothing changed')
    t.equal(receiver.received.length, 0, 'nothing was sent')

    // The same forms with the page's token go through (the recovery, the resend and the test event each send one
    // delivery; the key's last), whichever way the browser says they come from this service's pages.
    const sameOrigin: Array<Record<string, string>> = [
      { 'sec-fetch-site': 'same-origin' }, { 'sec-fetch-site': 'none' }, { origin: 'http://gateway.test' }, {}
    ]
    for (const [k, [url, fields]] of actions.slice(1).entries()) {
      const res = await dev.post(url, { ...fields, _csrf: token }, sameOrigin[k]!)
      t.equal(res.statusCode, url.endsWith('/rotate-secret') ? 200 : 303, `${url} ${JSON.stringify(sameOrigin[k])}`)
    }
    await receiver.waitFor(3)
    t.equal((await dev.post(actions[0]![0], { ...actions[0]![1], _csrf: token }, {})).statusCode, 303,
      'a browser that sends neither Sec-Fetch-Site nor Origin')
  })

t.test('without a session every page goes to the sign-in page', async t => {
  const { a, sid, sub } = await subscribed(t)
  const [d] = await seedAttempts(app.db, sub, [{ at: at(0) }])
  for (const url of ['/dashboard', '/dashboard/apps', `/dashboard/apps/${a.clientId}`,
    `/dashboard/apps/${a.clientId}/installs`, `/dashboard/apps/${a.clientId}/webhooks`, subscriptionPath(sid),
    `${subscriptionPath(sid)}/deliveries/${d!.deliveryId}`, '/dashboard/event-types']) {
    const res = await app.inject({ method: 'GET', url, headers: { accept: 'text/html' } })
    t.equal(res.statusCode, 303, url)
    t.equal(res.headers.location, '/dashboard/sign-in', url)
  }
})

t.test("what an app's developer or a receiver wrote is shown as text", async t => {
  const name = '<script>alert(1)</script>'
  const { dev, a, sid, sub } = await subscribed(t, { name })
  await seedAttempts(app.db, sub, [{ at: at(0), status: 500, responseBody: '<img src=x onerror=alert(2)>' }])
  const evil = '"><script>alert(3)</script>'
  const urls = ['/dashboard/apps', `/dashboard/apps/${a.clientId}`, `/dashboard/apps/${a.clientId}/installs`,
    `/dashboard/apps/${a.clientId}/webhooks`, subscriptionPath(sid),
    `${subscriptionPath(sid)}?event_id=${encodeURIComponent(evil)}`]
  for (const url of urls) {
    const page = await dev.get(url)
    isPage(t, page, 200, url)
    t.notMatch(page.body, /<script|<img/i, `${url}: no markup of theirs`)
  }
  const apps = await dev.get('/dashboard/apps')
  t.match(apps.body, '&lt;script&gt;alert(1)&lt;/script&gt;', 'the name as text')
  t.equal(tableRows(apps.body, 'Your apps')![0]![0], name)
  const filtered = await dev.get(`${subscriptionPath(sid)}?event_id=${encodeURIComponent(evil)}`)
  t.match(filtered.body, 'value="&quot;&gt;&lt;script&gt;alert(3)&lt;/script&gt;"', 'a filter shown back as a value')
  const [delivery] = await deliveries(sid)
  const detail = await dev.get(`${subscriptionPath(sid)}/deliveries/${delivery!.id}`)
  t.match(detail.body, '&lt;img src=x onerror=alert(2)&gt;', "the receiver's answer as text")
  t.notMatch(detail.body, /<img/)

  const disabled = await dev.follow(await dev.submit(await dev.get(`/dashboard/apps/${a.clientId}`),
    `/dashboard/apps/${a.clientId}/api-key`))
  t.equal(noticeOf(disabled.body), `The API key of ${name} is disabled: every access token of the app is refused ` +
    'from now on.', 'the notice names it')
  t.notMatch(disabled.body, /<script/)
})
