import { Type, type Static } from '@sinclair/typebox'

const Scope = Type.String({ pattern: '^[A-Za-z]+:[a-z]+$', description: 'A scope such as invoices:read.' })

/** POST /apps (docs/rules.md#apps-and-api-keys). */
export const NewAppBody = Type.Object(
  {
    slug: Type.String({
      pattern: '^[a-z0-9][a-z0-9-]{1,62}$',
      description: 'Lower-case letters, digits and dashes; unique.'
    }),
    name: Type.String({ minLength: 1, maxLength: 100 }),
    redirect_uris: Type.Array(Type.String({ maxLength: 2048 }), {
      minItems: 1,
      maxItems: 10,
      description: 'Absolute https URLs.'
    }),
    scopes: Type.Array(Scope, { minItems: 1, maxItems: 50 }),
    publisher: Type.Optional(Type.String({ minLength: 1, maxLength: 100, description: 'Who makes the app.' })),
    website_url: Type.Optional(Type.String({ maxLength: 2048, pattern: '^https://', description: 'An https URL.' }))
  },
  { additionalProperties: false }
)
// eslint-disable-next-line @typescript-eslint/no-redeclare -- TypeBox: a schema and its Static type share a name
export type NewAppBody = Static<typeof NewAppBody>

const AppFields = {
  client_id: Type.String(),
  app_slug: Type.String(),
  name: Type.String(),
  redirect_uris: Type.Array(Type.String()),
  scopes: Type.Array(Type.String()),
  publisher: Type.Optional(Type.String()),
  website_url: Type.Optional(Type.String()),
  created_at: Type.String({ format: 'date-time' })
}

export const CreatedApp = Type.Object(
  {
    ...AppFields,
    client_secret: Type.String({ description: 'Shown only in this response; stored as a hash.' })
  },
  { additionalProperties: false }
)

export const AppListing = Type.Object({
  apps: Type.Array(Type.Object({ ...AppFields, api_key_enabled: Type.Boolean() }, { additionalProperties: false }))
})

export const ClientIdParams = Type.Object({ clientId: Type.String() })

export const ApiKeyState = Type.Object(
  {
    client_id: Type.String(),
    api_key_enabled: Type.Boolean()
  },
  { additionalProperties: false }
)
