import type { TSchema } from '@sinclair/typebox'
import { Value } from '@sinclair/typebox/value'
import { fieldName, type Entry, type Range } from './kinds.js'
import { VARIABLES, type VariableName, type Variables } from './variables.js'

export type Problem = [variable: string, problem: string]

export type VariableSchema = TSchema & Entry & Range
/** The table's entries, in its order (which is the order problems are reported in). */
export const VARIABLE_ENTRIES = Object.entries(VARIABLES) as Array<[VariableName, VariableSchema]>

/** A connection URL fit for a log line: the password replaced by ***. */
export function maskUrl (url: string): string {
  try {
    const u = new URL(url)
    if (u.password) u.password = '***'
    return u.toString()
  } catch {
    return url.replace(/\/\/([^:/@]*):[^@/]*@/, '//$1:***@')
  }
}

/** How a bad value is echoed: secrets by length only, URLs without their password. */
function echo (name: VariableName, value: string): string {
  if (VARIABLES[name].secret) return `a value of ${value.length} characters`
  return JSON.stringify(/_URL$/.test(name) ? maskUrl(value) : value)
}

/** The problem with a value, judged on its own, or undefined. */
function shapeProblem (name: VariableName, schema: VariableSchema, value: string): string | undefined {
  if (!Value.Check(schema, value)) return `must be ${schema.description ?? 'valid'} (got ${echo(name, value)})`
}

function rangeProblem (name: VariableName, schema: VariableSchema, value: string): string | undefined {
  const { minimum, maximum = Infinity, unit } = schema
  const n = Number(value)
  if (minimum === undefined || (n >= minimum && n <= maximum)) return undefined
  // An integer's description names its range; a decimal's names only its unit.
  return unit
    ? `must be from ${minimum} to ${maximum} ${unit} (got ${n})`
    : `must be ${schema.description} (got ${echo(name, value)})`
}

/** The problem with one value, judged on its own (its shape, then its range), or undefined. */
export function valueProblem (name: VariableName, value: string): string | undefined {
  const schema = VARIABLES[name] as VariableSchema
  return shapeProblem(name, schema, value) ?? rangeProblem(name, schema, value)
}

/**
 * The variables as set (empty counts as unset), each checked on its own against its schema: every bad one is
 * reported, and left out, so that the checks after this one judge the rest of the configuration on its defaults.
 * Then every field decoded, defaults filled in.
 */
export function readVariables (
  env: Record<string, string | undefined>,
  problems: Problem[]
): { given: Partial<Record<VariableName, string>>, variables: Variables } {
  const given: Partial<Record<VariableName, string>> = {}
  for (const [name] of VARIABLE_ENTRIES) {
    const value = env[name]
    if (value !== undefined && value !== '') given[name] = value
  }
  const bad = new Map<VariableName, string>()
  for (const check of [shapeProblem, rangeProblem]) {
    for (const [name, schema] of VARIABLE_ENTRIES) {
      const value = given[name]
      const problem = value === undefined || bad.has(name) ? undefined : check(name, schema, value)
      if (problem !== undefined) bad.set(name, problem)
    }
  }
  for (const [name, problem] of bad) {
    problems.push([name, problem])
    delete given[name]
  }
  const variables = Object.fromEntries(VARIABLE_ENTRIES.map(([name, schema]) => {
    const value = given[name] ?? schema.default
    return [fieldName(name), value === undefined ? undefined : Value.Decode(schema, value)]
  }))
  return { given, variables: variables as Variables }
}
