import { rmSync } from 'node:fs'
import { dirname } from 'node:path'
import { buildApp, type AppInstance } from '../app.js'
import { sampleRecord } from '../cli/sandbox.js'
import { loadConfig } from '../plugins/infrastructure/config/index.js'
import { RECORD_SAMPLES } from '../schemas/records.js'
import type { Installed } from '../test/support/helper.js'
import { benchDatabase, devSecrets, discard, tempDir, testHelpers, type Cleanup } from './lib.js'
import { startReceiver, type ReceiverProcess } from './processes.js'

export const TOPIC = 'invoice.paid'

/**
 * The `data` of an invoice.paid event as a producer sends it since records are checked: the schema's example
 * invoice, paid, with the id `inv_<n>` and changed `at` (now by default).
 */
export function paidInvoice (n: number | string, at = new Date().toISOString()): Record<string, unknown> {
  return { ...sampleRecord(TOPIC, RECORD_SAMPLES, at)!, id: `inv_${n}` }
}

/**
 * What the webhook benchmarks start from: a fresh database, the HTTPS receiver in a process of its own, and one
 * install (of `tenant` when given) with `subscriptions` subscriptions to it (`/hooks/0`, `/hooks/1`, …) for `topics`
 * (default: TOPIC), made by a setup app on the same database and keys; `prepare` does more with that app (and the
 * install), which is closed before anything is measured. `env` starts a service or worker on all of it, with the
 * setup's development secrets as production secrets.
 */
export async function webhookFixture<T = void> (cleanups: Cleanup[], opts: {
  prefix: string
  subscriptions: number
  publicBaseUrl: string
  topics?: string[]
  tenant?: { orgRefId: string, entityRefId: string }
  prepare?: (app: AppInstance, installed: Installed) => Promise<T>
}): Promise<{
  databaseUrl: string
  receiver: ReceiverProcess
  tenant: Installed
  eventsToken: string
  env: Record<string, string>
  prepared: T
}> {
  const { install, selfSigned } = await testHelpers()
  const database = await benchDatabase(opts.prefix)
  cleanups.push(database.drop)
  const tls = selfSigned()
  cleanups.push(() => rmSync(dirname(tls.caFile), { recursive: true, force: true }))
  const receiver = await startReceiver(tls)
  cleanups.push(() => receiver.stop())

  const dataDir = tempDir(`${opts.prefix}-`, cleanups)
  const env = {
    DATA_DIR: dataDir,
    DATABASE_URL: database.url,
    PUBLIC_BASE_URL: opts.publicBaseUrl,
    WEBHOOK_ALLOW_PRIVATE_TARGETS: 'true',
    WEBHOOK_CA_FILE: tls.caFile
  }
  const setup = await buildApp({ ...loadConfig(env), webhookWorker: false, logLevel: 'warn' }, { logStream: discard() })
  try {
    await setup.ready()
    const tenant = await install(setup, opts.tenant ?? {})
    for (let k = 0; k < opts.subscriptions; k++) {
      const res = await setup.inject({
        method: 'POST',
        url: `/public/v1/orgs/${tenant.orgRefId}/entities/${tenant.entityRefId}/webhooks`,
        headers: { authorization: `Bearer ${tenant.accessToken}`, 'content-type': 'application/json' },
        payload: { topics: opts.topics ?? [TOPIC], target_url: `https://127.0.0.1:${receiver.port}/hooks/${k}` }
      })
      if (res.statusCode !== 201) throw new Error(`subscribe: ${res.statusCode} ${res.body}`)
    }
    const prepared = opts.prepare ? await opts.prepare(setup, tenant) : (undefined as T)
    return {
      databaseUrl: database.url,
      receiver,
      tenant,
      eventsToken: setup.config.eventsToken,
      env: { ...devSecrets(dataDir), ...env },
      prepared
    }
  } finally {
    await setup.close()
  }
}
