// The dashboard as a developer first meets it, in Debian's headless Chromium: the service started as users start
// it, a link from `dashboard-link`, keyboard only from there; every page checked with axe-core at 1280 px and at
// 320 px (no horizontal scroll), with no console error and no Content-Security-Policy violation.
import { execFile, spawn } from 'node:child_process'
import { mkdtempSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import t from 'tap'
import { AxeBuilder } from '@axe-core/playwright'
import type { Page } from 'playwright-core'
import { browser, freePort, SKIP_WITHOUT_CHROMIUM as SKIP } from '../support/browser.js'
import { eventually, pkcePair, REDIRECT_URI, unique } from '../support/helper.js'
import { cli } from '../support/processes.js'

const run = promisify(execFile)
const TAGS = ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa', 'wcag22aa']

// The service on the embedded database, started from scratch: past tap's default time-out on a loaded machine.
t.setTimeout(300_000)

t.test('sign in with a dashboard link, move by keyboard, sign out; every page accessible', { skip: SKIP }, async t => {
  const dataDir = mkdtempSync(join(tmpdir(), 'mg-dashboard-'))
  t.teardown(() => rmSync(dataDir, { recursive: true, force: true }))
  const port = await freePort()
  const origin = `http://127.0.0.1:${port}`
  const env = {
    ...process.env,
    DATABASE_URL: '',
    DATA_DIR: dataDir,
    PORT: String(port),
    HOST: '127.0.0.1',
    PUBLIC_BASE_URL: origin,
    LOG_LEVEL: 'warn',
    NODE_ENV: 'development'
  }
  const service = spawn(...cli('serve'), { env, stdio: ['ignore', 'pipe', 'pipe'] })
  let out = ''
  service.stdout.on('data', d => { out += d })
  service.stderr.on('data', d => { out += d })
  t.teardown(() => { service.kill('SIGKILL') })
  await eventually(() => /listening on/.test(out), { timeout: 120_000, what: 'the service to listen' })
  t.match(out, `${origin}/dashboard/sign-in?token=`, 'the banner prints a sign-in link')
  t.match(out, 'valid 10 min')

  const command = (...args: string[]) => run(...cli(...args), { env }).then(r => r.stdout.trim())
  const org = unique('org')
  const entity = unique('ent')
  const link = await command('dashboard-link', '--sub', 'dev <b>', '--org', org, '--entity', entity)
  t.match(link, new RegExp(`^${origin}/dashboard/sign-in\\?token=`), 'dashboard-link prints a link to this service')

  const context = await (await browser()).newContext({ viewport: { width: 1280, height: 900 } })
  t.teardown(() => context.close())
  const page = await context.newPage()
  page.setDefaultTimeout(15_000)
  const problems: string[] = []
  page.on('pageerror', e => problems.push(`page error: ${e.message}`))
  page.on('console', m => {
    // The landing page is a 404 until the Connections page exists (the document's own status, not a resource).
    if (m.type() === 'error' && !(m.text().includes('404') && m.location().url.endsWith('/dashboard/connections'))) {
      problems.push(`console: ${m.text()} (${m.location().url})`)
    }
  })

  /** axe-core with the WCAG 2.2 AA tags, at 1280 px and at 320 px, with nothing wider than the screen. */
  async function checkAccessible (p: Page, what: string) {
    for (const width of [1280, 320]) {
      await p.setViewportSize({ width, height: 800 })
      const { violations } = await new AxeBuilder({ page: p }).withTags(TAGS).analyze()
      t.same(violations.map(v => `${v.id}: ${v.nodes.map(n => n.target.join(' ')).join(', ')}`), [],
        `${what} at ${width} px: no axe violation`)
      const scroll = await p.evaluate('document.documentElement.scrollWidth') as number
      t.ok(scroll <= width, `${what} at ${width} px: no horizontal scroll (${scroll})`)
    }
    await p.setViewportSize({ width: 1280, height: 900 })
  }

  /** Tabs until the focused element is the one wanted (at most `max` presses), then presses Enter on it. */
  async function tabToAndEnter (p: Page, role: string, name: string, max = 30) {
    for (let i = 0; i < max; i++) {
      await p.keyboard.press('Tab')
      const focused = await p.evaluate('({ tag: document.activeElement?.tagName.toLowerCase(), ' +
        'text: document.activeElement?.innerText?.trim() })') as { tag?: string, text?: string }
      if (focused && focused.tag === role && focused.text === name) {
        await Promise.all([p.waitForNavigation(), p.keyboard.press('Enter')])
        return
      }
    }
    throw new Error(`${role} "${name}" not reached by Tab`)
  }

  await page.goto(link)
  t.equal(new URL(page.url()).pathname, '/dashboard/connections', 'signed in, where a developer without apps lands')
  t.match(await page.locator('header').innerText(), 'Signed in as dev <b>', 'the header names the user, as text')

  await tabToAndEnter(page, 'a', 'Event types')
  t.equal(new URL(page.url()).pathname, '/dashboard/event-types', 'Event types reached by keyboard')
  t.equal(await page.locator('h2').count(), 16, 'every topic')
  await checkAccessible(page, 'the event types page')

  await tabToAndEnter(page, 'button', 'Sign out')
  t.equal(new URL(page.url()).pathname, '/dashboard/sign-in', 'signed out by keyboard, on the sign-in page')
  t.notOk((await context.cookies()).some(c => c.name === 'session'), 'the session cookie is gone')
  await checkAccessible(page, 'the sign-in page')
  t.equal((await page.goto(`${origin}/dashboard/event-types`))?.url(), `${origin}/dashboard/sign-in`,
    'a page now sends the browser to sign in')

  // The consent page, on the same layout: an app of another developer, installed by the signed-in user.
  const owner = await command('user-token', '--sub', unique('dev'), '--org', unique('devorg'), '--entity', 'x')
  const registered = await fetch(`${origin}/apps`, {
    method: 'POST',
    headers: { authorization: `Bearer ${owner}`, 'content-type': 'application/json' },
    body: JSON.stringify({
      slug: unique('app').replace(/_/g, '-'),
      name: 'Ledger Sync',
      redirect_uris: [REDIRECT_URI],
      scopes: ['invoices:read', 'bills:read']
    })
  })
  t.equal(registered.status, 201)
  const { client_id: clientId } = await registered.json() as { client_id: string }
  await page.goto(await command('dashboard-link', '--sub', 'installer', '--org', org, '--entity', entity))
  const consent = new URL('/oauth/authorize', origin)
  for (const [k, v] of Object.entries({
    response_type: 'code',
    client_id: clientId,
    redirect_uri: REDIRECT_URI,
    scope: 'invoices:read bills:read',
    state: 's1',
    code_challenge: pkcePair().challenge,
    code_challenge_method: 'S256',
    org_ref_id: org
  })) consent.searchParams.set(k, v)
  t.equal((await page.goto(consent.toString()))?.status(), 200)
  t.match(await page.locator('h1').innerText(), 'Ledger Sync')
  await checkAccessible(page, 'the consent page')

  t.same(problems, [], 'no console error, no CSP violation, no script error')
})
