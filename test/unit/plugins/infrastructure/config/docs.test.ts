import { readdirSync, readFileSync, writeFileSync } from 'node:fs'
import t from 'tap'
import {
  renderVariableTables, selectVariables, variableSelections, variablesTable
} from '../../../../../plugins/infrastructure/config/docs.js'
import { VARIABLES } from '../../../../../plugins/infrastructure/config/variables.js'

const root = new URL('../../../../../', import.meta.url)
const files = ['README.md', ...readdirSync(new URL('docs/', root)).filter(f => f.endsWith('.md')).map(f => `docs/${f}`)]
const read = (file: string) => readFileSync(new URL(file, root), 'utf8')
const REWRITE = 'npx tap --snapshot test/unit/plugins/infrastructure/config/docs.test.ts'

t.test('every documented table of variables is the one generated from config/variables.ts', async t => {
  for (const file of files) {
    const text = read(file)
    const generated = renderVariableTables(text, file)
    // `tap --snapshot` (TAP_SNAPSHOT=1) writes the tables, as it writes snapshots.
    if (t.writeSnapshot && generated !== text) writeFileSync(new URL(file, root), generated)
    else t.equal(text, generated, `${file} as generated (${REWRITE} rewrites it)`)
  }
})

t.test('one table documents every variable, with its default', async t => {
  const complete = files.flatMap(file => variableSelections(read(file)).filter(s => s === 'all').map(() => file))
  t.same(complete, ['docs/rules.md'])
  const table = variablesTable(selectVariables('all'))
  for (const [name, schema] of Object.entries(VARIABLES)) {
    const row = table.split('\n').find(line => line.startsWith(`| \`${name}\` |`))
    t.ok(row, `${name} is documented`)
    if ('default' in schema) t.match(row, `| \`${name}\` | \`${schema.default}\` |`, `${name}'s default`)
  }
  t.equal(table.trim().split('\n').length, Object.keys(VARIABLES).length + 2, 'and nothing else')
})

t.test('no hand-written table lists a variable outside the generated ones', async t => {
  const names = new Set(Object.keys(VARIABLES))
  for (const file of files) {
    const outside = read(file).replace(/<!-- variables:[\s\S]*?<!-- \/variables -->/g, '')
    const rows = outside.split('\n').filter(line => [...line.matchAll(/^\| `([A-Z_]+)`/g)].some(m => names.has(m[1]!)))
    t.same(rows, [], file)
  }
})

t.test('a selection names variables that exist', async t => {
  t.same(selectVariables('PORT WEBHOOK_REPLAY_*'), ['PORT', 'WEBHOOK_REPLAY_LIMIT'])
  t.throws(() => selectVariables('PORT NO_SUCH_VARIABLE'), /no variable is named NO_SUCH_VARIABLE/)
})
