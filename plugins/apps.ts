import fp from 'fastify-plugin'
import { randomToken, safeEqual, sha256 } from '../lib/crypto.js'
import { isKnownScope, KNOWN_SCOPES, WIRED_SCOPES } from '../lib/scopes.js'
import type { Queryable } from './db/index.js'
import { errors } from './errors.js'

export interface App {
  clientId: string
  slug: string
  name: string
  ownerSub: string
  redirectUris: string[]
  scopes: string[]
  apiKeyEnabled: boolean
  /** Every token issued at or before this instant is dead for good, even after the key is enabled again. */
  keyDisabledAt: Date | null
  createdAt: Date
}

export interface NewApp {
  slug: string
  name: string
  redirectUris: string[]
  scopes: string[]
}

interface Row {
  client_id: string
  slug: string
  name: string
  owner_sub: string
  client_secret_hash: string
  redirect_uris: string[]
  scopes: string[]
  api_key_enabled: boolean
  key_disabled_at: Date | null
  created_at: Date
}

const COLUMNS = `client_id, slug, name, owner_sub, client_secret_hash, redirect_uris, scopes, api_key_enabled,
                 key_disabled_at, created_at`

const toApp = (r: Row): App => ({
  clientId: r.client_id,
  slug: r.slug,
  name: r.name,
  ownerSub: r.owner_sub,
  redirectUris: r.redirect_uris,
  scopes: r.scopes,
  apiKeyEnabled: r.api_key_enabled,
  keyDisabledAt: r.key_disabled_at,
  createdAt: r.created_at
})

declare module 'fastify' {
  interface FastifyInstance {
    apps: {
      register(ownerSub: string, app: NewApp): Promise<{ app: App, clientSecret: string }>
      listOwnedBy(ownerSub: string): Promise<App[]>
      find(clientId: string, q?: Queryable): Promise<App | undefined>
      /** The app whose credentials these are, whatever its key state; undefined when they are wrong. */
      authenticateClient(clientId: string, clientSecret: string): Promise<App | undefined>
      setKeyEnabled(ownerSub: string, clientId: string, enabled: boolean): Promise<App | undefined>
    }
  }
}

/** Registered apps and their API keys (docs/rules.md#apps-and-api-keys). Client secrets are kept only as hashes. */
export default fp(
  async app => {
    const { db } = app

    app.decorate('apps', {
      async register (ownerSub: string, input: NewApp) {
        const scopes = [...new Set(input.scopes)]
        const unknown = scopes.filter(s => !isKnownScope(s))
        if (unknown.length > 0) throw errors.unknownScope(unknown)
        for (const uri of input.redirectUris) {
          const url = URL.canParse(uri) ? new URL(uri) : undefined
          if (url?.protocol !== 'https:' || url.hash || url.username || url.password) {
            throw errors.invalidRedirectUri(
              `redirect_uris must be absolute https URLs without a fragment or user info (got ${JSON.stringify(uri)}).`
            )
          }
        }
        const clientId = randomToken('app_', 12)
        const clientSecret = randomToken('mgs_')
        const [row] = await db.query<Row>(
          `insert into apps (client_id, slug, name, owner_sub, client_secret_hash, redirect_uris, scopes)
         values ($1, $2, $3, $4, $5, $6, $7)
         on conflict (slug) do nothing
         returning ${COLUMNS}`,
          [clientId, input.slug, input.name, ownerSub, sha256(clientSecret), [...new Set(input.redirectUris)], scopes]
        )
        if (!row) throw errors.conflict(`An app with slug ${JSON.stringify(input.slug)} already exists.`)
        return { app: toApp(row), clientSecret }
      },

      async listOwnedBy (ownerSub: string) {
        const rows = await db.query<Row>(
          `select ${COLUMNS} from apps where owner_sub = $1 order by created_at, client_id`,
          [ownerSub]
        )
        return rows.map(toApp)
      },

      async find (clientId: string, q: Queryable = db) {
        const [row] = await q.query<Row>(`select ${COLUMNS} from apps where client_id = $1`, [clientId])
        return row && toApp(row)
      },

      async authenticateClient (clientId: string, clientSecret: string) {
        const [row] = await db.query<Row>(`select ${COLUMNS} from apps where client_id = $1`, [clientId])
        if (!row || !safeEqual(row.client_secret_hash, sha256(clientSecret))) return undefined
        return toApp(row)
      },

      async setKeyEnabled (ownerSub: string, clientId: string, enabled: boolean) {
        return app.accessState.change({ clientId }, async q => {
          const [row] = enabled
            ? await q.query<Row>(
                `update apps set api_key_enabled = true where client_id = $1 and owner_sub = $2 returning ${COLUMNS}`,
                [clientId, ownerSub]
            )
            : await q.query<Row>(
                `update apps set api_key_enabled = false, key_disabled_at = clock_timestamp()
              where client_id = $1 and owner_sub = $2 returning ${COLUMNS}`,
                [clientId, ownerSub]
            )
          return row && toApp(row)
        })
      }
    })

    app.mcp.addResource({
      uri: 'marketplace://scopes',
      name: 'Scopes',
      description: 'Every scope an app may register, which authorise routes today, and what each allows.',
      mimeType: 'application/json',
      read: () =>
        JSON.stringify(
          {
            scopes: Object.entries(KNOWN_SCOPES).map(([scope, description]) => ({
              scope,
              description,
              wired: Object.hasOwn(WIRED_SCOPES, scope)
            }))
          },
          null,
          2
        )
    })
  },
  { name: 'apps', dependencies: ['db', 'access-state', 'mcp'] }
)
