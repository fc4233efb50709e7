import { posix } from 'node:path'
import { VARIABLE_ENTRIES, type VariableSchema } from './check.js'
import type { VariableName } from './variables.js'

/**
 * The documented tables of variables, generated from the one table (config/variables.ts). A table in a Markdown
 * file sits between `<!-- variables: SELECTION … -->` and `<!-- /variables -->`, where SELECTION is `all` or the
 * names it lists (`WEBHOOK_*` for every name with that start); anything in the opening comment after a `(` is a
 * note for the reader of the source. test/unit/plugins/infrastructure/config/docs.test.ts keeps them in step.
 */
const SECTION = /(<!-- variables: ([^(>]*?)\s*(?:\([^>]*)?-->\n)[\s\S]*?(<!-- \/variables -->)/g

const code = (text: string) => `\`${text}\``
const either = (items: string[]) =>
  items.length < 2 ? items.join('') : `${items.slice(0, -1).join(', ')} or ${items.at(-1)}`

function defaultOf (s: VariableSchema): string {
  if (s.default !== undefined) return code(s.default)
  return s.defaultDoc ?? (s.generate ? 'generated outside production' : 'unset')
}

/** What a value must be: the words of the error message, or the values a choice allows. */
function valueOf (s: VariableSchema): string {
  const choices = (s.anyOf as Array<{ const?: unknown }> | undefined)?.map(choice => choice.const)
  if (choices?.every(choice => typeof choice === 'string')) return either(choices.map(code))
  const range = s.unit !== undefined && s.minimum !== undefined ? `, from ${s.minimum} to ${s.maximum}` : ''
  return `${s.description ?? ''}${range}`
}

/** The doc's relative links (written from docs/) as seen from `dir`. */
const relink = (text: string, dir: string) =>
  text.replace(/\]\((?!https?:|#|\/)([^)]+)\)/g, (_, target: string) => `](${posix.relative(dir, `docs/${target}`)})`)

export function selectVariables (selection: string): VariableName[] {
  const names = VARIABLE_ENTRIES.map(([name]) => name)
  if (selection.trim() === 'all') return names
  const chosen = new Set<VariableName>()
  for (const pattern of selection.split(/\s+/).filter(Boolean)) {
    const matches = pattern.endsWith('*')
      ? names.filter(name => name.startsWith(pattern.slice(0, -1)))
      : names.filter(name => name === pattern)
    if (matches.length === 0) throw new Error(`no variable is named ${pattern}`)
    for (const name of matches) chosen.add(name)
  }
  return names.filter(name => chosen.has(name))
}

/** The Markdown table of the `names` variables (in the table's order), for a file in `dir` of the repository. */
export function variablesTable (names: readonly VariableName[], dir = 'docs'): string {
  const rows = VARIABLE_ENTRIES.filter(([name]) => names.includes(name)).map(([name, s]) => {
    const meaning = s.requiredInProduction ? `${s.doc}. Required in production` : s.doc
    return [code(name), defaultOf(s), valueOf(s), relink(meaning, dir)].map(cell => cell.replace(/\|/g, '\\|'))
  })
  return ['| variable | default | value | meaning |', '|---|---|---|---|', ...rows.map(r => `| ${r.join(' | ')} |`)]
    .join('\n') + '\n'
}

/** The Markdown of `file` (a path in the repository) with each of its tables of variables generated afresh. */
export function renderVariableTables (markdown: string, file: string): string {
  return markdown.replace(SECTION, (_, open: string, selection: string, close: string) =>
    open + variablesTable(selectVariables(selection), posix.dirname(file)) + close)
}

/** The selections of the tables of variables in a Markdown text. */
export const variableSelections = (markdown: string): string[] =>
  [...markdown.matchAll(SECTION)].map(match => match[2]!.trim())
