import { randomBytes } from 'node:crypto'
import fp from 'fastify-plugin'
import { randomToken, safeEqual, sha256 } from '../../../lib/crypto.js'
import { normalizedRedirectUri, redirectUriProblem } from '../../../lib/redirect-uris.js'
import { isKnownScope, KNOWN_SCOPES, WIRED_SCOPES } from '../../../lib/scopes.js'
import { ClientMetadataError, ClientMetadataFetcher, isMetadataUrl } from '../oauth/client-metadata.js'
import { errors } from '../../infrastructure/errors.js'

export interface App {
  clientId: string
  slug: string
  name: string
  /** The developer who registered it; null for clients that registered themselves (DCR, CIMD). */
  ownerSub: string | null
  /** `public`: no secret, PKCE alone proves the client (RFC 6749 2.1). */
  clientType: 'confidential' | 'public'
  registeredBy: 'developer' | 'dcr' | 'cimd'
  publisher: string | null
  websiteUrl: string | null
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
  publisher?: string | undefined
  websiteUrl?: string | undefined
}

/** What a client asks for at the registration endpoint (RFC 7591 2), already read from the request. */
export interface DynamicRegistration {
  name: string | undefined
  websiteUrl: string | undefined
  redirectUris: string[]
  /** Space-separated; unset means the scopes that authorise something today. */
  scope: string | undefined
  /** `none` makes a public client. */
  authMethod: 'none' | 'client_secret_basic' | 'client_secret_post'
}

interface Row {
  client_id: string
  slug: string
  name: string
  owner_sub: string | null
  client_secret_hash: string | null
  client_type: 'confidential' | 'public'
  registered_by: 'developer' | 'dcr' | 'cimd'
  publisher: string | null
  website_url: string | null
  redirect_uris: string[]
  scopes: string[]
  api_key_enabled: boolean
  key_disabled_at: Date | null
  metadata_fresh: boolean
  created_at: Date
}

/** A self-registered client granted nothing within this many hours is deleted (docs/rules.md#clients). */
export const UNUSED_REGISTRATION_HOURS = 24

const COLUMNS = `client_id, slug, name, owner_sub, client_secret_hash, client_type, registered_by, publisher,
                 website_url, redirect_uris, scopes, api_key_enabled, key_disabled_at,
                 coalesce(metadata_expires_at > now(), false) as metadata_fresh, created_at`

const toApp = (r: Row): App => ({
  clientId: r.client_id,
  slug: r.slug,
  name: r.name,
  ownerSub: r.owner_sub,
  clientType: r.client_type,
  registeredBy: r.registered_by,
  publisher: r.publisher,
  websiteUrl: r.website_url,
  redirectUris: r.redirect_uris,
  scopes: r.scopes,
  apiKeyEnabled: r.api_key_enabled,
  keyDisabledAt: r.key_disabled_at,
  createdAt: r.created_at
})

/** A slug for a client that named itself: its name in slug form, made unique by a random suffix. */
function generatedSlug (name: string | undefined): string {
  const base = (name ?? '').toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 40)
  return `${base || 'client'}-${randomBytes(4).toString('hex')}`
}

/** Scopes a self-registered client asks for: known ones only; none named means the wired ones. */
function requestedScopes (scope: string | undefined, fail: (message: string) => Error): string[] {
  if (scope === undefined || scope.trim() === '') return Object.keys(WIRED_SCOPES)
  const scopes = [...new Set(scope.split(' ').filter(Boolean))]
  const unknown = scopes.filter(s => !isKnownScope(s))
  if (unknown.length > 0) throw fail(`Unknown scope: ${unknown.join(', ')}`)
  return scopes
}

declare module 'fastify' {
  interface FastifyInstance {
    apps: {
      register(ownerSub: string, app: NewApp): Promise<{ app: App, clientSecret: string }>
      /**
       * Dynamic Client Registration (RFC 7591): a new client for every registration, its redirect URIs stored
       * normalised. Throws RFC 7591 3.2.2 errors.
       */
      registerDynamic(input: DynamicRegistration): Promise<{ app: App, clientSecret?: string }>
      listOwnedBy(ownerSub: string): Promise<App[]>
      /**
       * The client behind a client_id: a registered app, or, for an https URL, the client its metadata document
       * describes (fetched, checked and cached as its caching headers allow). `discover: false` fetches only documents
       * already known (kept fresh), never a new one. Throws `ClientMetadataError`.
       */
      resolve(clientId: string, opts?: { discover?: boolean }): Promise<App | undefined>
      /** The app whose credentials these are, whatever its key state; undefined when they are wrong. */
      authenticateClient(clientId: string, clientSecret: string): Promise<App | undefined>
      /** `ownerSub` null: the operator (`marketplace-gateway client-key`), for any app, self-registered ones too. */
      setKeyEnabled(ownerSub: string | null, clientId: string, enabled: boolean): Promise<App | undefined>
    }
  }
}

/** Registered apps and their API keys (docs/rules.md#apps-and-api-keys). Client secrets are kept only as hashes. */
export default fp(
  async app => {
    const { db } = app
    const metadata = new ClientMetadataFetcher({
      allowPrivate: app.config.webhookAllowPrivateTargets,
      caFile: app.config.webhookCaFile
    }, Math.round(app.config.clientMetadataTimeoutSeconds * 1000), () => app.clock.now())
    app.addHook('onClose', () => metadata.close())

    /**
     * Registrations never used are forgotten: a self-registered client granted nothing (no install, no authorization
     * code) within UNUSED_REGISTRATION_HOURS of registering is deleted. A few at a time, whenever a client
     * registers, so that the table stays bounded however many registrations come and nothing else has to run.
     */
    async function forgetUnusedRegistrations (): Promise<void> {
      await db.query(
        `delete from apps where client_id in (
           select a.client_id from apps a
            where a.registered_by = 'dcr' and a.created_at < now() - make_interval(hours => $1)
              and not exists (select 1 from installs i where i.client_id = a.client_id)
              and not exists (select 1 from authorization_codes c where c.client_id = a.client_id)
            limit 20)`,
        [UNUSED_REGISTRATION_HOURS]
      )
    }

    /** Fetches a metadata document and stores the client it describes, its slug kept across fetches. */
    async function refreshFromMetadata (clientId: string): Promise<App> {
      const doc = await metadata.fetch(clientId)
      const scopes = requestedScopes(doc.scope, m => new ClientMetadataError(`scope: ${m}`))
      const [row] = (await db.query<Row>(
        `insert into apps (client_id, slug, name, website_url, redirect_uris, scopes, client_type, registered_by,
                           metadata_expires_at)
         values ($1, $2, $3, $4, $5, $6, 'public', 'cimd', now() + make_interval(secs => $7))
         on conflict (client_id) do update
           set name = excluded.name, website_url = excluded.website_url, redirect_uris = excluded.redirect_uris,
               scopes = excluded.scopes, metadata_expires_at = excluded.metadata_expires_at
           where apps.registered_by = 'cimd'
         returning ${COLUMNS}`,
        [clientId, generatedSlug(doc.name), doc.name, doc.websiteUrl ?? null, doc.redirectUris, scopes, doc.maxAgeS]
      )) as Row[]
      if (!row) throw new ClientMetadataError('This client_id is registered otherwise.')
      return toApp(row)
    }

    app.decorate('apps', {
      async register (ownerSub: string, input: NewApp) {
        const scopes = [...new Set(input.scopes)]
        const unknown = scopes.filter(s => !isKnownScope(s))
        if (unknown.length > 0) throw errors.unknownScope(unknown)
        for (const uri of input.redirectUris) {
          if (redirectUriProblem(uri, 'developer')) {
            throw errors.invalidRedirectUri(
              `redirect_uris must be absolute https URLs without a fragment or user info (got ${JSON.stringify(uri)}).`
            )
          }
        }
        const clientId = randomToken('app_', 12)
        const clientSecret = randomToken('mgs_')
        const [row] = await db.query<Row>(
          `insert into apps (client_id, slug, name, owner_sub, client_secret_hash, redirect_uris, scopes, publisher,
                             website_url)
         values ($1, $2, $3, $4, $5, $6, $7, $8, $9)
         on conflict (slug) do nothing
         returning ${COLUMNS}`,
          [clientId, input.slug, input.name, ownerSub, sha256(clientSecret), [...new Set(input.redirectUris)], scopes,
            input.publisher ?? null, input.websiteUrl ?? null]
        )
        if (!row) throw errors.conflict(`An app with slug ${JSON.stringify(input.slug)} already exists.`)
        return { app: toApp(row), clientSecret }
      },

      async registerDynamic (input: DynamicRegistration) {
        if (input.redirectUris.length === 0) throw errors.registrationInvalidRedirectUri('redirect_uris is required.')
        for (const uri of input.redirectUris) {
          const problem = redirectUriProblem(uri, 'native')
          if (problem) throw errors.registrationInvalidRedirectUri(problem)
        }
        const scopes = requestedScopes(input.scope, errors.invalidClientMetadata)
        const redirectUris = [...new Set(input.redirectUris.map(normalizedRedirectUri))]
        const isPublic = input.authMethod === 'none'
        const clientSecret = isPublic ? undefined : randomToken('mgs_')
        // Every registration is a client of its own, even when another registered the same metadata: disabling one
        // must not cut off the other users of the same client software.
        const [row] = await db.query<Row>(
          `insert into apps (client_id, slug, name, client_secret_hash, redirect_uris, scopes, website_url,
                             client_type, registered_by)
           values ($1, $2, $3, $4, $5, $6, $7, $8, 'dcr')
           returning ${COLUMNS}`,
          [randomToken('app_', 12), generatedSlug(input.name), input.name ?? 'Unnamed client',
            clientSecret === undefined ? null : sha256(clientSecret), redirectUris, scopes, input.websiteUrl ?? null,
            isPublic ? 'public' : 'confidential']
        )
        // Beside the answer, not in its way: a sweep that fails (a consent racing with it) costs this client nothing.
        forgetUnusedRegistrations().catch(err => app.log.warn({ err }, 'could not forget unused registrations'))
        return { app: toApp(row!), ...(clientSecret === undefined ? {} : { clientSecret }) }
      },

      async listOwnedBy (ownerSub: string) {
        const rows = await db.query<Row>(
          `select ${COLUMNS} from apps where owner_sub = $1 order by created_at, client_id`,
          [ownerSub]
        )
        return rows.map(toApp)
      },

      async resolve (clientId: string, { discover = true }: { discover?: boolean } = {}) {
        const [row] = await db.query<Row>(`select ${COLUMNS} from apps where client_id = $1`, [clientId])
        if (row && (row.registered_by !== 'cimd' || row.metadata_fresh)) return toApp(row)
        if (!isMetadataUrl(clientId) || (!row && !discover)) return undefined
        return refreshFromMetadata(clientId)
      },

      async authenticateClient (clientId: string, clientSecret: string) {
        const [row] = await db.query<Row>(`select ${COLUMNS} from apps where client_id = $1`, [clientId])
        if (!row?.client_secret_hash || !safeEqual(row.client_secret_hash, sha256(clientSecret))) return undefined
        return toApp(row)
      },

      async setKeyEnabled (ownerSub: string | null, clientId: string, enabled: boolean) {
        return app.accessState.change({ clientId }, async q => {
          const [row] = enabled
            ? await q.query<Row>(
                `update apps set api_key_enabled = true
                  where client_id = $1 and ($2::text is null or owner_sub = $2) returning ${COLUMNS}`,
                [clientId, ownerSub]
            )
            : await q.query<Row>(
                `update apps set api_key_enabled = false, key_disabled_at = clock_timestamp()
              where client_id = $1 and ($2::text is null or owner_sub = $2) returning ${COLUMNS}`,
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
