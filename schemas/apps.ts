import { Type, type Static } from '@sinclair/typebox'
import { SAMPLE } from './examples.js'

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
  {
    title: 'NewApp',
    additionalProperties: false,
    examples: [{
      slug: SAMPLE.appSlug,
      name: 'Acme Invoicing',
      redirect_uris: [SAMPLE.redirectUri],
      scopes: ['invoices:read', 'bills:read'],
      publisher: 'Acme Ltd',
      website_url: 'https://acme.example'
    }]
  }
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
const appSample = {
  client_id: SAMPLE.clientId,
  app_slug: SAMPLE.appSlug,
  name: 'Acme Invoicing',
  redirect_uris: [SAMPLE.redirectUri],
  scopes: ['invoices:read', 'bills:read'],
  publisher: 'Acme Ltd',
  website_url: 'https://acme.example',
  created_at: SAMPLE.at
}

export const CreatedApp = Type.Object(
  {
    ...AppFields,
    client_secret: Type.String({ description: 'Shown only in this response; stored as a hash.' })
  },
  {
    title: 'CreatedApp',
    description: 'The app, with its client secret (shown only here).',
    additionalProperties: false,
    examples: [{ ...appSample, client_secret: SAMPLE.clientSecret }]
  }
)

export const AppListing = Type.Object({
  apps: Type.Array(
    Type.Object({ ...AppFields, api_key_enabled: Type.Boolean() }, { title: 'App', additionalProperties: false })
  )
}, {
  title: 'AppListing',
  description: 'Your apps.',
  examples: [{ apps: [{ ...appSample, api_key_enabled: true }] }]
})

// No example: none works but the client_id of one of the caller's own apps.
export const ClientIdParams = Type.Object({
  clientId: Type.String({ description: 'The app\'s `client_id`, from its registration or `GET /apps`.' })
})

export const ApiKeyState = Type.Object(
  {
    client_id: Type.String(),
    api_key_enabled: Type.Boolean()
  },
  {
    title: 'ApiKeyState',
    description: "The app's key state now.",
    additionalProperties: false,
    examples: [{ client_id: SAMPLE.clientId, api_key_enabled: false }]
  }
)
