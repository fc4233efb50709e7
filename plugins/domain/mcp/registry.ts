import { fullFormats } from 'ajv-formats/dist/formats.js'
import { FormatRegistry, type Static, type TSchema } from '@sinclair/typebox'
import { TypeCompiler, type TypeCheck } from '@sinclair/typebox/compiler'
import type { Principal } from '../auth/access-state.js'
import { ApiError, errors } from '../../infrastructure/errors.js'
import { DatabaseUnavailableError } from '../../infrastructure/db/types.js'
import type { ToolAnnotations } from '../common/tool-annotations.js'

// TypeBox knows no string format by itself: the tools' arguments get the checks the REST routes make with
// ajv-formats, so that a tool and its route accept the same values.
for (const name of ['date-time', 'date'] as const) {
  const format = fullFormats[name] as { validate: (v: string) => boolean }
  if (!FormatRegistry.Has(name)) FormatRegistry.Set(name, v => format.validate(v))
}

/** What a tool is: its schemas feed tools/list, /catalog.json and the agent card. */
export interface ToolDefinition<I extends TSchema = TSchema, O extends TSchema = TSchema> {
  name: string
  title: string
  description: string
  inputSchema: I
  outputSchema: O
  annotations: ToolAnnotations
  /** Every scope the install must hold. */
  requiredScopes: string[]
  /** Public tools work without an access token; the others act in the token's tenant. */
  public: boolean
  tags: string[]
}

/**
 * What a tool does, given arguments that passed its input schema. A tenant tool always gets a principal (the
 * dispatcher refuses the call without one); a public tool gets whatever the caller sent, maybe none.
 */
export type ToolHandler<I extends TSchema, O extends TSchema> = (
  args: Static<I>,
  principal: Principal
) => Promise<Static<O>>

export interface Tool extends ToolDefinition {
  handler: (args: unknown, principal: Principal | null) => Promise<unknown>
}

export interface Resource {
  uri: string
  name: string
  description: string
  mimeType: string
  read(): string
}

// A type, not an interface: the SDK's result type has an index signature that only a type alias satisfies.
export type ToolResult = {
  content: Array<{ type: 'text', text: string }>
  structuredContent?: Record<string, unknown>
  isError?: boolean
}

/** The JSON Schema of a TypeBox schema, as it goes on the wire (TypeBox's symbol keys dropped). */
export const wireSchema = (schema: unknown): Record<string, unknown> => JSON.parse(JSON.stringify(schema))

/** A tool's input or output schema: MCP requires an object schema for both. */
type ObjectSchema = { type: 'object', [key: string]: unknown }

/** What tools/list answers and /catalog.json lists. */
export function describeTool (t: ToolDefinition) {
  return {
    name: t.name,
    title: t.title,
    description: t.description,
    inputSchema: wireSchema(t.inputSchema) as ObjectSchema,
    outputSchema: wireSchema(t.outputSchema) as ObjectSchema,
    annotations: { title: t.title, ...t.annotations }
  }
}

/** What resources/list answers and /catalog.json lists. */
export const describeResource = ({ uri, name, description, mimeType }: Resource) =>
  ({ uri, name, description, mimeType })

/**
 * A tool error carries the REST error body as text only: clients check `structuredContent` against the tool's
 * output schema even on errors, so an error body there would turn every tool error into a protocol error.
 */
const toolError = (e: ApiError): ToolResult => ({
  content: [{ type: 'text', text: JSON.stringify(e.body()) }],
  isError: true
})

/**
 * The one list of tools and resources. Plugins add to it while the app is being built; the protocol side reads it.
 * A call runs the token and scope checks the REST routes run, then the argument check, then the handler.
 */
export function createRegistry () {
  const tools: Tool[] = []
  const resources: Resource[] = []
  const byName = new Map<string, { tool: Tool, check: TypeCheck<TSchema> }>()
  let described: Array<ReturnType<typeof describeTool>> | undefined

  return {
    tools: tools as readonly Tool[],
    resources: resources as readonly Resource[],

    addTool<I extends TSchema, O extends TSchema>(definition: ToolDefinition<I, O>, handler: ToolHandler<I, O>): void {
      if (byName.has(definition.name)) throw new Error(`MCP tool ${definition.name} is already registered`)
      if (definition.inputSchema.type !== 'object' || definition.outputSchema.type !== 'object') {
        throw new Error(`MCP tool ${definition.name}: its input and output schemas must be objects`)
      }
      const tool: Tool = { ...definition, handler: handler as Tool['handler'] }
      tools.push(tool)
      byName.set(tool.name, { tool, check: TypeCompiler.Compile(tool.inputSchema) })
      described = undefined
    },

    addResource (resource: Resource): void {
      resources.push(resource)
    },

    /** tools/list's answer, made once. */
    described (): Array<ReturnType<typeof describeTool>> {
      described ??= tools.map(describeTool)
      return described
    },

    /** Runs a tool call; undefined when there is no such tool. */
    async dispatch (name: string, args: unknown, principal: Principal | null): Promise<ToolResult | undefined> {
      const entry = byName.get(name)
      if (!entry) return undefined
      const { tool, check } = entry
      // The REST pipeline's order: the token and the scopes first, then the arguments (as a body is checked after).
      if (!tool.public && !principal) return toolError(errors.missingToolToken(name))
      if (principal && tool.requiredScopes.length > 0) {
        const missing = tool.requiredScopes.filter(s => !principal.scopes.includes(s))
        if (missing.length > 0) return toolError(errors.insufficientScope(tool.requiredScopes, missing))
      }
      const input = args ?? {}
      if (!check.Check(input)) {
        const details = [...check.Errors(input)].map(e => ({
          location: 'arguments',
          path: e.path || '/',
          message: e.message
        }))
        return toolError(errors.validation(details, `Invalid arguments for ${name}.`))
      }
      try {
        const result = (await tool.handler(input, principal)) as Record<string, unknown>
        return { content: [{ type: 'text', text: JSON.stringify(result) }], structuredContent: result }
      } catch (err) {
        if (err instanceof ApiError) return toolError(err)
        if (err instanceof DatabaseUnavailableError) return toolError(errors.serviceUnavailable())
        throw err
      }
    }
  }
}

export type Registry = ReturnType<typeof createRegistry>
