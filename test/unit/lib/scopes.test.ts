import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import t from 'tap'
import { ROOT } from '../../../lib/root.js'
import { describeScope, isKnownScope, KNOWN_SCOPES, PLANNED_SCOPES, WIRED_SCOPES } from '../../../lib/scopes.js'

const RESOURCES = ['bom', 'workOrder', 'recipe', 'qualityInspection', 'subcontractOrder']
const VERBS = ['read', 'create', 'update', 'delete']

t.test('the registry is the one docs/rules.md#scopes lists', async t => {
  t.same(Object.keys(WIRED_SCOPES).sort(), ['bills:read', 'customers:read', 'invoices:read'])
  t.same(Object.keys(PLANNED_SCOPES).sort(),
    [...RESOURCES.flatMap(r => VERBS.map(v => `${r}:${v}`)), 'manufacturingReport:read'].sort())
  t.same(KNOWN_SCOPES, { ...WIRED_SCOPES, ...PLANNED_SCOPES })
  t.notOk(Object.keys(WIRED_SCOPES).some(s => s in PLANNED_SCOPES), 'wired and planned are apart')
  const section = readFileSync(join(ROOT, 'docs/rules.md'), 'utf8').split('\n## Scopes\n')[1]!.split('\n## ')[0]!
  for (const scope of Object.keys(WIRED_SCOPES)) t.match(section, `\`${scope}\``, `the rules name ${scope}`)
  for (const resource of RESOURCES) t.match(section, `\`${resource}\``, `the rules name ${resource}`)
  t.match(section, '`manufacturingReport:read`')
})

t.test('known scopes, and what is not one', async t => {
  for (const scope of Object.keys(KNOWN_SCOPES)) t.ok(isKnownScope(scope), scope)
  for (const scope of ['', 'invoices', 'invoices:write', 'Invoices:read', 'invoices:read ', 'bom:list',
    'manufacturingReport:create', 'toString', 'constructor', '__proto__', 'hasOwnProperty']) {
    t.notOk(isKnownScope(scope), JSON.stringify(scope))
  }
})

t.test('the consent page words', async t => {
  t.equal(describeScope('invoices:read'), 'Read your invoices')
  t.equal(describeScope('customers:read'), 'Read your customers')
  t.equal(describeScope('workOrder:update'), 'Update your work orders')
  t.equal(describeScope('qualityInspection:delete'), 'Delete your quality inspections')
  t.equal(describeScope('manufacturingReport:read'), 'Read your manufacturing reports')
  t.equal(describeScope('made:up'), 'made:up', 'an unknown scope is shown as it is')
  for (const [scope, words] of Object.entries(KNOWN_SCOPES)) {
    t.match(words, /^(Read|Create|Update|Delete) your [a-z ]+$/, `${scope}: ${words}`)
  }
})
