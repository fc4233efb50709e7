import { rmSync } from 'node:fs'
import { dirname } from 'node:path'
import { buildApp } from '../app.js'
import { loadConfig } from '../plugins/config.js'
import { benchDatabase, devSecrets, discard, tempDir, testHelpers, type Cleanup } from './lib.js'
import { startReceiver, type ReceiverProcess } from './processes.js'

export const TOPIC = 'invoice.paid'

/**
 * What the webhook benchmarks start from: a fresh database, the HTTPS receiver in a process of its own, and one
 * install with `subscriptions` subscriptions to it (`/hooks/0`, `/hooks/1`, …), made by a setup app on the same
 * database and keys, closed before anything is measured. `env` starts a service or worker on all of it, with the
 * setup's development secrets as production secrets.
 */
export async function webhookFixture (cleanups: Cleanup[], opts: {
  prefix: string
  subscriptions: number
  publicBaseUrl: string
}): Promise<{
  databaseUrl: string
  receiver: ReceiverProcess
  tenant: { orgRefId: string, entityRefId: string }
  eventsToken: string
  env: Record<string, string>
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
    const tenant = await install(setup)
    for (let k = 0; k < opts.subscriptions; k++) {
      const res = await setup.inject({
        method: 'POST',
        url: `/public/v1/orgs/${tenant.orgRefId}/entities/${tenant.entityRefId}/webhooks`,
        headers: { authorization: `Bearer ${tenant.accessToken}`, 'content-type': 'application/json' },
        payload: { topics: [TOPIC], target_url: `https://127.0.0.1:${receiver.port}/hooks/${k}` }
      })
      if (res.statusCode !== 201) throw new Error(`subscribe: ${res.statusCode} ${res.body}`)
    }
    return {
      databaseUrl: database.url,
      receiver,
      tenant,
      eventsToken: setup.config.eventsToken,
      env: { ...devSecrets(dataDir), ...env }
    }
  } finally {
    await setup.close()
  }
}
