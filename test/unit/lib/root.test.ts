import { existsSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { ROOT, VERSION } from '../../../lib/root.js'

t.test('ROOT is the package root whether the code runs from sources or dist/', async t => {
  const pkg = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')) as { name: string, version: string }
  t.equal(pkg.name, 'marketplace-gateway')
  t.ok(existsSync(join(ROOT, 'lib', 'root.ts')), 'the sources are under it')
  t.equal(VERSION, pkg.version, 'VERSION is the version package.json states')
})
