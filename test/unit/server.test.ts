// The start banner (server.ts, newcomerBanner): what a person reads after `npm start`.
import { mkdtempSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { loadConfig } from '../../plugins/infrastructure/config/index.js'
import { newcomerBanner } from '../../server.js'

const banner = (env: Record<string, string>) =>
  newcomerBanner(loadConfig(env), 'http://127.0.0.1:3000', 'http://127.0.0.1:3000/dashboard/sign-in?token=x', undefined)
const secretsLines = (text: string) => text.split('\n').filter(l => l.startsWith('  dev secrets'))

t.test('the banner says the development secrets were generated on the start that made them, and only then',
  async t => {
    const dir = mkdtempSync(join(tmpdir(), 'mg-banner-'))
    const file = join(dir, 'dev-secrets.json')
    t.same(secretsLines(banner({ DATA_DIR: dir })), [
      `  dev secrets     generated into ${file} (TOKEN_SIGNING_KEY, USER_SESSION_SECRET, WEBHOOK_SECRET_KEY, ` +
        'EVENTS_TOKEN)'
    ], 'the first start')
    t.same(secretsLines(banner({ DATA_DIR: dir })), [
      `  dev secrets     from ${file} (TOKEN_SIGNING_KEY, USER_SESSION_SECRET, WEBHOOK_SECRET_KEY, EVENTS_TOKEN)`
    ], 'a restart reuses them')
    const set = loadConfig({ DATA_DIR: dir })
    const configured = {
      DATA_DIR: dir,
      TOKEN_SIGNING_KEY: set.tokenSigningKey,
      USER_SESSION_SECRET: set.userSessionSecret,
      WEBHOOK_SECRET_KEY: set.webhookSecretKey.toString('hex'),
      EVENTS_TOKEN: set.eventsToken
    }
    t.same(secretsLines(banner(configured)), [], 'all of them set: no line')
  })
