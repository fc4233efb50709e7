import fp from 'fastify-plugin'
import { notify, type Queryable } from '../../infrastructure/db/index.js'
import { createInstallStore, type Install } from '../installs/store.js'

type PrincipalFields = 'installId' | 'clientId' | 'appSlug' | 'orgRefId' | 'entityRefId'
/** The install a request acts for, as the database says it is right now (scopes included, not the token's). */
export type Principal = Readonly<Pick<Install, PrincipalFields>> & {
  /** Shared by every request the cached state serves: frozen, and typed so. */
  readonly scopes: readonly string[]
}

/** An install's principal: what a request acts as; frozen, as every request the cached state serves shares it. */
export const principalOf = (i: Pick<Install, PrincipalFields | 'scopes'>): Principal => Object.freeze({
  installId: i.installId,
  clientId: i.clientId,
  appSlug: i.appSlug,
  orgRefId: i.orgRefId,
  entityRefId: i.entityRefId,
  scopes: Object.freeze([...i.scopes])
})

/** What the database says about an install and its app: the authority behind every access token. */
export interface AccessState {
  /** Built once per load, so that the requests it serves share it instead of each copying it. */
  principal: Principal
  status: Install['status']
  apiKeyEnabled: boolean
  /** Epoch milliseconds of the last key disable; tokens issued at or before it are dead for good. */
  keyDisabledAt: number | null
  /** Epoch milliseconds of the last refresh-token family revocation; access tokens issued until then are dead. */
  tokensRevokedAt: number | null
}

export type AccessKey = { installId: string } | { clientId: string }

const CHANNEL = 'access_changed'
const MAX_ENTRIES = 50_000

declare module 'fastify' {
  interface FastifyInstance {
    accessState: {
      get(installId: string): Promise<AccessState | undefined>
      /** Runs `fn` in a transaction that changes install or app state, and makes every instance forget it. */
      change<T>(key: AccessKey, fn: (q: Queryable) => Promise<T>): Promise<T>
    }
  }
}

/**
 * A read-through cache of install and key state. It may serve reads only while Postgres notifications are
 * flowing: every change notifies `access_changed` in its own transaction, every instance drops the entry it
 * names, and if the listener connection drops the whole cache goes and stays off until it is back.
 */
export default fp(async (app) => {
  const { db } = app
  const installs = createInstallStore(db)
  const byInstall = new Map<string, AccessState>()
  // Bumped on every invalidation, so a read that raced with a change does not cache what it read.
  let generation = 0

  function forget (key: AccessKey): void {
    generation++
    if ('installId' in key) {
      byInstall.delete(key.installId)
      return
    }
    for (const [id, state] of byInstall) if (state.principal.clientId === key.clientId) byInstall.delete(id)
  }

  function parse (payload: string): AccessKey | undefined {
    const colon = payload.indexOf(':')
    const kind = payload.slice(0, colon)
    const id = payload.slice(colon + 1)
    if (kind === 'install') return { installId: id }
    if (kind === 'app') return { clientId: id }
    return undefined
  }

  await db.listen(CHANNEL, payload => {
    const key = parse(payload)
    if (key) forget(key)
  })
  db.onNotificationsLost(() => {
    generation++
    byInstall.clear()
  })

  async function load (id: string): Promise<AccessState | undefined> {
    const stored = await installs.find(id)
    if (!stored) return undefined
    return {
      principal: principalOf(stored.install),
      status: stored.install.status,
      apiKeyEnabled: stored.access.apiKeyEnabled,
      keyDisabledAt: stored.access.keyDisabledAt?.getTime() ?? null,
      tokensRevokedAt: stored.access.tokensRevokedAt?.getTime() ?? null
    }
  }

  app.decorate('accessState', {
    async get (installId: string) {
      const cached = byInstall.get(installId)
      const hit = cached !== undefined && db.notificationsHealthy
      app.metrics?.accessCache(hit)
      if (hit) return cached
      const before = generation
      const state = await load(installId)
      if (state && db.notificationsHealthy && generation === before) {
        if (byInstall.size >= MAX_ENTRIES) byInstall.delete(byInstall.keys().next().value!)
        byInstall.set(installId, state)
      }
      return state
    },
    async change<T> (key: AccessKey, fn: (q: Queryable) => Promise<T>): Promise<T> {
      const payload = 'installId' in key ? `install:${key.installId}` : `app:${key.clientId}`
      try {
        return await db.tx(async q => {
          const result = await fn(q)
          await notify(q, CHANNEL, payload)
          return result
        })
      } finally {
        // This instance refuses on the very next request, without waiting for its own notification.
        forget(key)
      }
    }
  })
}, { name: 'access-state', dependencies: ['db'] })
