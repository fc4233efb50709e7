import { Batch, CommandError, eventsClient, MAX_BATCH, plural, refusal, refusalHint } from './events-client.js'
import { Progress, type ProgressStream } from './progress.js'
import { sandboxRecords, SandboxTally, type SandboxOptions, type SandboxSummary } from './sandbox.js'

/**
 * `marketplace-gateway sandbox seed`: the sandbox's events (cli/sandbox.ts) through the running service's
 * POST /events in batches of 100, the same path as the accounting system's, so subscribers receive them too.
 */

export interface SeedOptions extends SandboxOptions {
  base: string
  token: string
  out?: ProgressStream
  err?: ProgressStream
}

/** The summary's lines after the first: what the tenant now holds, and how to read it. */
export function describeSandbox (s: SandboxSummary, opts: { org: string, entity: string, base: string }): string {
  const { customers: c, invoices: i, bills: b } = s
  const path = `/public/v1/orgs/${encodeURIComponent(opts.org)}/entities/${encodeURIComponent(opts.entity)}`
  const width = String(Math.max(c.total, i.total, b.total)).length
  const n = (v: number) => String(v).padStart(width)
  return [
    `  customers ${n(c.total)}  (${c.active} active, ${c.archived} archived)`,
    `  invoices  ${n(i.total)}  (${i.draft} draft, ${i.authorised} authorised of which ${i.overdue} overdue, ` +
      `${i.paid} paid of which ${i.paidLate} late, ${i.voided} voided)`,
    `  bills     ${n(b.total)}  (${b.draft} draft, ${b.authorised} authorised of which ${b.overdue} overdue, ` +
      `${b.paid} paid of which ${b.paidLate} late)`,
    'Every event has an id of its own content: the same command again (the same --as-of) changes nothing.',
    'Next, read them with the access token of an install of this tenant with invoices:read (README.md, ' +
      '"The whole journey by hand", steps 1 to 4):',
    `  curl -s '${opts.base.replace(/\/+$/, '')}${path}/invoices?limit=5' -H "Authorization: Bearer $ACCESS_TOKEN"`
  ].join('\n')
}

export async function seedSandbox (opts: SeedOptions): Promise<SandboxSummary> {
  const out = opts.out ?? process.stdout
  const began = performance.now()
  const post = eventsClient(opts.base, opts.token)
  const total = opts.customers + opts.invoices + opts.bills
  const progress = new Progress({ unit: 'records', total, stream: opts.err ?? process.stderr })
  const tally = new SandboxTally(opts.asOf)
  const batch = new Batch<null>(MAX_BATCH)
  let complete = 0
  let deliveries = 0
  let batches = 0

  const flush = async (): Promise<void> => {
    const answer = await post(batch.body())
    if (!answer.ok) {
      progress.end()
      const done = batches > 0
        ? ` ${plural(batches, 'batch', 'batches')} before it went in; running the command again sends them again ` +
          'harmlessly.'
        : ''
      const details = (answer.json?.details ?? []).map(d => `\n  ${d.path ?? ''} ${d.message ?? ''}`).join('')
      throw new CommandError(`The service refused a batch of the sandbox's events (${refusal(answer)}).` +
        refusalHint(answer) + done + details)
    }
    batches++
    deliveries += answer.accepted.reduce((s, a) => s + a.deliveries, 0)
    batch.clear()
    progress.update(complete)
  }

  for (const record of sandboxRecords(opts)) {
    for (const event of record.events) {
      const text = JSON.stringify(event)
      if (!batch.fits(text)) await flush()
      batch.add(text, null)
      if (batch.items.length === batch.size) await flush()
    }
    tally.add(record)
    complete++
  }
  if (batch.items.length > 0) await flush()
  progress.update(total)
  progress.end()

  const s = tally.summary
  const seconds = ((performance.now() - began) / 1000).toFixed(1)
  out.write(`Sandbox of ${opts.org} / ${opts.entity} as of ${opts.asOf}: ${plural(s.events, 'event')} in ` +
    `${plural(batches, 'batch', 'batches')} to ${opts.base} (${seconds} s), ` +
    `${plural(deliveries, 'webhook delivery', 'webhook deliveries')} queued.\n` +
    describeSandbox(s, opts) + '\n')
  return s
}
