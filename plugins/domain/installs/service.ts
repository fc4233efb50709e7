import type { FastifyInstance } from 'fastify'
import { randomToken } from '../../../lib/crypto.js'
import type { Queryable } from '../../infrastructure/db/types.js'
import type { Install, InstallStore } from './store.js'

/** A user's consent: the app, the tenant, the scopes granted and who granted them. */
export interface Grant {
  clientId: string
  orgRefId: string
  entityRefId: string
  scopes: string[]
  userSub: string
}

export interface InstallServiceDeps {
  store: InstallStore
  /** The access-state transaction: an uninstall is announced to every instance's cache. */
  changeAccess: FastifyInstance['accessState']['change']
}

/** Installs: one app in one (org, entity), what consent, the installs routes and the token endpoint call. */
export function createInstallService ({ store, changeAccess }: InstallServiceDeps) {
  async function find (installId: string, q?: Queryable): Promise<Install | undefined> {
    return (await store.find(installId, q))?.install
  }

  return {
    /** Consent: creates the install of (app, org, entity), or sets the scopes of the active one. */
    async grant (g: Grant, q: Queryable): Promise<Install> {
      // Two consents at once for a first install must give one install: the insert yields to the other's row
      // (the unique index on active installs), and this consent then updates that install instead.
      const installId = await store.insertActive(q, {
        installId: randomToken('ins_', 12),
        clientId: g.clientId,
        orgRefId: g.orgRefId,
        entityRefId: g.entityRefId,
        scopes: g.scopes,
        installedBy: g.userSub
      }) ?? (await store.setActiveScopes(q, g.clientId, g.orgRefId, g.entityRefId, g.scopes))!
      return (await find(installId, q))!
    },

    find,

    /** Uninstalls an install of `orgRefId`; undefined when there is no such active install in that org. */
    uninstall (orgRefId: string, installId: string): Promise<Install | undefined> {
      return changeAccess({ installId }, async q =>
        (await store.uninstall(q, orgRefId, installId)) ? find(installId, q) : undefined)
    },

    listForEntity (orgRefId: string, entityRefId: string): Promise<Install[]> {
      return store.listForEntity(orgRefId, entityRefId)
    },

    /**
     * In the caller's access-state transaction: the install's access tokens issued until now are refused from now
     * on (a refresh-token family revoked on reuse).
     */
    revokeAccessTokens (installId: string, q: Queryable): Promise<void> {
      return store.revokeAccessTokens(q, installId)
    }
  }
}

export type InstallService = ReturnType<typeof createInstallService>
