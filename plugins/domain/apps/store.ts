import type { Db, Queryable } from '../../infrastructure/db/types.js'
import type { App } from '../common/clients.js'

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
  metadata_expires_at: Date | null
  created_at: Date
}

const COLUMNS = `client_id, slug, name, owner_sub, client_secret_hash, client_type, registered_by, publisher,
                 website_url, redirect_uris, scopes, api_key_enabled, key_disabled_at, metadata_expires_at, created_at`

/** An app as stored: the client, and what only the rules read (its secret's hash, when its document is due). */
export interface StoredApp {
  app: App
  secretHash: string | null
  /** A client described by a metadata document (CIMD): until when the stored copy may be used; null for others. */
  metadataExpiresAt: Date | null
}

const toStored = (r: Row): StoredApp => ({
  app: {
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
  },
  secretHash: r.client_secret_hash,
  metadataExpiresAt: r.metadata_expires_at
})

/** An app a developer registers: its client id and the hash of its secret drawn by the caller. */
export interface NewDeveloperApp {
  clientId: string
  slug: string
  name: string
  ownerSub: string
  secretHash: string
  redirectUris: string[]
  scopes: string[]
  publisher: string | null
  websiteUrl: string | null
}

/** A client that registered itself (RFC 7591); no secret hash for a public client. */
export interface NewDynamicApp {
  clientId: string
  slug: string
  name: string
  secretHash: string | null
  redirectUris: string[]
  scopes: string[]
  websiteUrl: string | null
  clientType: 'confidential' | 'public'
}

/** What a client's metadata document (CIMD) says, as stored for the client it describes. */
export interface DescribedApp {
  clientId: string
  /** Used only when the client is new: a client keeps its slug across fetches. */
  slug: string
  name: string
  websiteUrl: string | null
  redirectUris: string[]
  scopes: string[]
  /** How long the document may be used before it is fetched again. */
  maxAgeS: number
}

/**
 * Every statement on registered apps. Instants are stamped by the database (a key disable with `clock_timestamp()`,
 * so that it orders against token issue times read from the same clock: docs/decisions.md); how old something is
 * is judged by the caller, on the app's clock.
 */
export function createAppStore (db: Db) {
  return {
    /** A developer's app; undefined when another app has the slug. */
    async insertDeveloperApp (a: NewDeveloperApp): Promise<StoredApp | undefined> {
      const [row] = await db.query<Row>(
        `insert into apps (client_id, slug, name, owner_sub, client_secret_hash, redirect_uris, scopes, publisher,
                           website_url)
         values ($1, $2, $3, $4, $5, $6, $7, $8, $9)
         on conflict (slug) do nothing
         returning ${COLUMNS}`,
        [a.clientId, a.slug, a.name, a.ownerSub, a.secretHash, a.redirectUris, a.scopes, a.publisher, a.websiteUrl]
      )
      return row && toStored(row)
    },

    async insertDynamicApp (a: NewDynamicApp): Promise<StoredApp> {
      const [row] = await db.query<Row>(
        `insert into apps (client_id, slug, name, client_secret_hash, redirect_uris, scopes, website_url,
                           client_type, registered_by)
         values ($1, $2, $3, $4, $5, $6, $7, $8, 'dcr')
         returning ${COLUMNS}`,
        [a.clientId, a.slug, a.name, a.secretHash, a.redirectUris, a.scopes, a.websiteUrl, a.clientType]
      )
      return toStored(row!)
    },

    /**
     * Stores the client a metadata document describes, or updates the one stored from an earlier fetch (its slug
     * kept). Undefined when the client id belongs to a client registered otherwise: a document never changes it.
     */
    async upsertDescribedApp (d: DescribedApp): Promise<StoredApp | undefined> {
      const [row] = await db.query<Row>(
        `insert into apps (client_id, slug, name, website_url, redirect_uris, scopes, client_type, registered_by,
                           metadata_expires_at)
         values ($1, $2, $3, $4, $5, $6, 'public', 'cimd', now() + make_interval(secs => $7))
         on conflict (client_id) do update
           set name = excluded.name, website_url = excluded.website_url, redirect_uris = excluded.redirect_uris,
               scopes = excluded.scopes, metadata_expires_at = excluded.metadata_expires_at
           where apps.registered_by = 'cimd'
         returning ${COLUMNS}`,
        [d.clientId, d.slug, d.name, d.websiteUrl, d.redirectUris, d.scopes, d.maxAgeS]
      )
      return row && toStored(row)
    },

    /**
     * Deletes up to `limit` self-registered (DCR) clients created before `createdBefore` that were granted
     * nothing: no install, no authorization code.
     */
    async deleteUnusedRegistrations (createdBefore: Date, limit: number): Promise<void> {
      await db.query(
        `delete from apps where client_id in (
           select a.client_id from apps a
            where a.registered_by = 'dcr' and a.created_at < $1
              and not exists (select 1 from installs i where i.client_id = a.client_id)
              and not exists (select 1 from authorization_codes c where c.client_id = a.client_id)
            limit $2)`,
        [createdBefore, limit]
      )
    },

    /** The developer's apps, oldest first. */
    async listOwnedBy (ownerSub: string): Promise<App[]> {
      const rows = await db.query<Row>(
        `select ${COLUMNS} from apps where owner_sub = $1 order by created_at, client_id`,
        [ownerSub]
      )
      return rows.map(r => toStored(r).app)
    },

    /** Whether the developer owns any app at all. */
    async ownsAny (ownerSub: string): Promise<boolean> {
      const rows = await db.query('select 1 from apps where owner_sub = $1 limit 1', [ownerSub])
      return rows.length > 0
    },

    async find (clientId: string): Promise<StoredApp | undefined> {
      const [row] = await db.query<Row>(`select ${COLUMNS} from apps where client_id = $1`, [clientId])
      return row && toStored(row)
    },

    /**
     * Enables or disables the app's key, in the caller's transaction; a disable stamps the instant. `ownerSub`
     * null: any app, whoever owns it. Undefined when there is no such app (of that owner).
     */
    async setKeyEnabled (q: Queryable, ownerSub: string | null, clientId: string, enabled: boolean):
    Promise<App | undefined> {
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
      return row && toStored(row).app
    }
  }
}

export type AppStore = ReturnType<typeof createAppStore>
