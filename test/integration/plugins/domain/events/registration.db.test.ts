// The events plugin writes through the records' ingest and the webhooks' fan-out: registered without them, or
// before them, the app fails to start, naming what is missing, instead of storing events without their records.
import Fastify, { type FastifyPluginAsync } from 'fastify'
import t, { type Test } from 'tap'
import { systemClock } from '../../../../../lib/clock.js'
import events from '../../../../../plugins/domain/events/index.js'
import mcp from '../../../../../plugins/domain/mcp/index.js'
import records from '../../../../../plugins/domain/records/index.js'
import webhooks from '../../../../../plugins/domain/webhooks/index.js'
import configPlugin from '../../../../../plugins/infrastructure/config/index.js'
import db from '../../../../../plugins/infrastructure/db/index.js'
import { testConfig } from '../../../../support/helper.js'

/** Registers the plugins in the order given, after the configuration and the database; the first failure. */
async function register (t: Test, plugins: FastifyPluginAsync[]): Promise<unknown> {
  const app = Fastify()
  app.decorate('clock', systemClock)
  t.teardown(() => app.close())
  try {
    await app.register(configPlugin, { config: testConfig(t, { WEBHOOK_WORKER: 'false' }) })
    await app.register(db)
    for (const plugin of plugins) await app.register(plugin)
    await app.ready()
    return undefined
  } catch (err) {
    return err
  }
}

t.test('without records, events fail to register', async t => {
  t.match(await register(t, [webhooks, events]),
    { message: "The dependency 'records' of plugin 'events' is not registered" })
})

t.test('before records, events fail to register', async t => {
  t.match(await register(t, [mcp, webhooks, events, records]),
    { message: "The dependency 'records' of plugin 'events' is not registered" })
})

t.test('before webhooks, events fail to register', async t => {
  t.match(await register(t, [mcp, records, events, webhooks]),
    { message: "The dependency 'webhooks' of plugin 'events' is not registered" })
})

t.test('after both, events register', async t => {
  t.equal(await register(t, [mcp, records, webhooks, events]), undefined)
})
