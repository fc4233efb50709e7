import { execFile } from 'node:child_process'
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { promisify } from 'node:util'
import t from 'tap'
import { ROOT } from '../../lib/root.js'
import { build } from '../support/helper.js'
import { untapped } from '../support/processes.js'

const run = promisify(execFile)
const bin = (name: string) => join(ROOT, 'node_modules', '.bin', name)

/**
 * The linters app developers point at API documents, over the one this service serves, with the configurations
 * committed at the root (redocly.yaml, .spectral.yaml; each rule switched off there says why).
 */
t.test('Redocly and Spectral find nothing in the OpenAPI document', async t => {
  const app = await build(t)
  const doc = (await app.inject({ method: 'GET', url: '/public/v1/openapi.json' })).body
  const file = join(mkdtempSync(join(tmpdir(), 'mg-openapi-lint-')), 'openapi.json')
  writeFileSync(file, doc)

  const redocly = await run(...untapped(bin('redocly'), 'lint', file, '--format=json'), {
    cwd: ROOT,
    maxBuffer: 1 << 24
  }).catch((err: { stdout: string }) => err)
  const report = JSON.parse(redocly.stdout) as { totals: Record<string, number>, problems: Array<{ message: string }> }
  t.same(report.problems.map(p => p.message), [], 'Redocly: no problems')
  t.same(report.totals, { errors: 0, warnings: 0, ignored: 0 })

  // --fail-severity hint: any finding at all fails the run.
  const spectral = await run(...untapped(bin('spectral'), 'lint', file, '--format', 'json', '--fail-severity',
    'hint'), {
    cwd: ROOT,
    maxBuffer: 1 << 24
  }).catch((err: { stdout: string, code: number }) => err)
  const findings = JSON.parse(spectral.stdout.slice(0, spectral.stdout.lastIndexOf(']') + 1)) as Array<Json>
  t.same(findings.map(f => `${f.code}: ${f.message} at ${(f.path as string[]).join('.')}`), [], 'Spectral: no findings')
  t.notOk('code' in spectral, 'Spectral exits 0')
})

type Json = Record<string, unknown>
