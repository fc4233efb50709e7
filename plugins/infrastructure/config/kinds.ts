import { resolve } from 'node:path'
import { Type, type StaticDecode, type TSchema, type TUnsafe } from '@sinclair/typebox'

/**
 * What a variable's entry says besides its TypeBox type. The schema checks the value as the operator writes it (a
 * string) and decodes it into the configuration's field; its `description` completes "must be …" in an error.
 */
export interface Entry {
  /** What the variable does: the meaning column of the documented tables. */
  doc: string
  /** The value as the operator would write it, used when the variable is unset. */
  default?: string
  /** A default computed from other values, described for the docs (`default` is then left out). */
  defaultDoc?: string
  /** Echoed by its length only in an error. */
  secret?: boolean
  /** Made up outside production and kept in DATA_DIR; production refuses to start without it. */
  generate?: () => string
  /** Why production refuses to start without it. */
  requiredInProduction?: string
}

/** The extra keywords the range check reads: numbers written as strings are compared after decoding. */
export interface Range {
  minimum?: number
  maximum?: number
  /** Set on decimals, whose description does not name the range: an error then names it in this unit. */
  unit?: string
}

function entry<S extends TSchema, E extends Entry> (schema: S, e: E): S & E {
  return Object.assign(schema, e)
}

/** A string as it is, with its own rules. */
export function Text<E extends Entry> (rules: { minLength?: number, pattern?: string, description?: string }, e: E) {
  return entry(Type.String(rules), e)
}

export function Url<E extends Entry> (e: E) {
  return Text({ pattern: '^https?://[^\\s]+$', description: 'an absolute http(s) URL' }, e)
}

/** A directory, used resolved: wherever the process changes to later, it names the same place. */
export function Path<E extends Entry> (e: E) {
  const schema = Type.String({ minLength: 1, description: 'a directory' })
  return entry(Type.Transform(schema).Decode(path => resolve(path)).Encode(path => path), e)
}

export function Int<E extends Entry> (minimum: number, maximum: number, e: E) {
  const description = `an integer from ${minimum} to ${maximum}`
  const schema = Type.String({ pattern: '^[0-9]+$', description, minimum, maximum })
  return entry(Type.Transform(schema).Decode(Number).Encode(String), e)
}

/** A number with decimals allowed, in `unit`, and within `range` when given. */
export function Decimal<E extends Entry> (unit: string, range: { minimum: number, maximum: number } | undefined, e: E) {
  const description = `a number of ${unit} (decimals allowed)`
  const schema = Type.String({ pattern: '^[0-9]+(\\.[0-9]+)?$', description, unit, ...range })
  return entry(Type.Transform(schema).Decode(Number).Encode(String), e)
}

export function Flag<E extends Entry> (e: E) {
  const schema = Type.Union(
    [Type.Literal('true'), Type.Literal('false'), Type.Literal('1'), Type.Literal('0')],
    { description: 'true or false' }
  )
  return entry(Type.Transform(schema)
    .Decode(value => value === 'true' || value === '1')
    .Encode(value => value ? 'true' : 'false'), e)
}

export function OneOf<const L extends readonly string[], E extends Entry> (
  values: L,
  e: E,
  description = `one of ${values.join(', ')}`
) {
  // A union made from an array has no static type of its own (TypeBox types tuples): it is the values' union.
  const schema = Type.Union(values.map(v => Type.Literal(v)), { description }) as unknown as TUnsafe<L[number]>
  return entry(Type.Transform(schema).Decode(value => value).Encode(value => value), e)
}

/** A comma-separated list; each item decoded by `item`, left out where that gives undefined. */
export function List<T, E extends Entry> (
  rules: { pattern?: string, description: string },
  item: (text: string) => T | undefined,
  e: E
) {
  return entry(Type.Transform(Type.String(rules))
    .Decode(value => value.split(',').map(item).filter((x): x is T => x !== undefined))
    .Encode(items => items.join(',')), e)
}

/** `DATABASE_STARTUP_WAIT_SECONDS` → `databaseStartupWaitSeconds`: the configuration's field of a variable. */
export type FieldName<S extends string> = S extends `${infer Head}_${infer Tail}`
  ? `${Lowercase<Head>}${Capitalize<FieldName<Tail>>}`
  : Lowercase<S>

export const fieldName = <S extends string>(variable: S) =>
  variable.toLowerCase().replace(/_([a-z0-9])/g, (_, c: string) => c.toUpperCase()) as FieldName<S>

/** The decoded fields of a table of variables: a variable without a default may be undefined. */
export type Fields<Table extends Record<string, TSchema & Entry>> = {
  -readonly [V in keyof Table & string as FieldName<V>]:
  StaticDecode<Table[V]> | (Table[V] extends { default: string } ? never : undefined)
}
