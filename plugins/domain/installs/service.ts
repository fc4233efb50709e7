import type { FastifyBaseLogger, FastifyInstance } from 'fastify'
import type { Clock } from '../../../lib/clock.js'
import type { CursorCodec, CursorScope } from '../../../lib/cursor.js'
import { randomToken } from '../../../lib/crypto.js'
import type { Queryable } from '../../infrastructure/db/types.js'
import { errors } from '../../infrastructure/errors.js'
import type { Install, InstallPosition, InstallStore } from './store.js'

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
  cursors: CursorCodec
  clock: Clock
  log: FastifyBaseLogger
}

/** "Last used" is kept to the minute: an install's use is written at most this often. */
const USE_NOTE_MS = 60_000
/** Installs whose last noted use one instance remembers; past it, it forgets them all and starts again. */
const USE_NOTES_KEPT = 50_000

const isInstallPosition = (v: unknown): v is InstallPosition =>
  Array.isArray(v) && v.length === 2 && typeof v[0] === 'string' && !Number.isNaN(new Date(v[0]).getTime()) &&
  typeof v[1] === 'string'

/** An app's installs are the app's list: its developer's, whatever the tenant. */
const appScope = (clientId: string): CursorScope => ({ tenant: ['', ''], resource: `apps/${clientId}/installs` })

/** Installs: one app in one (org, entity), what consent, the installs routes, the token endpoint and the pages call. */
export function createInstallService ({ store, changeAccess, cursors, clock, log }: InstallServiceDeps) {
  /** When this instance last noted each install's use: most requests need no write at all. */
  const usesNoted = new Map<string, number>()

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

    /** An app's installs (its owner checked by the caller), oldest first, a page at a time. */
    async listForApp (
      clientId: string, o: { limit: number, cursor?: string | undefined }
    ): Promise<{ installs: Install[], nextCursor: string | null }> {
      let after: InstallPosition | undefined
      if (o.cursor !== undefined) {
        after = cursors.decode(appScope(clientId), o.cursor, isInstallPosition)
        if (after === undefined) throw errors.invalidCursor()
      }
      const rows = await store.listForApp(clientId, o.limit + 1, after)
      const shown = rows.slice(0, o.limit)
      const last = shown.at(-1)
      return {
        installs: shown,
        nextCursor: rows.length > o.limit && last
          ? cursors.encode(appScope(clientId), [last.createdAt.toISOString(), last.installId] satisfies InstallPosition)
          : null
      }
    },

    /** The active installs in the user's org and entities: an organisation's connections. */
    listActiveIn (orgRefId: string, entityRefIds: string[]): Promise<Install[]> {
      return store.listActiveIn(orgRefId, entityRefIds)
    },

    /** How many active installs each app has (0 for apps without any). */
    async countActive (clientIds: string[]): Promise<Map<string, number>> {
      const counts = await store.countActive(clientIds)
      return new Map(clientIds.map(id => [id, counts.get(id) ?? 0]))
    },

    /**
     * Notes that an access token of the install was just used ("last used"), without holding up the request: a
     * write at most once a minute per install, and a failed write costs only the note.
     */
    noteUse (installId: string): void {
      const now = clock.now()
      const noted = usesNoted.get(installId)
      if (noted !== undefined && now - noted < USE_NOTE_MS) return
      if (usesNoted.size >= USE_NOTES_KEPT) usesNoted.clear()
      usesNoted.set(installId, now)
      store.noteUse(installId, new Date(now))
        .catch(err => log.warn({ err, installId }, 'could not note an install\'s use'))
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
