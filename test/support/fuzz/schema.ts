import fc from 'fast-check'

/** The part of JSON Schema the route and tool schemas use (TypeBox output, and the OpenAPI document's copy). */
export interface JsonSchema {
  type?: string | string[]
  properties?: Record<string, JsonSchema>
  required?: string[]
  additionalProperties?: boolean | JsonSchema
  patternProperties?: Record<string, JsonSchema>
  items?: JsonSchema
  minItems?: number
  maxItems?: number
  uniqueItems?: boolean
  minLength?: number
  maxLength?: number
  pattern?: string
  format?: string
  enum?: unknown[]
  const?: unknown
  minimum?: number
  maximum?: number
  anyOf?: JsonSchema[]
  oneOf?: JsonSchema[]
  allOf?: JsonSchema[]
}

/** Good values for fields by name (placeholders such as «org» are filled in when the request is sent). */
export type Hints = Record<string, fc.Arbitrary<unknown>>

const SMALL = 40

/** Strings at and past the edges: lengths, NUL, lone surrogates, direction marks, injection-looking text. */
export function edgeString (schema: JsonSchema = {}): fc.Arbitrary<string> {
  const max = schema.maxLength ?? 100
  const min = schema.minLength ?? 0
  return fc.oneof(
    fc.constantFrom(
      '',
      ' ',
      'a'.repeat(max),
      'a'.repeat(max + 1),
      'a'.repeat(Math.max(0, min - 1)),
      'x'.repeat(10_000),
      '\u0000',
      'a\u0000b',
      '\ud800',
      'x\udc00',
      '\u202e\u2066',
      '\ufeff',
      '😀'.repeat(60),
      'é'.repeat(max),
      '\r\n\t',
      '<script>alert(1)</script>',
      "' OR '1'='1' --",
      '%00',
      '%E0%A4%A',
      '../../etc/passwd',
      '\\',
      'null',
      '0',
      '-1',
      '1e309',
      'NaN',
      'true',
      '[]',
      '{}',
      '__proto__',
      'https://',
      'https://[::1]/',
      'https://user:pw@93.184.216.34/x',
      'https://93.184.216.34/' + 'p'.repeat(2048)
    ),
    fc.string({ unit: 'binary', maxLength: SMALL }),
    fc.string({ unit: 'grapheme', maxLength: SMALL })
  )
}

/** Any JSON value of a type the schema does not expect (or, by chance, does: that is fine too). */
export function wrongType (): fc.Arbitrary<unknown> {
  return fc.oneof(
    fc.integer(),
    fc.double(),
    fc.boolean(),
    fc.constant(null),
    fc.array(fc.nat(), { maxLength: 3 }),
    fc.constant({}),
    fc.dictionary(fc.string({ maxLength: 5 }), fc.jsonValue({ maxDepth: 1 }), { maxKeys: 3 }),
    fc.string({ maxLength: 10 }),
    fc.constant(2 ** 53 + 1),
    fc.constant(-0),
    fc.constant(1e308)
  )
}

/**
 * A value nested `depth` levels deep, in arrays or objects. Deeper than JSON.stringify can write (it recurses), so
 * it stands as a marker string that `toJson` expands in the text; the marker also reads well in a reproducer.
 */
export const deep = (depth: number, kind: 'array' | 'object'): string => `⟦deep:${kind}:${depth}⟧`

/** JSON text of a value, with the `deep` markers expanded. */
export function toJson (value: unknown): string {
  const text = JSON.stringify(value) ?? 'null'
  return text.replace(/"⟦deep:(array|object):(\d+)⟧"/g, (_m, kind: string, n: string) => {
    const depth = Number(n)
    return kind === 'array' ? '['.repeat(depth) + ']'.repeat(depth) : '{"a":'.repeat(depth) + '1' + '}'.repeat(depth)
  })
}

const first = <T>(xs: T[] | undefined): T | undefined => (xs && xs.length > 0 ? xs[0] : undefined)

function typeOf (schema: JsonSchema): string | undefined {
  return Array.isArray(schema.type) ? first(schema.type) : schema.type
}

/** Values that satisfy the schema (mostly: patterns and formats are approximated), mixed with the hints. */
export function valid (schema: JsonSchema, hints: Hints = {}, name?: string): fc.Arbitrary<unknown> {
  const base = validBase(schema, hints)
  const hint = name === undefined ? undefined : hints[name]
  return hint ? fc.oneof({ arbitrary: hint, weight: 4 }, { arbitrary: base, weight: 1 }) : base
}

function validBase (schema: JsonSchema, hints: Hints): fc.Arbitrary<unknown> {
  if ('const' in schema) return fc.constant(schema.const)
  if (schema.enum) return fc.constantFrom(...schema.enum)
  const alternatives = schema.anyOf ?? schema.oneOf
  if (alternatives && alternatives.length > 0) return fc.oneof(...alternatives.map(s => valid(s, hints)))
  if (schema.allOf && schema.allOf.length > 0) return valid(schema.allOf[0]!, hints)
  switch (typeOf(schema)) {
    case 'string': {
      const minLength = schema.minLength ?? 0
      const maxLength = Math.min(schema.maxLength ?? SMALL, Math.max(minLength, SMALL))
      if (schema.pattern) return fc.stringMatching(new RegExp(schema.pattern))
      if (schema.format === 'date-time') {
        return fc.date({ noInvalidDate: true, min: new Date(0), max: new Date(4e12) }).map(d => d.toISOString())
      }
      return fc.oneof(
        fc.string({ minLength, maxLength }),
        fc.string({ unit: 'grapheme', minLength, maxLength })
      )
    }
    case 'integer':
      return fc.integer({ min: schema.minimum ?? -1_000_000, max: schema.maximum ?? 1_000_000 })
    case 'number':
      return fc.double({ min: schema.minimum ?? -1e6, max: schema.maximum ?? 1e6, noNaN: true })
    case 'boolean':
      return fc.boolean()
    case 'null':
      return fc.constant(null)
    case 'array': {
      const item = valid(schema.items ?? {}, hints)
      const constraints = { minLength: schema.minItems ?? 0, maxLength: Math.min(schema.maxItems ?? 5, 5) }
      return schema.uniqueItems
        ? fc.uniqueArray(item, { ...constraints, selector: v => JSON.stringify(v) })
        : fc.array(item, constraints)
    }
    case 'object':
      return validObject(schema, hints)
    default:
      return fc.jsonValue({ maxDepth: 2 })
  }
}

function validObject (schema: JsonSchema, hints: Hints): fc.Arbitrary<Record<string, unknown>> {
  const props = schema.properties ?? {}
  const record = fc.record(
    Object.fromEntries(Object.entries(props).map(([k, s]) => [k, valid(s, hints, k)])),
    { requiredKeys: (schema.required ?? []).filter(k => k in props) }
  ) as fc.Arbitrary<Record<string, unknown>>
  if (!schema.patternProperties && schema.additionalProperties !== true) return record
  const extra = fc.dictionary(fc.string({ maxLength: 8 }), fc.jsonValue({ maxDepth: 2 }), { maxKeys: 4 })
  return fc.tuple(extra, record).map(([e, r]) => ({ ...e, ...r }))
}

/** Values of one field that break it: a wrong type, an edge string, an edge array, a deep value. */
export function broken (schema: JsonSchema): fc.Arbitrary<unknown> {
  const type = typeOf(schema)
  const options: Array<fc.Arbitrary<unknown>> = [wrongType()]
  if (type === 'string' || type === undefined) options.push(edgeString(schema))
  if (type === 'array') {
    const item = schema.items ?? {}
    const over = (schema.maxItems ?? 50) + 1
    options.push(
      fc.constant([]),
      valid(item).map(v => Array.from({ length: over }, () => v)),
      valid(item).map(v => [v, v]),
      fc.array(wrongType(), { minLength: 1, maxLength: 3 }),
      fc.array(edgeString(item), { minLength: 1, maxLength: 3 })
    )
  }
  if (type === 'integer' || type === 'number') {
    const lo = schema.minimum ?? 0
    const hi = schema.maximum ?? 1000
    options.push(fc.constantFrom(lo - 1, hi + 1, lo, hi, 0.5, -1, 2 ** 31, 2 ** 63, '1', '', '01'))
  }
  if (type === 'object' || type === undefined) {
    options.push(
      fc.constantFrom(deep(100, 'object'), deep(5_000, 'object'), deep(5_000, 'array'), deep(20_000, 'array')),
      fc.constant(JSON.parse('{"__proto__":{"polluted":true}}'))
    )
  }
  return fc.oneof(...options)
}

/** A good object (valid by default) with one thing wrong: a field missing, one too many, or one field broken. */
export function mutated (
  schema: JsonSchema,
  hints: Hints,
  good: fc.Arbitrary<unknown> = valid(schema, hints)
): fc.Arbitrary<unknown> {
  const props = Object.entries(schema.properties ?? {})
  return good.chain(v => {
    if (typeof v !== 'object' || v === null || Array.isArray(v)) return fc.constant(v)
    const obj = v as Record<string, unknown>
    const keys = Object.keys(obj)
    const extraKey = fc.oneof(
      fc.constantFrom('__proto__', 'constructor', 'prototype', 'extra', '', '\u0000', 'x'.repeat(1000)),
      fc.string({ maxLength: 10 })
    )
    const options: Array<fc.Arbitrary<unknown>> = [
      fc.tuple(extraKey, fc.jsonValue({ maxDepth: 2 })).map(([k, x]) => ({ ...obj, [k]: x }))
    ]
    if (keys.length > 0) {
      options.push(fc.constantFrom(...keys).map(k => Object.fromEntries(Object.entries(obj).filter(([x]) => x !== k))))
    }
    if (props.length > 0) {
      options.push(
        fc.constantFrom(...props).chain(([k, s]) => broken(s).map(x => ({ ...obj, [k]: x }))),
        fc.constantFrom(...props).chain(([k, s]) => broken(s).map(x => ({ ...obj, [k]: x }))),
        fc.constantFrom(...props).map(([k]) => ({ ...obj, [k]: undefined, [k.toUpperCase()]: obj[k] }))
      )
    }
    return fc.oneof(...options)
  })
}
