// `openapi`, the built command: it writes the document to a file without a server (npm run openapi).
import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync, rmSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { cli } from '../support/processes.js'

t.test('npm run openapi writes the document without a server', async t => {
  const dir = mkdtempSync(join(tmpdir(), 'mg-openapi-test-'))
  t.teardown(() => rmSync(dir, { recursive: true, force: true }))
  const out = join(dir, 'openapi.json')
  execFileSync(...cli('openapi', '--out', out), {
    env: { ...process.env, DATABASE_URL: '', DATA_DIR: dir, LOG_LEVEL: 'silent' },
    stdio: 'pipe'
  })
  const doc = JSON.parse(readFileSync(out, 'utf8'))
  t.equal(doc.openapi, '3.1.0')
  t.ok(doc.paths['/public/v1/me'])
})
