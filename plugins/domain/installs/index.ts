import fp from 'fastify-plugin'
import { randomToken } from '../../../lib/crypto.js'
import type { Queryable } from '../../infrastructure/db/index.js'

export interface Install {
  installId: string
  clientId: string
  appSlug: string
  orgRefId: string
  entityRefId: string
  scopes: string[]
  status: 'active' | 'uninstalled'
  installedBy: string
  createdAt: Date
  uninstalledAt: Date | null
}

/** An install joined with its app: what both the installs service and the access-state cache read. */
export interface InstallRow {
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
  api_key_enabled: boolean
  key_disabled_at: Date | null
  tokens_revoked_at: Date | null
}

export const SELECT_INSTALL = `
  select i.install_id, i.client_id, a.slug, i.org_ref_id, i.entity_ref_id, i.scopes, i.status, i.installed_by,
         i.created_at, i.uninstalled_at, a.api_key_enabled, a.key_disabled_at, i.tokens_revoked_at
    from installs i join apps a on a.client_id = i.client_id`

export const toInstall = (r: InstallRow): Install => ({
  installId: r.install_id,
  clientId: r.client_id,
  appSlug: r.slug,
  orgRefId: r.org_ref_id,
  entityRefId: r.entity_ref_id,
  scopes: r.scopes,
  status: r.status,
  installedBy: r.installed_by,
  createdAt: r.created_at,
  uninstalledAt: r.uninstalled_at
})

export interface Grant {
  clientId: string
  orgRefId: string
  entityRefId: string
  scopes: string[]
  userSub: string
}

declare module 'fastify' {
  interface FastifyInstance {
    installs: {
      /** Consent: creates the install of (app, org, entity), or sets the scopes of the active one. */
      grant(grant: Grant, q: Queryable): Promise<Install>
      find(installId: string, q?: Queryable): Promise<Install | undefined>
      /** Uninstalls an install of `orgRefId`; undefined when there is no such active install in that org. */
      uninstall(orgRefId: string, installId: string): Promise<Install | undefined>
      listForEntity(orgRefId: string, entityRefId: string): Promise<Install[]>
    }
  }
}

/** Installs: one app in one (org, entity). Rows are never deleted; an uninstall only changes the status. */
export default fp(
  async app => {
    const { db } = app

    async function find (installId: string, q: Queryable = db): Promise<Install | undefined> {
      const [row] = await q.query<InstallRow>(`${SELECT_INSTALL} where i.install_id = $1`, [installId])
      return row && toInstall(row)
    }

    app.decorate('installs', {
      async grant (g: Grant, q: Queryable) {
        // Two consents at once for a first install must give one install: the insert yields to the other's row
        // (the unique index on active installs), and this consent then updates that install instead.
        const [inserted] = await q.query<{ install_id: string }>(
          `insert into installs (install_id, client_id, org_ref_id, entity_ref_id, scopes, installed_by)
           values ($1, $2, $3, $4, $5, $6)
           on conflict (client_id, org_ref_id, entity_ref_id) where status = 'active' do nothing
           returning install_id`,
          [randomToken('ins_', 12), g.clientId, g.orgRefId, g.entityRefId, g.scopes, g.userSub]
        )
        let installId = inserted?.install_id
        if (!installId) {
          const [existing] = await q.query<{ install_id: string }>(
            `update installs set scopes = $4, updated_at = now()
              where client_id = $1 and org_ref_id = $2 and entity_ref_id = $3 and status = 'active'
              returning install_id`,
            [g.clientId, g.orgRefId, g.entityRefId, g.scopes]
          )
          installId = existing!.install_id
        }
        return (await find(installId, q))!
      },

      find,

      async uninstall (orgRefId: string, installId: string) {
        return app.accessState.change({ installId }, async q => {
          const [row] = await q.query<{ install_id: string }>(
            `update installs set status = 'uninstalled', uninstalled_at = now(), updated_at = now()
            where install_id = $1 and org_ref_id = $2 and status = 'active' returning install_id`,
            [installId, orgRefId]
          )
          return row && find(row.install_id, q)
        })
      },

      async listForEntity (orgRefId: string, entityRefId: string) {
        const rows = await db.query<InstallRow>(
          `${SELECT_INSTALL} where i.org_ref_id = $1 and i.entity_ref_id = $2 order by i.created_at, i.install_id`,
          [orgRefId, entityRefId]
        )
        return rows.map(toInstall)
      }
    })
  },
  { name: 'installs', dependencies: ['db', 'access-state'] }
)
