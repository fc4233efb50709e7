import type { Db, Queryable } from '../../infrastructure/db/types.js'

export interface Install {
  installId: string
  clientId: string
  appSlug: string
  appName: string
  /**
   * The app's API key state now (read with the install, as its name): while it is disabled the install's tokens are
   * refused, whatever its status.
   */
  apiKeyEnabled: boolean
  orgRefId: string
  entityRefId: string
  scopes: string[]
  status: 'active' | 'uninstalled'
  installedBy: string
  createdAt: Date
  uninstalledAt: Date | null
  /** When an access token of the install last passed the public pipeline (kept to the minute); null: never. */
  lastUsedAt: Date | null
}

/** What the access-state cache reads beside the install: its app's key state and the family cut-off. */
export interface InstallAccess {
  apiKeyEnabled: boolean
  /** Tokens issued at or before this instant (database clock) are dead for good. */
  keyDisabledAt: Date | null
  /** Access tokens issued at or before this instant (database clock) are refused: a family revocation. */
  tokensRevokedAt: Date | null
}

/** An install as stored, joined with its app. */
export interface StoredInstall { install: Install, access: InstallAccess }

/** A position in an app's install list: the install's creation time and id. */
export type InstallPosition = readonly [createdAt: string, installId: string]

interface Row {
  install_id: string
  client_id: string
  slug: string
  org_ref_id: string
  entity_ref_id: string
  scopes: string[]
  status: 'active' | 'uninstalled'
  installed_by: string
  created_at: Date
  uninstalled_at: Date | null
  last_used_at: Date | null
  app_name: string
  api_key_enabled: boolean
  key_disabled_at: Date | null
  tokens_revoked_at: Date | null
}

const SELECT = `
  select i.install_id, i.client_id, a.slug, i.org_ref_id, i.entity_ref_id, i.scopes, i.status, i.installed_by,
         i.created_at, i.uninstalled_at, i.last_used_at, a.name as app_name, a.api_key_enabled, a.key_disabled_at,
         i.tokens_revoked_at
    from installs i join apps a on a.client_id = i.client_id`

const toStored = (r: Row): StoredInstall => ({
  install: {
    installId: r.install_id,
    clientId: r.client_id,
    appSlug: r.slug,
    appName: r.app_name,
    apiKeyEnabled: r.api_key_enabled,
    orgRefId: r.org_ref_id,
    entityRefId: r.entity_ref_id,
    scopes: r.scopes,
    status: r.status,
    installedBy: r.installed_by,
    createdAt: r.created_at,
    uninstalledAt: r.uninstalled_at,
    lastUsedAt: r.last_used_at
  },
  access: {
    apiKeyEnabled: r.api_key_enabled,
    keyDisabledAt: r.key_disabled_at,
    tokensRevokedAt: r.tokens_revoked_at
  }
})

/** One app in one tenant, as consent grants it. */
export interface NewInstall {
  installId: string
  clientId: string
  orgRefId: string
  entityRefId: string
  scopes: string[]
  installedBy: string
}

/**
 * Every statement on installs. Rows are never deleted; an uninstall only changes the status. Statements that take
 * a Queryable run in the caller's transaction.
 */
export function createInstallStore (db: Db) {
  return {
    async find (installId: string, q: Queryable = db): Promise<StoredInstall | undefined> {
      const [row] = await q.query<Row>(`${SELECT} where i.install_id = $1`, [installId])
      return row && toStored(row)
    },

    /** Every install of a tenant, uninstalled ones included, oldest first. */
    async listForEntity (orgRefId: string, entityRefId: string): Promise<Install[]> {
      const rows = await db.query<Row>(
        `${SELECT} where i.org_ref_id = $1 and i.entity_ref_id = $2 order by i.created_at, i.install_id`,
        [orgRefId, entityRefId]
      )
      return rows.map(r => toStored(r).install)
    },

    /**
     * An app's installs, uninstalled ones included, oldest first; `after`: the page after this position. The
     * position's install is compared at its stored time: a creation time is kept to the microsecond, and the
     * position's (a JavaScript Date's) only to the millisecond.
     */
    async listForApp (clientId: string, limit: number, after?: InstallPosition): Promise<Install[]> {
      // Two statements, not one with `($2 is null or …)`: a prepared statement's generic plan could not take the
      // position as the start of its index range, and a later page would read every install before it.
      const rows = after
        ? await db.query<Row>(
          `${SELECT} where i.client_id = $1 and (i.created_at, i.install_id) >
             (coalesce((select created_at from installs where install_id = $3), $2::timestamptz), $3)
            order by i.created_at, i.install_id limit $4`,
          [clientId, after[0], after[1], limit])
        : await db.query<Row>(`${SELECT} where i.client_id = $1 order by i.created_at, i.install_id limit $2`,
          [clientId, limit])
      return rows.map(r => toStored(r).install)
    },

    /** The active installs in these entities of an org, oldest first. */
    async listActiveIn (orgRefId: string, entityRefIds: string[]): Promise<Install[]> {
      const rows = await db.query<Row>(
        `${SELECT} where i.org_ref_id = $1 and i.entity_ref_id = any($2) and i.status = 'active'
          order by i.created_at, i.install_id`,
        [orgRefId, entityRefIds]
      )
      return rows.map(r => toStored(r).install)
    },

    /** How many active installs each of these apps has (apps without any are absent). */
    async countActive (clientIds: string[]): Promise<Map<string, number>> {
      const rows = await db.query<{ client_id: string, n: number }>(
        `select client_id, count(*)::int as n from installs
          where client_id = any($1) and status = 'active' group by client_id`,
        [clientIds]
      )
      return new Map(rows.map(r => [r.client_id, r.n]))
    },

    /**
     * Notes a use of the install at `at`, unless one was noted less than a minute before: a write at most once a
     * minute per install, however many instances see its tokens.
     */
    async noteUse (installId: string, at: Date): Promise<void> {
      await db.query(
        `update installs set last_used_at = $2
          where install_id = $1 and (last_used_at is null or last_used_at <= $2::timestamptz - interval '1 minute')`,
        [installId, at]
      )
    },

    /**
     * Inserts the install unless the app already has an active one in the tenant (the unique index on active
     * installs): then nothing, and undefined.
     */
    async insertActive (q: Queryable, n: NewInstall): Promise<string | undefined> {
      const [row] = await q.query<{ install_id: string }>(
        `insert into installs (install_id, client_id, org_ref_id, entity_ref_id, scopes, installed_by)
         values ($1, $2, $3, $4, $5, $6)
         on conflict (client_id, org_ref_id, entity_ref_id) where status = 'active' do nothing
         returning install_id`,
        [n.installId, n.clientId, n.orgRefId, n.entityRefId, n.scopes, n.installedBy]
      )
      return row?.install_id
    },

    /** Sets the scopes of the app's active install in the tenant; its id, undefined when there is none. */
    async setActiveScopes (q: Queryable, clientId: string, orgRefId: string, entityRefId: string, scopes: string[]):
    Promise<string | undefined> {
      const [row] = await q.query<{ install_id: string }>(
        `update installs set scopes = $4, updated_at = now()
          where client_id = $1 and org_ref_id = $2 and entity_ref_id = $3 and status = 'active'
          returning install_id`,
        [clientId, orgRefId, entityRefId, scopes]
      )
      return row?.install_id
    },

    /** Uninstalls an active install of the org; false when there is none. */
    async uninstall (q: Queryable, orgRefId: string, installId: string): Promise<boolean> {
      const rows = await q.query(
        `update installs set status = 'uninstalled', uninstalled_at = now(), updated_at = now()
          where install_id = $1 and org_ref_id = $2 and status = 'active' returning install_id`,
        [installId, orgRefId]
      )
      return rows.length > 0
    },

    /**
     * Refuses from now on every access token of the install issued until now: the instant is read from the
     * database clock, the clock token issue times are read from (docs/decisions.md).
     */
    async revokeAccessTokens (q: Queryable, installId: string): Promise<void> {
      await q.query('update installs set tokens_revoked_at = clock_timestamp() where install_id = $1', [installId])
    }
  }
}

export type InstallStore = ReturnType<typeof createInstallStore>
