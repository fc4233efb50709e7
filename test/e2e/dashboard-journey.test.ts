// The dashboard's whole journey as people do it, in Debian's headless Chromium, against the service running as its
// own process (over real HTTP; on a Postgres database of its own when one is set, else on the embedded one), which
// delivers to a real HTTPS receiver that fails some deliveries:
//
// - a developer signs in with a `dashboard-link` link, finds the failing subscription through the app's Webhooks
//   page, filters its attempts log with the form, resends a failed delivery, recovers the failed ones since a time,
//   opens a delivery, sends a test event, rotates the signing secret (shown once, and it signs what follows) and
//   disables the app's API key, after which the app's token is refused;
// - an organisation user signs in and uninstalls an app on Connections, after which the install's token is refused.
//
// Keyboard only: each page is first walked with Tab (every form's button, and every other control, must be reached),
// each field is filled by typing into it, and each action is a key press (Enter or Space) on the control Tab reached.
// Every page visited passes axe-core's WCAG 2.2 AA rules at 1280 and at 320 px (the event types and sign-in pages,
// and the error page's layout once more, in test/e2e/dashboard.test.ts), the page never scrolls sideways at
// 320 px (tables scroll inside their own box), and nothing is said on the console: no error, no Content-Security-
// Policy violation (only the intended 400 and 404 pages' own status).
import { randomBytes } from 'node:crypto'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t, { type Test } from 'tap'
import { AxeBuilder } from '@axe-core/playwright'
import type { BrowserContext, Page } from 'playwright-core'
import { Webhook } from 'standardwebhooks'
import { browser, freePort, SKIP_WITHOUT_CHROMIUM } from '../support/browser.js'
import {
  command, gatewayClient, startGateway, waitFor, type JourneyInstall
} from '../support/gateway.js'
import { needsPostgres, postgresDatabase, unique } from '../support/helper.js'
import { startReceiver } from '../support/receiver.js'
import { bill, invoice, nth } from '../support/records.js'

const TAGS = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa']
/** Everything a person may reach with Tab on a page of the dashboard. */
const CONTROLS = 'a[href], button, input:not([type=hidden]), select, textarea, summary, [tabindex="0"]'
/** The controls shown (not in a closed `<details>`), as a browser expression. */
const CONTROLS_SHOWN = `[...document.querySelectorAll(${JSON.stringify(CONTROLS)})].filter(e => e.checkVisibility())`
/** Deliveries wait on a machine busy with other tests: generous, and always polled. */
const DELIVERY_WAIT = 90_000

// The service started from scratch, then some forty page loads each checked twice by axe, on a loaded machine.
t.setTimeout(600_000)

/** A UTC instant in whole seconds. */
const wholeSecond = (ms: number): Date => new Date(Math.floor(ms / 1000) * 1000)
const localValue = (d: Date): string => d.toISOString().slice(0, 19)

/** What a person sees and does in one browser context, every step checked on `t`. */
function person (t: Test, context: BrowserContext, page: Page) {
  const problems: string[] = []
  /** Pages answered with an error status on purpose: the console's "Failed to load resource" of those is expected. */
  const errorPages = new Set<string>()
  page.setDefaultTimeout(30_000)
  page.on('pageerror', e => problems.push(`page error: ${e.message}`))
  page.on('console', m => {
    if (m.type() !== 'error' && m.type() !== 'warning') return
    const at = m.location().url
    if (/the server responded with a status of (400|404)/.test(m.text()) && errorPages.has(at)) return
    problems.push(`console ${m.type()}: ${m.text()} (${at})`)
  })

  const path = (): string => new URL(page.url()).pathname
  const text = (selector: string): Promise<string> => page.locator(selector).first().innerText()
  const notice = (): Promise<string> => page.locator('[role=status]').innerText().then(s => s.trim())

  /** The rows of the page's (first) table of attempts or records, each as its cells' text. */
  const rows = (selector = 'main table tbody tr'): Promise<string[][]> =>
    page.evaluate(`[...document.querySelectorAll(${JSON.stringify(selector)})]
      .map(tr => [...tr.children].map(c => c.innerText.replace(/\\s+/g, ' ').trim()))`) as Promise<string[][]>

  /** axe-core with the WCAG 2.2 AA tags at 1280 px and at 320 px; at 320 px the page must not scroll sideways. */
  async function checkAccessible (what: string) {
    for (const width of [1280, 320]) {
      await page.setViewportSize({ width, height: 800 })
      // As the page opens: at the top, nothing focused (a focused skip link covers the header, on purpose).
      await page.evaluate('document.activeElement && document.activeElement.blur && document.activeElement.blur(); ' +
        'window.scrollTo(0, 0)')
      const { violations } = await new AxeBuilder({ page }).withTags(TAGS).analyze()
      t.same(violations.map(v => `${v.id}: ${v.nodes.map(n => `${n.target.join(' ')} (${n.failureSummary})`)
        .join(', ')}`), [],
        `${what} at ${width} px: no axe violation`)
      const scroll = await page.evaluate('document.documentElement.scrollWidth') as number
      t.ok(scroll <= width, `${what} at ${width} px: no horizontal scroll (${scroll})`,
        { wider: scroll > width ? await wider(width) : [] })
    }
    await page.setViewportSize({ width: 1280, height: 900 })
  }

  /** What reaches past `width`: the elements to look at when a page scrolls sideways. */
  function wider (width: number): Promise<string[]> {
    return page.evaluate(`[...document.querySelectorAll('body *')]
      .filter(e => e.getBoundingClientRect().right > ${width} + 0.5)
      .slice(0, 8)
      .map(e => e.tagName.toLowerCase() + (e.className ? '.' + e.className : '') + ' ' +
        Math.round(e.getBoundingClientRect().right))`) as Promise<string[]>
  }

  /**
   * Tab from the top of the page to its end: every control must be reached, every form's button among them. The
   * buttons' names, as a screen reader reads them.
   */
  async function walkWithTab (what: string): Promise<string[]> {
    await page.evaluate(`(() => {
      window.__reached = new Set()
      document.addEventListener('focusin', e => window.__reached.add(e.target))
      document.activeElement && document.activeElement.blur && document.activeElement.blur()
    })()`)
    const total = await page.evaluate(`${CONTROLS_SHOWN}.length`) as number
    // A datetime field takes a Tab for each of its parts (month … AM/PM and the picker): eight in all.
    const extra = await page.locator('input[type=datetime-local]').count() * 7
    for (let i = 0; i < total + extra + 1; i++) await page.keyboard.press('Tab')
    const missed = await page.evaluate(`${CONTROLS_SHOWN}
      .filter(e => !window.__reached.has(e))
      .map(e => e.tagName.toLowerCase() + ': ' +
        (e.textContent || e.getAttribute('name') || '').replace(/\\s+/g, ' ').trim())`)
    t.same(missed, [], `${what}: Tab reaches every control`)
    const buttons = await page.evaluate(`[...document.querySelectorAll('form button')]
      .filter(b => window.__reached.has(b))
      .map(b => b.textContent.replace(/\\s+/g, ' ').trim())`) as string[]
    t.ok(buttons.length > 0, `${what}: Tab reaches every form's button (${buttons.length})`)
    return buttons
  }

  /** Presses Tab until the focused element matches `selector` (and its text starts with `name`). */
  async function tabTo (selector: string, name?: string, max = 400): Promise<void> {
    const probe = `(() => {
      const e = document.activeElement
      if (!e || !e.matches(${JSON.stringify(selector)})) return false
      const name = ${JSON.stringify(name ?? null)}
      return name === null || e.textContent.replace(/\\s+/g, ' ').trim().startsWith(name)
    })()`
    for (let i = 0; i < max; i++) {
      await page.keyboard.press('Tab')
      if (await page.evaluate(probe)) return
    }
    throw new Error(`${selector} "${name ?? ''}" not reached by Tab on ${page.url()}`)
  }

  /** Presses a key on the focused control and waits for the page it leads to. */
  async function pressAndFollow (key: 'Enter' | 'Space' = 'Enter') {
    await Promise.all([page.waitForNavigation(), page.keyboard.press(key)])
  }

  /** Tab to a link or button, then Enter (or Space) on it. */
  async function activate (selector: string, name: string, key: 'Enter' | 'Space' = 'Enter') {
    await tabTo(selector, name)
    await pressAndFollow(key)
  }

  /** Tab to a select and choose an option by typing its label's start, as a keyboard user does. */
  async function choose (selector: string, typed: string, value: string) {
    await tabTo(selector)
    await page.keyboard.type(typed)
    t.equal(await page.locator(selector).inputValue(), value, `${selector}: "${value}" chosen by typing "${typed}"`)
  }

  /** Tab to a datetime field and type an instant into its parts (month, day, year; hour, minute, second, AM/PM). */
  async function typeInstant (selector: string, d: Date) {
    await tabTo(selector)
    const p2 = (n: number) => String(n).padStart(2, '0')
    const h = d.getUTCHours()
    await page.keyboard.type(`${p2(d.getUTCMonth() + 1)}${p2(d.getUTCDate())}${d.getUTCFullYear()}`)
    // The year takes up to six digits: Tab moves on to the hour.
    await page.keyboard.press('Tab')
    await page.keyboard.type(`${p2(h % 12 || 12)}${p2(d.getUTCMinutes())}${p2(d.getUTCSeconds())}${h < 12 ? 'A' : 'P'}`)
    t.equal(await page.locator(selector).inputValue(), localValue(d), `${selector}: ${localValue(d)} typed`)
  }

  /** Opens a URL that answers an error page on purpose (by address: no control leads there). */
  async function openErrorPage (url: string, status: number) {
    errorPages.add(url)
    const res = await page.goto(url)
    t.equal(res?.status(), status, `${url.replace(/token=.*/, 'token=…')} answers ${status}`)
  }

  return {
    problems,
    path,
    text,
    notice,
    rows,
    checkAccessible,
    walkWithTab,
    tabTo,
    activate,
    choose,
    typeInstant,
    openErrorPage,
    context,
    page
  }
}

t.test('a developer and an organisation user, keyboard only, through every page of the dashboard', {
  skip: SKIP_WITHOUT_CHROMIUM
}, async t => {
  // The receiver fails what goes to /failing until it is mended; /healthy always answers 200.
  const target = { failing: true }
  const receiver = await startReceiver(t, (r, res) => {
    if (r.path.startsWith('/failing') && target.failing) {
      res.statusCode = 503
      res.setHeader('content-type', 'application/json')
      res.end('{"error":"the ledger database is down"}')
    } else {
      res.end('ok')
    }
  })
  const receiverBase = `https://127.0.0.1:${receiver.port}`

  const dataDir = mkdtempSync(join(tmpdir(), 'mg-journey-'))
  const port = await freePort()
  const origin = `http://127.0.0.1:${port}`
  const eventsToken = randomBytes(24).toString('hex')
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: needsPostgres ? '' : await postgresDatabase(t),
    DATA_DIR: dataDir,
    PORT: String(port),
    HOST: '127.0.0.1',
    PUBLIC_BASE_URL: origin,
    LOG_LEVEL: 'warn',
    NODE_ENV: 'development',
    EVENTS_TOKEN: eventsToken,
    WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
    WEBHOOK_CA_FILE: receiver.caFile,
    // Two attempts a delivery, a second apart: a failing delivery is "Retrying", then "Failed" for good.
    WEBHOOK_RETRY_SCHEDULE: '1'
  }
  const gateway = await startGateway(env).catch(err => {
    rmSync(dataDir, { recursive: true, force: true })
    throw err
  })
  t.teardown(async () => {
    await gateway.stop(10_000)
    rmSync(dataDir, { recursive: true, force: true })
  })
  const api = gatewayClient(origin)

  // The people: a developer, another developer, and an organisation's user with one entity.
  const developer = { sub: unique('dev'), org: unique('devorg'), entity: unique('devent') }
  const tenant = { org: unique('org'), entity: unique('ent') }
  const orgUser = unique('acct')
  const tokenOf = (sub: string, org: string, ...entity: string[]) =>
    command(env, 'user-token', '--sub', sub, '--org', org, ...entity.flatMap(e => ['--entity', e]))
  const devToken = await tokenOf(developer.sub, developer.org, developer.entity)
  const userToken = await tokenOf(orgUser, tenant.org, tenant.entity)

  // The developer's app, installed by the user's organisation, with a failing and a healthy subscription; another
  // developer's app installed beside it.
  const books = await api.registerApp(devToken, {
    slug: unique('books').replace(/_/g, '-'), name: 'Journey Books', scopes: ['invoices:read', 'bills:read']
  })
  const ledger = await api.registerApp(await tokenOf(unique('dev'), unique('devorg'), unique('devent')), {
    slug: unique('ledger').replace(/_/g, '-'), name: 'Ledger Sync', scopes: ['invoices:read']
  })
  const install = await api.install(books, { userToken, tenant, scopes: ['invoices:read', 'bills:read'] })
  const ledgerInstall = await api.install(ledger, { userToken, tenant, scopes: ['invoices:read'] })
  const failing = await api.subscribe(install, {
    topics: ['invoice.paid', 'bill.created'], target_url: `${receiverBase}/failing`
  })
  await api.subscribe(install, { topics: ['invoice.paid'], target_url: `${receiverBase}/healthy` })

  let n = 0
  /** Two invoice.paid events and a bill.created one from the accounting system; their ids. */
  async function publishBatch (): Promise<{ paid: string[], bills: string[] }> {
    const paid: string[] = []
    for (let k = 0; k < 2; k++) {
      n++
      paid.push(await api.publish(eventsToken, tenant, 'invoice.paid', invoice({ ...nth('inv', n), status: 'paid' })))
    }
    n++
    const record = bill({ ...nth('bill', n), status: 'authorised' })
    const bills = [await api.publish(eventsToken, tenant, 'bill.created', record)]
    return { paid, bills }
  }
  /** The failing subscription's attempts once `deliveries` deliveries have run out of attempts. */
  const failedFor = (i: JourneyInstall, deliveries: number) => waitFor(() => api.attempts(i, failing.id), {
    until: as => new Set(as.map(a => a.delivery_id)).size === deliveries && as.length === deliveries * 2 &&
      as.every(a => a.delivery_status === 'failed'),
    timeout: DELIVERY_WAIT,
    what: `${deliveries} deliveries to fail for good`
  })

  const recoverSince = wholeSecond(Date.now() - 1000)
  const first = await publishBatch()
  await failedFor(install, 3)
  // The filter's "since": after every attempt of the first events, before any of the second.
  const since = new Date(Math.ceil((Date.now() + 1) / 1000) * 1000)
  await waitFor(() => Date.now() > since.getTime() + 20, { timeout: 5_000, interval: 20, what: 'the second to turn' })
  const second = await publishBatch()
  const failedAttempts = await failedFor(install, 6)
  await waitFor(() => receiver.received.filter(r => r.path === '/healthy').length, {
    until: k => k === 4, timeout: DELIVERY_WAIT, what: 'the healthy subscription to get its 4 events'
  })
  t.equal((await api.call('GET', '/public/v1/me', { bearer: ledgerInstall.accessToken })).status, 200,
    'the other app\'s token works before the uninstall')

  const context = await (await browser()).newContext({ viewport: { width: 1280, height: 900 }, timezoneId: 'UTC' })
  t.teardown(() => context.close())
  const dev = person(t, context, await context.newPage())
  const { page } = dev

  // Signed in with a link, on their apps.
  const link = await command(env, 'dashboard-link', '--sub', developer.sub, '--org', developer.org,
    '--entity', developer.entity, '--url', origin)
  t.match(link, `${origin}/dashboard/sign-in?token=`, 'dashboard-link prints a link to this service')
  await page.goto(link)
  t.equal(dev.path(), '/dashboard/apps', 'signed in, on the apps of a developer')
  t.match(await dev.rows(), [['Journey Books', /^books-/, 'Enabled', '1 active installs of Journey Books',
    '4 succeeded, 6 failed (webhooks of Journey Books)']], 'the app, its key, its installs and its last 24 hours')
  await dev.walkWithTab('apps')
  await dev.checkAccessible('the apps page')

  // The app, its installs, its webhooks: the failing subscription first.
  await dev.activate('main a', 'Journey Books')
  t.equal(dev.path(), `/dashboard/apps/${books.clientId}`, 'the app page')
  t.same(await dev.walkWithTab('app'), ['Sign out', 'Disable the API key'], 'the app page: its forms\' buttons')
  await dev.checkAccessible('the app page')

  await dev.activate('nav.tabs a', 'Installs')
  t.equal(dev.path(), `/dashboard/apps/${books.clientId}/installs`, 'the installs page')
  const [installRow] = await dev.rows()
  t.match(installRow, [tenant.org, tenant.entity, /invoices:read/, orgUser, /UTC$/, /UTC$/, 'Active'],
    'the install, used already (to the minute)')
  await dev.walkWithTab('installs')
  await dev.checkAccessible('the installs page')

  await dev.activate('nav.tabs a', 'Webhooks')
  t.equal(dev.path(), `/dashboard/apps/${books.clientId}/webhooks`, 'the webhooks page')
  t.match(await dev.text('main'), '4 succeeded, 12 failed, across every install.', 'the 24 hours\' figures')
  t.equal(await page.locator('figure.chart svg[role=img] rect.bar-failed').count(), 24, 'a chart of 24 hours')
  const subscriptions = await dev.rows('main > .table-wrap > table > tbody > tr')
  t.match(subscriptions[0], [failing.id, `${tenant.org} / ${tenant.entity}`, 'invoice.paid, bill.created',
    `${receiverBase}/failing`, 'Failing', /^[1-9]/, /HTTP 503$/], 'the failing subscription comes first')
  t.match(subscriptions[1], [String, String, 'invoice.paid', `${receiverBase}/healthy`, 'Active', '0', /HTTP 200$/],
    'then the healthy one')
  await dev.walkWithTab('webhooks')
  await dev.checkAccessible('the webhooks page')

  // Its attempts log: every attempt, newest first.
  await dev.activate('main table a', failing.id)
  t.equal(dev.path(), `/dashboard/webhooks/${failing.id}`, 'the subscription\'s attempts log')
  t.equal((await dev.rows()).length, 12, 'all 12 attempts')
  const logButtons = await dev.walkWithTab('the attempts log')
  t.same([...new Set(logButtons)], ['Sign out', 'Filter', ...new Set(logButtons.filter(b => b.startsWith('Resend'))),
    'Recover', 'Send test event', 'Rotate signing secret'], 'every button of the log, Filter to Rotate')
  t.equal(logButtons.filter(b => b.startsWith('Resend delivery')).length, 12, 'a Resend on every failed attempt')
  await dev.checkAccessible('the attempts log')

  // Filtered with the form: failed, invoice.paid, since the second batch.
  await dev.choose('#f-status', 'F', 'failed')
  await dev.choose('#f-topic', 'invoice.p', 'invoice.paid')
  await dev.typeInstant('#f-since', since)
  await dev.activate('form[role=search] button', 'Filter')
  const query = new URL(page.url()).searchParams
  t.same({ status: query.get('status'), topic: query.get('topic'), since: query.get('since') },
    { status: 'failed', topic: 'invoice.paid', since: localValue(since) }, 'the filters are in the address')
  let filtered = await dev.rows()
  t.equal(filtered.length, 4, 'the 2 events of the second batch, 2 attempts each')
  for (const r of filtered) {
    const at = new Date(r[0]!.slice(0, 19).replace(' ', 'T') + 'Z')
    t.ok(second.paid.includes(r[1]!) && r[2] === 'invoice.paid' && r[6] === 'Failed' && at >= since,
      `a failed invoice.paid attempt since then: ${r[1]}`)
  }
  t.equal(await page.locator('#f-status').inputValue(), 'failed', 'the form shows the filters back')
  await dev.checkAccessible('the filtered attempts log')

  // Resend one failed delivery: the notice, and its third attempt in the log.
  await dev.activate('table.log button', 'Resend')
  t.equal(new URL(page.url()).search,
    `?status=failed&topic=invoice.paid&since=${encodeURIComponent(localValue(since))}`, 'back on the same filters')
  const resent = /^Delivery (\S+) is due again and goes out within seconds\.$/.exec(await dev.notice())
  t.ok(resent, 'the notice says the delivery goes out again')
  const resentId = resent![1]!
  t.ok(failedAttempts.some(a => a.delivery_id === resentId), 'a delivery of the subscription')
  await waitFor(() => api.attempts(install, failing.id), {
    until: as => as.filter(a => a.delivery_id === resentId).length === 3 &&
      as.every(a => a.delivery_status === 'failed'),
    timeout: DELIVERY_WAIT,
    what: 'the resent delivery\'s third attempt'
  })
  await page.reload()
  t.equal(await dev.notice(), '', 'a notice is said once')
  filtered = await dev.rows()
  t.equal(filtered.length, 5, 'the third attempt shows in the log')
  t.match(filtered[0], [/UTC/, /^evt_|./, 'invoice.paid', '3', '503'], 'newest first: attempt 3')

  // The receiver is mended: recover every failed delivery since before the first batch.
  target.failing = false
  await dev.typeInstant('#r-since', recoverSince)
  await dev.activate('form[action$="/replay"] button', 'Recover')
  t.equal(await dev.notice(), '6 deliveries are queued again.', 'the notice counts what was queued again')
  await waitFor(() => api.attempts(install, failing.id), {
    until: as => as.filter(a => a.response_status === 200).length === 6,
    timeout: DELIVERY_WAIT,
    what: 'the 6 recovered deliveries to succeed'
  })
  await page.reload()
  t.ok((await dev.rows()).every(r => r[6] === 'Failed'), 'the failed filter still shows failed attempts only')
  await dev.activate('form[role=search] a', 'Clear filters')
  t.equal(new URL(page.url()).search, '', 'the filters cleared')
  const succeeded = (await dev.rows()).filter(r => r[6] === 'Succeeded')
  t.same(succeeded.map(r => r[1]).sort(), [...first.paid, ...first.bills, ...second.paid, ...second.bills].sort(),
    'the new attempts: every failed event, delivered now')

  // One delivery: what was sent, with its signatures masked, and each attempt's answer.
  await dev.activate('table.log td a', '')
  t.match(dev.path(), new RegExp(`^/dashboard/webhooks/${failing.id}/deliveries/`), 'a delivery\'s page')
  t.match(await dev.text('main'), /Request body[\s\S]*"topic": "(invoice\.paid|bill\.created)"/, 'the body it sent')
  t.match(await dev.text('main'), /webhook-signature: v1,••••••••/, 'the signature masked')
  await dev.walkWithTab('the delivery')
  await dev.checkAccessible('the delivery page')
  await dev.activate('.crumbs a', 'Subscription')

  // A test event, then a new signing secret: shown once, and it signs the next delivery.
  const tests = () => receiver.received.filter(r => r.headers['x-service-topic'] === 'webhook.test')
  await dev.activate('form[action$="/test"] button', 'Send test event')
  const testEvent = /^Test event (\S+) is queued; its attempt shows in the log within seconds\.$/
    .exec(await dev.notice())
  t.ok(testEvent, 'the notice names the test event')
  await waitFor(() => api.attempts(install, failing.id), {
    until: as => as.some(a => a.event_id === testEvent![1] && a.response_status === 200),
    timeout: DELIVERY_WAIT,
    what: 'the test event\'s attempt'
  })
  await page.reload()
  t.match((await dev.rows())[0], [/UTC/, testEvent![1], 'webhook.test', '1', '200'], 'the test event in the log')

  await dev.activate('form[action$="/rotate-secret"] button', 'Rotate signing secret')
  t.equal(await dev.text('h1'), 'New signing secret', 'the new secret\'s page')
  const secret = (await dev.text('main pre')).trim()
  t.match(secret, /^whsec_[A-Za-z0-9+/=]{40,}$/, 'the secret, shown once')
  t.match(await dev.text('main'), /The previous secret keeps signing beside it until \d{4}-\d\d-\d\d/,
    'the previous secret signs beside it for a while')
  await dev.walkWithTab('the new secret')
  await dev.checkAccessible('the rotated-secret page')
  await dev.activate('main a', 'Back to the subscription')
  const testsBefore = tests().length
  await dev.activate('form[action$="/test"] button', 'Send test event')
  const [signed] = (await waitFor(() => tests(), {
    until: r => r.length > testsBefore, timeout: DELIVERY_WAIT, what: 'a test event after the rotation'
  })).slice(testsBefore)
  const headers = Object.fromEntries(Object.entries(signed!.headers).map(([k, v]) => [k, String(v)]))
  t.doesNotThrow(() => new Webhook(secret).verify(signed!.body.toString(), headers), 'the new secret signs it')

  // The API key, disabled on the app page: the app's token is refused at once.
  await dev.activate('.crumbs a', 'Journey Books')
  await dev.activate('form[action$="/api-key"] button', 'Disable the API key', 'Space')
  t.equal(await dev.notice(),
    'The API key of Journey Books is disabled: every access token of the app is refused from now on.',
    'the notice says what the disable does')
  t.match(await dev.text('#api-key'), 'Disabled', 'the key shows as disabled')
  t.same(await dev.walkWithTab('the app with its key disabled'), ['Sign out', 'Enable the API key'],
    'the form now enables the key')
  await dev.checkAccessible('the app page with its key disabled')
  const me = await api.call('GET', '/public/v1/me', { bearer: install.accessToken })
  t.match(me, { status: 401, body: { error: 'invalid_client', message: 'The app\'s API key is disabled.' } },
    'the app\'s access token is refused: its API key is disabled')

  // The catalog, the error pages and signing out.
  await dev.activate('header nav a', 'Event types')
  t.equal(dev.path(), '/dashboard/event-types', 'the event types page, from the header')
  // The event types and sign-in pages are checked with axe in test/e2e/dashboard.test.ts; here they are walked.
  await dev.walkWithTab('event types')
  await dev.openErrorPage(`${origin}/dashboard/webhooks/${failing.id}?since=yesterday`, 400)
  t.match(await dev.text('main'), 'The filters of the attempts log are not valid.', 'the 400 page says why')
  await dev.checkAccessible('the 400 page')
  await dev.openErrorPage(`${origin}/dashboard/apps/${books.clientId}/nothing-here`, 404)
  await dev.checkAccessible('the 404 page')
  await dev.openErrorPage(link, 400)
  t.equal(await context.cookies().then(cs => cs.some(c => c.name === 'session')), true, 'still signed in')
  await dev.activate('header button', 'Sign out')
  t.equal(dev.path(), '/dashboard/sign-in', 'signed out')
  t.same(dev.problems, [], 'the developer: no console error, no CSP violation, no script error')

  // An organisation user, in a browser of their own: Connections, and Uninstall.
  const userContext = await (await browser())
    .newContext({ viewport: { width: 1280, height: 900 }, timezoneId: 'UTC' })
  t.teardown(() => userContext.close())
  const user = person(t, userContext, await userContext.newPage())
  await user.page.goto(await command(env, 'dashboard-link', '--sub', orgUser, '--org', tenant.org,
    '--entity', tenant.entity, '--url', origin))
  t.equal(user.path(), '/dashboard/connections', 'signed in, on the apps connected to their organisation')
  const connected = await user.rows()
  t.same(connected.map(r => r[0]).sort(), ['Journey Books', 'Ledger Sync'], 'both apps, by name')
  t.ok(connected.every(r => /UTC$/.test(r[5]!)), 'each used already (to the minute)')
  const uninstalls = [`Uninstall Journey Books from ${tenant.entity}`, `Uninstall Ledger Sync from ${tenant.entity}`]
  t.same((await user.walkWithTab('connections')).sort(), ['Sign out', ...uninstalls].sort(),
    'an Uninstall for each app, named for screen readers')
  await user.checkAccessible('the connections page')
  await user.activate('main form button', 'Uninstall Ledger Sync', 'Space')
  t.equal(await user.notice(), `Ledger Sync is uninstalled from ${tenant.entity}: its access tokens stopped working ` +
    'and its webhooks stopped.', 'the notice says what the uninstall did')
  t.same((await user.rows()).map(r => r[0]), ['Journey Books'], 'Ledger Sync is no longer connected')
  await user.checkAccessible('the connections page after the uninstall')
  t.match(await api.call('GET', '/public/v1/me', { bearer: ledgerInstall.accessToken }),
    { status: 401, body: { error: 'invalid_token', message: 'Install is not active.' } },
    'the uninstalled app\'s token is refused')
  t.same(user.problems, [], 'the organisation user: no console error, no CSP violation, no script error')
})
