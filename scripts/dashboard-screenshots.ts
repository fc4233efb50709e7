/**
 * `npm run screenshots`: the pictures of docs/dashboard.md, made again from a fresh service with demo data.
 *
 * It builds, starts the service (`node dist/cli.js serve`) on a new embedded database in a temporary folder, with an
 * HTTPS receiver on this machine that fails some deliveries, and makes through the public surfaces what the pages
 * show: a developer's two apps, one installed by three organisations; a subscription that fails (its invoice.paid
 * deliveries answer 503) and a healthy one, with their attempts; another developer's app connected beside it. Then
 * Debian's headless Chromium (/usr/bin/chromium) signs in with `dashboard-link` links, and PNGs of the main pages at
 * 1280 and 320 px wide go to docs/images/dashboard/ (the window's height, not the whole page: small files).
 *
 * The 24-hour chart would show only the current hour of a fresh database: between two starts of the service the
 * script fills the 23 hours before with made-up figures for the app (the `webhook_activity_hours` table, as the
 * worker keeps it), so that the picture shows a day. Everything else on the pictures is what the service did.
 *
 *   npm run screenshots
 */
import { execFileSync } from 'node:child_process'
import { mkdirSync, mkdtempSync, readFileSync, rmSync, statSync } from 'node:fs'
import { createServer as createHttpsServer } from 'node:https'
import { createServer, type AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { PGlite } from '@electric-sql/pglite'
import { chromium, type Browser, type Page } from 'playwright-core'
import { ROOT } from '../lib/root.js'
import {
  command, gatewayClient, startGateway, waitFor, type Gateway, type JourneyInstall, type Tenant
} from '../test/support/gateway.js'
import { bill, customer, invoice, nth } from '../test/support/records.js'

const CHROMIUM = '/usr/bin/chromium'
const OUT = join(ROOT, 'docs', 'images', 'dashboard')
const WIDTHS = [{ width: 1280, height: 860 }, { width: 320, height: 760 }] as const
const HOUR_MS = 3_600_000

/** A port that was free a moment ago (the service's public origin must be known before it starts). */
async function freePort (): Promise<number> {
  const server = createServer()
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  await new Promise<void>(resolve => server.close(() => resolve()))
  return port
}

/**
 * An HTTPS receiver on 127.0.0.1 with a self-signed certificate (openssl), which answers 503 to the invoice.paid
 * deliveries of `/failing` (a receiver whose ledger is down for those) and 200 to everything else.
 */
async function startReceiver (dir: string) {
  execFileSync('openssl', ['req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-days', '1', '-subj', '/CN=localhost',
    '-addext', 'subjectAltName=DNS:localhost,IP:127.0.0.1', '-keyout', join(dir, 'key.pem'),
    '-out', join(dir, 'cert.pem')], { stdio: 'ignore' })
  const server = createHttpsServer({
    key: readFileSync(join(dir, 'key.pem')), cert: readFileSync(join(dir, 'cert.pem'))
  }, (req, res) => {
    req.resume()
    req.on('end', () => {
      if (req.url?.startsWith('/failing') && req.headers['x-service-topic'] === 'invoice.paid') {
        res.statusCode = 503
        res.setHeader('content-type', 'application/json')
        res.end('{"error":"ledger unavailable, try again later"}')
      } else {
        res.end('ok')
      }
    })
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  return {
    base: `https://localhost:${(server.address() as AddressInfo).port}`,
    caFile: join(dir, 'cert.pem'),
    close: () => new Promise<void>(resolve => { server.closeAllConnections(); server.close(() => resolve()) })
  }
}

/** Made-up figures for the 23 hours before the current one: a steady day whose last hours start to fail. */
async function fillEarlierHours (dataDir: string, clientId: string): Promise<void> {
  const db = await PGlite.create(join(dataDir, 'pglite'))
  try {
    const current = Math.floor(Date.now() / HOUR_MS) * HOUR_MS
    for (let back = 23; back >= 1; back--) {
      const succeeded = 18 + ((back * 7) % 13)
      const failed = back <= 5 ? (6 - back) * 3 : back === 14 ? 2 : 0
      await db.query(
        `insert into webhook_activity_hours (client_id, hour, succeeded, failed, exhausted) values ($1, $2, $3, $4, $5)
         on conflict (client_id, hour) do update set succeeded = webhook_activity_hours.succeeded + excluded.succeeded,
           failed = webhook_activity_hours.failed + excluded.failed,
           exhausted = webhook_activity_hours.exhausted + excluded.exhausted`,
        [clientId, new Date(current - back * HOUR_MS), succeeded, failed, Math.floor(failed / 2)])
    }
  } finally {
    await db.close()
  }
}

async function main (): Promise<void> {
  try {
    statSync(CHROMIUM)
  } catch {
    throw new Error(`${CHROMIUM} is missing: apt-get install chromium`)
  }
  statSync(join(ROOT, 'dist', 'cli.js'))

  const work = mkdtempSync(join(tmpdir(), 'mg-screenshots-'))
  const dataDir = join(work, 'data')
  const receiver = await startReceiver(work)
  const port = await freePort()
  const origin = `http://127.0.0.1:${port}`
  const env = (schedule: string): NodeJS.ProcessEnv => {
    const e: NodeJS.ProcessEnv = {
      ...process.env,
      DATABASE_URL: '',
      DATA_DIR: dataDir,
      PORT: String(port),
      HOST: '127.0.0.1',
      PUBLIC_BASE_URL: origin,
      NODE_ENV: 'development',
      LOG_LEVEL: 'warn',
      WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
      WEBHOOK_CA_FILE: receiver.caFile,
      WEBHOOK_RETRY_SCHEDULE: schedule
    }
    delete e.NODE_OPTIONS
    return e
  }
  let gateway: Gateway | undefined
  let chrome: Browser | undefined
  try {
    // First run: two attempts a second apart, so failing deliveries fail for good at once.
    const first = env('1')
    process.stdout.write('starting the service on a fresh embedded database… ')
    gateway = await startGateway(first)
    console.log(origin)
    const api = gatewayClient(origin)
    const eventsToken = JSON.parse(readFileSync(join(dataDir, 'dev-secrets.json'), 'utf8')).EVENTS_TOKEN as string
    const token = (sub: string, t: Tenant) =>
      command(first, 'user-token', '--sub', sub, '--org', t.org, '--entity', t.entity)

    const dana = { sub: 'dana', org: 'org_dana_labs', entity: 'ent_dana_labs' }
    const danaToken = await token(dana.sub, dana)
    const books = await api.registerApp(danaToken, {
      slug: 'acme-books-sync', name: 'Acme Books Sync', scopes: ['invoices:read', 'bills:read', 'customers:read']
    })
    await api.registerApp(danaToken, { slug: 'invoice-chaser', name: 'Invoice Chaser', scopes: ['invoices:read'] })
    const ledger = await api.registerApp(await token('lee', { org: 'org_ledgerly', entity: 'ent_ledgerly' }), {
      slug: 'ledger-sync', name: 'Ledger Sync', scopes: ['invoices:read']
    })

    const northwind = { org: 'org_northwind', entity: 'ent_northwind_uk' }
    const tenants = [northwind, { org: 'org_contoso', entity: 'ent_contoso_de' },
      { org: 'org_fabrikam', entity: 'ent_fabrikam_fr' }]
    const users = ['olivia', 'carl', 'fatima']
    const installs: JourneyInstall[] = []
    for (const [k, tenant] of tenants.entries()) {
      installs.push(await api.install(books, {
        userToken: await token(users[k]!, tenant), tenant, scopes: ['invoices:read', 'bills:read', 'customers:read']
      }))
    }
    const olivia = await token('olivia', northwind)
    await api.install(ledger, { userToken: olivia, tenant: northwind, scopes: ['invoices:read'] })

    const failing = await api.subscribe(installs[0]!, {
      topics: ['invoice.paid', 'bill.created'], target_url: `${receiver.base}/failing/northwind`
    })
    const healthy = await api.subscribe(installs[1]!, {
      topics: ['invoice.paid', 'customer.created'], target_url: `${receiver.base}/hooks/contoso`
    })

    let n = 0
    const publish = async (tenant: Tenant, topic: string) => {
      n++
      const data = topic === 'invoice.paid'
        ? invoice({ ...nth('inv', n), number: `INV-2026-${1000 + n}`, status: 'paid' })
        : topic === 'bill.created'
          ? bill({ ...nth('bill', n), number: `BILL-${500 + n}`, status: 'authorised' })
          : customer({ ...nth('cus', n), name: `Customer ${n} Ltd` })
      await api.publish(eventsToken, tenant, topic, data)
    }
    console.log('publishing events and waiting for their deliveries…')
    for (let k = 0; k < 3; k++) await publish(northwind, 'bill.created')
    for (let k = 0; k < 4; k++) await publish(northwind, 'invoice.paid')
    for (let k = 0; k < 5; k++) await publish(tenants[1]!, k % 2 ? 'customer.created' : 'invoice.paid')
    const attemptsOf = (i: JourneyInstall, id: string) => api.attempts(i, id)
    await waitFor(() => attemptsOf(installs[0]!, failing.id), {
      until: as => as.length === 3 + 4 * 2 && as.every(a => a.delivery_status !== 'pending'),
      timeout: 120_000,
      what: 'the failing subscription\'s deliveries to end'
    })
    await waitFor(() => attemptsOf(installs[1]!, healthy.id), {
      until: as => as.length === 5, timeout: 120_000, what: 'the healthy subscription\'s deliveries'
    })
    await gateway.stop()
    gateway = undefined

    await fillEarlierHours(dataDir, books.clientId)

    // Second run: a retry an hour later, so the newest failures show as "Retrying".
    const second = env('1,3600')
    gateway = await startGateway(second)
    await publish(northwind, 'invoice.paid')
    const attempts = await waitFor(() => attemptsOf(installs[0]!, failing.id), {
      until: as => as.length === 3 + 4 * 2 + 2, timeout: 120_000, what: 'the retrying delivery\'s two attempts'
    })
    const failedDelivery = attempts.find(a => a.delivery_status === 'failed')!.delivery_id

    mkdirSync(OUT, { recursive: true })
    chrome = await chromium.launch({
      executablePath: CHROMIUM, args: ['--headless', '--no-sandbox', '--disable-gpu', '--hide-scrollbars']
    })
    /** The page at each width, from its top or, at 320 px, from `narrowFrom` (what a phone shows when scrolled). */
    const shoot = async (page: Page, name: string, narrowFrom?: string) => {
      for (const size of WIDTHS) {
        await page.setViewportSize(size)
        await page.evaluate('window.scrollTo(0, 0)')
        if (narrowFrom && size.width < 1000) {
          await page.evaluate(`document.querySelector(${JSON.stringify(narrowFrom)}).scrollIntoView()`)
        }
        const file = join(OUT, `${name}-${size.width}.png`)
        await page.screenshot({ path: file, animations: 'disabled' })
        console.log(`  ${file.slice(ROOT.length + 1)} (${Math.round(statSync(file).size / 1024)} KB)`)
      }
    }
    const signIn = async (sub: string, t: Tenant): Promise<Page> => {
      const context = await chrome!.newContext({ viewport: WIDTHS[0], timezoneId: 'UTC', colorScheme: 'light' })
      const page = await context.newPage()
      await page.goto(await command(second, 'dashboard-link', '--sub', sub, '--org', t.org, '--entity', t.entity,
        '--url', origin))
      return page
    }
    console.log(`writing ${OUT.slice(ROOT.length + 1)}/:`)
    const developer = await signIn(dana.sub, dana)
    await shoot(developer, 'apps')
    await developer.goto(`${origin}/dashboard/apps/${books.clientId}/webhooks`)
    await shoot(developer, 'webhooks')
    await developer.goto(`${origin}/dashboard/webhooks/${failing.id}`)
    await shoot(developer, 'attempts', 'form.filters')
    await developer.goto(`${origin}/dashboard/webhooks/${failing.id}/deliveries/${failedDelivery}`)
    await shoot(developer, 'delivery')
    const orgUser = await signIn('olivia', northwind)
    await shoot(orgUser, 'connections')
  } finally {
    await chrome?.close()
    await gateway?.stop()
    await receiver.close()
    rmSync(work, { recursive: true, force: true })
  }
}

main().catch(err => {
  console.error(err instanceof Error ? err.message : err)
  process.exitCode = 1
})
