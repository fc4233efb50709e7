// The producer's commands against a real service process: `sandbox seed` writes what it says (read back through
// the read routes with an install's token) and twice changes nothing; `events import` stops at a bad line, names it,
// keeps its position, and continues after it once the line is fixed; `events trigger` sends valid records.
import { spawn } from 'node:child_process'
import { createHash, randomBytes } from 'node:crypto'
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs'
import { createServer } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { sandboxEvents } from '../../cli/sandbox.js'
import { signUserSession } from '../../plugins/domain/auth/user-session.js'
import { cli } from '../support/processes.js'

// A service process on the embedded database, and a CLI process per command: past tap's 120 s on a loaded machine.
t.setTimeout(300_000)

interface Run { code: number | null, stdout: string, stderr: string }
type Json = Record<string, unknown>

const dir = mkdtempSync(join(tmpdir(), 'mg-records-cli-'))
const env = {
  ...process.env, DATABASE_URL: '', DATA_DIR: join(dir, 'data'), NODE_ENV: 'development', LOG_LEVEL: 'warn', PORT: '0'
}

function run (args: string[], extra: Record<string, string> = {}): Promise<Run> {
  return new Promise(resolve => {
    const child = spawn(...cli(...args), { cwd: dir, env: { ...env, ...extra }, stdio: ['ignore', 'pipe', 'pipe'] })
    let stdout = ''
    let stderr = ''
    child.stdout.on('data', d => { stdout += d })
    child.stderr.on('data', d => { stderr += d })
    const timer = setTimeout(() => child.kill('SIGKILL'), 120_000)
    child.on('exit', code => {
      clearTimeout(timer)
      resolve({ code, stdout, stderr })
    })
  })
}

/** The service, as `npm start` runs it; its base URL once it listens. */
async function startService (): Promise<string> {
  const child = spawn(...cli('serve'), { cwd: dir, env, stdio: ['ignore', 'pipe', 'pipe'] })
  t.teardown(() => { child.kill('SIGKILL') })
  let out = ''
  let err = ''
  child.stderr.on('data', d => { err += d })
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`the service did not start: ${err}`)), 120_000)
    child.stdout.on('data', d => {
      out += d
      const url = /listening on (http:\/\/\S+)/.exec(out)?.[1]
      if (url) {
        clearTimeout(timer)
        resolve(url)
      }
    })
    child.on('exit', code => reject(new Error(`the service exited ${code}: ${err}`)))
  })
}

const base = await startService()

/**
 * An install's access token for a tenant, through the public routes as README.md's journey does it (the user session
 * signed here with the service's generated secret, as `user-token` would: one process less per tenant).
 */
async function installToken (org: string, entity: string): Promise<string> {
  const { USER_SESSION_SECRET: secret } = JSON.parse(readFileSync(join(env.DATA_DIR, 'dev-secrets.json'), 'utf8'))
  const user = signUserSession(secret, { sub: 'dev-1', orgRefId: org, entityRefIds: [entity] })
  const post = (path: string, body: object, headers: Record<string, string> = {}) => fetch(`${base}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify(body),
    redirect: 'manual'
  })
  const redirectUri = 'https://example.com/callback'
  const scopes = ['invoices:read', 'bills:read', 'customers:read']
  const app = await post('/apps', {
    slug: `records-${randomBytes(4).toString('hex')}`, name: 'Records', redirect_uris: [redirectUri], scopes
  }, { authorization: `Bearer ${user}` })
  const { client_id: clientId, client_secret: clientSecret } = await app.json() as Record<string, string>
  const verifier = randomBytes(32).toString('base64url')
  const consent = await post('/oauth/authorize', {
    client_id: clientId,
    redirect_uri: redirectUri,
    scope: scopes.join(' '),
    state: 's',
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
    org_ref_id: org,
    entity_ref_id: entity,
    decision: 'allow'
  }, { authorization: `Bearer ${user}` })
  const code = new URL(consent.headers.get('location')!).searchParams.get('code')
  const tokens = await post('/oauth/token', {
    grant_type: 'authorization_code',
    code,
    redirect_uri: redirectUri,
    code_verifier: verifier,
    client_id: clientId,
    client_secret: clientSecret
  })
  return ((await tokens.json()) as { access_token: string }).access_token
}

/** Every record of a kind, paged through with small pages. */
async function list (token: string, org: string, entity: string, plural: string): Promise<Json[]> {
  const records: Json[] = []
  let cursor: string | null = null
  do {
    const query: string = `limit=25${cursor ? `&cursor=${cursor}` : ''}`
    const res = await fetch(`${base}/public/v1/orgs/${org}/entities/${entity}/${plural}?${query}`, {
      headers: { authorization: `Bearer ${token}` }
    })
    if (res.status !== 200) throw new Error(`${plural}: ${res.status} ${await res.text()}`)
    const page = await res.json() as Record<string, unknown>
    records.push(...page[plural] as Json[])
    cursor = page.next_cursor as string | null
  } while (cursor)
  return records
}

const countBy = (records: Json[], key = 'status') => {
  const counts: Record<string, number> = {}
  for (const r of records) counts[r[key] as string] = (counts[r[key] as string] ?? 0) + 1
  return counts
}

t.test('sandbox seed writes the records it says, every status, some overdue; a second run changes nothing',
  async t => {
    const [org, entity, asOf] = ['org_seed', 'ent_seed', '2026-06-30']
    const args = ['sandbox', 'seed', '--org', org, '--entity', entity, '--customers', '6', '--invoices', '40',
      '--bills', '15', '--as-of', asOf, '--url', base]
    const first = await run(args)
    t.equal(first.code, 0, first.stderr)
    t.match(first.stdout, new RegExp(`^Sandbox of ${org} / ${entity} as of ${asOf}: \\d+ events in \\d+ batches to `))
    const said = (kind: string) => new RegExp(`\\n  ${kind} +(\\d+) +\\(([^)]*)\\)`).exec(first.stdout)
    const numbers = (kind: string) => Object.fromEntries([...said(kind)![2]!.matchAll(/(\d+) (\w+)/g)]
      .map(m => [m[2]!, Number(m[1])]))
    t.match(first.stdout, `curl -s '${base}/public/v1/orgs/${org}/entities/${entity}/invoices?limit=5' ` +
      '-H "Authorization: Bearer $ACCESS_TOKEN"', 'says how to read them')

    const token = await installToken(org, entity)
    const read = async () => ({
      customers: await list(token, org, entity, 'customers'),
      invoices: await list(token, org, entity, 'invoices'),
      bills: await list(token, org, entity, 'bills')
    })
    const before = await read()
    t.same([before.customers.length, before.invoices.length, before.bills.length], [6, 40, 15], 'the sizes asked for')
    t.same(said('customers')?.[1], '6')
    t.same(said('invoices')?.[1], '40')
    t.same(said('bills')?.[1], '15')

    const invoices = countBy(before.invoices)
    const overdue = (docs: Json[]) => docs.filter(d => d.status === 'authorised' && (d.due_date as string) < asOf)
    const late = (docs: Json[]) => docs.filter(d => d.status === 'paid' &&
      (d.paid_at as string).slice(0, 10) > (d.due_date as string))
    const notable = (docs: Json[]) => ({ overdue: overdue(docs).length, late: late(docs).length })
    t.same(numbers('invoices'), { ...invoices, ...notable(before.invoices) },
      'the printed counts are what the read routes serve')
    t.same(numbers('bills'), { ...countBy(before.bills), ...notable(before.bills) })
    t.same(numbers('customers'), countBy(before.customers))
    t.same(Object.keys(invoices).sort(), ['authorised', 'draft', 'paid', 'voided'], 'every invoice status')
    t.same(Object.keys(countBy(before.bills)).sort(), ['authorised', 'draft', 'paid'], 'every bill status')
    t.same(Object.keys(countBy(before.customers)).sort(), ['active', 'archived'], 'active and archived customers')
    t.ok(overdue(before.invoices).length > 0, 'some invoices overdue')
    t.ok(late(before.invoices).length > 0, 'some paid late')
    t.ok(new Set(before.invoices.map(i => i.currency)).size > 1, 'in several currencies')

    const second = await run(args)
    t.equal(second.code, 0, second.stderr)
    const timeless = (s: string) => s.replace(/\(\d+\.\d s\)/, '(…)')
    t.equal(timeless(second.stdout), timeless(first.stdout), 'says the same')
    t.same(await read(), before, 'and the tenant holds exactly the same records')
  })

t.test('events import: stops at a bad line and names it, keeps the position, continues after it once fixed',
  async t => {
    const [org, entity] = ['org_import', 'ent_import']
    const events = [...sandboxEvents({ org, entity, customers: 3, invoices: 8, bills: 3, asOf: '2026-06-30' })]
    const lines = events.map(e => JSON.stringify(e))
    lines.splice(2, 0, '') // a blank line: skipped, but counted in the line numbers
    const numbered = lines.map((text, i) => ({ line: i + 1, text })).filter(l => l.text !== '')
    // The bad event: the 11th (line 12), in the third batch of five (lines 12 to 16).
    const bad = numbered[10]!
    const good = bad.text
    const broken = JSON.parse(good)
    broken.data.total = '0.01'
    const file = join(dir, 'events.ndjson')
    const write = (overrides: Record<number, string>) => writeFileSync(file,
      lines.map((text, i) => overrides[i + 1] ?? text).join('\n') + '\n')
    write({ [bad.line]: JSON.stringify(broken) })
    const importing = ['events', 'import', file, '--batch', '5', '--url', base]

    const first = await run(importing)
    t.equal(first.code, 1, 'exits 1')
    t.equal(first.stdout, '')
    t.match(first.stderr, `${file}: the service refused the batch of lines 12–16 (400 validation_error`)
    t.match(first.stderr, `\n  ${file}:12: /data/total must equal subtotal + tax_total (`, 'names the line and field')
    t.match(first.stderr, 'Nothing of that batch was stored. The position stays after line 11 (10 events in), in ' +
      `${file}.position: fix the line and run the same command again`)
    const position = JSON.parse(readFileSync(`${file}.position`, 'utf8'))
    t.match(position, { line: 11, events: 10, offset: Buffer.byteLength(lines.slice(0, 11).join('\n') + '\n') })

    const token = await installToken(org, entity)
    const ids = async (plural: string) => (await list(token, org, entity, plural)).map(r => r.id).sort()
    const sentIds = (kind: string, upTo: number) => [...new Set(numbered.filter(l => l.line <= upTo)
      .map(l => JSON.parse(l.text)).filter(e => e.topic.startsWith(`${kind}.`)).map(e => e.data.id as string))].sort()
    t.same(await ids('customers'), sentIds('customer', 11), 'the records of lines 1 to 11 are in')
    t.same(await ids('invoices'), sentIds('invoice', 11), 'and no invoice of the refused batch')

    // Fixed, and line 1 changed behind the position (a new event id, a new name, a newer updated_at, all of the same
    // length, so that the offsets hold): were it sent again, the customer's name would change.
    const one = JSON.parse(lines[0]!)
    const renamed = {
      ...one,
      id: one.id.replace('-v1-', '-v9-'),
      data: { ...one.data, name: 'Z'.repeat(one.data.name.length), updated_at: '2026-06-29T23:59:59.999Z' }
    }
    t.equal(Buffer.byteLength(JSON.stringify(renamed)), Buffer.byteLength(lines[0]!), 'of the same length')
    write({ 1: JSON.stringify(renamed) })
    const second = await run(importing)
    t.equal(second.code, 0, second.stderr)
    t.match(second.stdout, new RegExp(`^Continued after line 11: imported ${numbered.length - 10} events from ` +
      `${file} \\(lines 12–${lines.length}\\) in 3 batches`))
    t.same(await ids('customers'), sentIds('customer', lines.length))
    t.same(await ids('invoices'), sentIds('invoice', lines.length), 'every invoice is in now')
    t.same(await ids('bills'), sentIds('bill', lines.length))
    const customer = (await list(token, org, entity, 'customers')).find(c => c.id === one.data.id)
    t.equal(customer?.name, one.data.name, 'line 1 was not sent again')
    t.match(JSON.parse(readFileSync(`${file}.position`, 'utf8')), { line: lines.length, events: numbered.length })

    const third = await run(importing)
    t.equal(third.code, 0)
    t.match(third.stdout, `Nothing to import: ${file} has no event after line ${lines.length}`)

    // A position edited by hand is refused, not trusted: one line naming the file, and nothing sent.
    const kept = readFileSync(`${file}.position`, 'utf8')
    writeFileSync(`${file}.position`, JSON.stringify({ ...JSON.parse(kept), line: -4 }))
    const edited = await run(importing)
    t.equal(edited.code, 1, 'a position edited by hand: exits 1')
    t.equal(edited.stderr, `${file}.position is not a position this command wrote for ${file}: "line" must be a ` +
      'whole number from 1 (got -4). Delete it, or pass --restart to import the file from its start.\n')
    writeFileSync(`${file}.position`, kept)

    // A position that does not fit the file: a file changed where the last batch ended.
    write({ [lines.length]: lines.at(-1)!.replace('-v', '-w') })
    const changed = await run(importing)
    t.equal(changed.code, 1)
    t.match(changed.stderr, 'is not the file')
    t.match(changed.stderr, '--restart')
  })

t.test('events import: a line that is not JSON stops the import before its batch is sent', async t => {
  const [org, entity] = ['org_notjson', 'ent_notjson']
  const lines = [...sandboxEvents({ org, entity, customers: 4, invoices: 0, bills: 0, asOf: '2026-06-30' })]
    .filter(e => e.topic === 'customer.created').map(e => JSON.stringify(e))
  lines.splice(3, 0, '{"topic": "customer.created", oops')
  const file = join(dir, 'notjson.ndjson')
  writeFileSync(file, lines.join('\n') + '\n')
  const r = await run(['events', 'import', file, '--batch', '2', '--url', base])
  t.equal(r.code, 1)
  t.match(r.stderr, new RegExp(`^${file}:4: not JSON \\(.*\\)\\. The batch from line 3 on was not sent\\. ` +
    `The position stays after line 2 \\(2 events in\\), in ${file}\\.position`))
  const token = await installToken(org, entity)
  t.same((await list(token, org, entity, 'customers')).map(c => c.id), ['cus_0001', 'cus_0002'],
    'lines 1 and 2 are in; line 3, in the batch of the bad line, is not')
})

t.test('events trigger sends a valid record of the topic\'s state, which the read side keeps', async t => {
  const [org, entity] = ['org_trigger', 'ent_trigger']
  const trigger = (topic: string) => run(['events', 'trigger', topic, '--org', org, '--entity', entity, '--url', base])
  const created = await trigger('invoice.created')
  t.match(created.stdout, /^202 \{"id":"evt_[\w-]+","deliveries":0\}/, created.stdout + created.stderr)
  const paid = await trigger('invoice.paid')
  t.match(paid.stdout, /^202 /)
  const archived = await trigger('customer.archived')
  t.match(archived.stdout, /^202 /)
  const token = await installToken(org, entity)
  t.match(await list(token, org, entity, 'invoices'), [{ id: 'inv_1042', status: 'paid', amount_due: '0.00' }])
  t.match(await list(token, org, entity, 'customers'), [{ id: 'cus_0042', status: 'archived' }])
})

t.test('errors: the service not reachable, a token it does not take, a file that is not there', async t => {
  const closed = await new Promise<number>(resolve => {
    const s = createServer().listen(0, '127.0.0.1', () => {
      const { port } = s.address() as { port: number }
      s.close(() => resolve(port))
    })
  })
  const seed = ['sandbox', 'seed', '--org', 'o', '--entity', 'e', '--customers', '1', '--invoices', '1', '--bills', '0']
  const trigger = ['events', 'trigger', 'invoice.paid', '--org', 'o', '--entity', 'e']
  const [down, wrong, missing, triggerDown, triggerPort] = await Promise.all([
    run([...seed, '--url', `http://127.0.0.1:${closed}`]),
    run([...seed, '--url', base], { EVENTS_TOKEN: 'not-the-service-token-at-all-0123' }),
    run(['events', 'import', join(dir, 'nowhere.ndjson'), '--url', base]),
    run([...trigger, '--url', `http://127.0.0.1:${closed}`]),
    // Without --url: HOST and PORT, as the service reads them.
    run(trigger, { HOST: '127.0.0.1', PORT: String(closed) })
  ])
  const unreachable = `Cannot reach the service at http://127.0.0.1:${closed}/events: connect ECONNREFUSED ` +
    `127.0.0.1:${closed}. Is it running (npm start)? If it listens elsewhere, pass --url, or set PORT (and HOST) as ` +
    'the service has them.\n'
  const unreached = { 'sandbox seed': down, 'events trigger': triggerDown, 'trigger on PORT': triggerPort }
  for (const [name, r] of Object.entries(unreached)) {
    t.equal(r.code, 1, name)
    t.equal(r.stderr, unreachable, `${name}: one line naming the URL tried and the options`)
  }
  t.equal(wrong.code, 1)
  t.match(wrong.stderr,
    /^The service refused a batch of the sandbox's events \(401 invalid_token: .*\)\. The service expects another /)
  t.equal(missing.code, 1)
  t.match(missing.stderr, /^Cannot read .*nowhere\.ndjson: ENOENT/)
  t.notMatch(down.stderr + wrong.stderr + missing.stderr + triggerDown.stderr, /\n\s+at /, 'no stack trace')
})
