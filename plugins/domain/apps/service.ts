import { randomBytes } from 'node:crypto'
import type { FastifyBaseLogger, FastifyInstance } from 'fastify'
import type { Clock } from '../../../lib/clock.js'
import { randomToken, safeEqual, sha256 } from '../../../lib/crypto.js'
import { normalizedRedirectUri, redirectUriProblem } from '../../../lib/redirect-uris.js'
import { isKnownScope, WIRED_SCOPES } from '../../../lib/scopes.js'
import { errors } from '../../infrastructure/errors.js'
import { isMetadataUrl, type ClientMetadataFetcher } from '../oauth/client-metadata.js'
import { ClientMetadataError, type App } from '../common/clients.js'
import type { AppStore } from './store.js'

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

/** A self-registered client granted nothing within this many hours is deleted (docs/rules.md#clients). */
export const UNUSED_REGISTRATION_HOURS = 24
/** Unused registrations deleted per sweep: a few at a time, so that a sweep never holds a registration up long. */
const SWEEP_BATCH = 20

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

export interface AppServiceDeps {
  store: AppStore
  metadata: ClientMetadataFetcher
  /** The access-state transaction: a key change is announced to every instance's cache. */
  changeAccess: FastifyInstance['accessState']['change']
  clock: Clock
  log: FastifyBaseLogger
}

/**
 * Registered apps and their API keys (docs/rules.md#apps-and-api-keys): what the routes, the CLI, client
 * authentication and the OAuth flow call. Client secrets are kept only as hashes.
 */
export function createAppService ({ store, metadata, changeAccess, clock, log }: AppServiceDeps) {
  /**
   * Registrations never used are forgotten: a self-registered client granted nothing (no install, no authorization
   * code) within UNUSED_REGISTRATION_HOURS of registering is deleted. A few at a time, whenever a client
   * registers, so that the table stays bounded however many registrations come and nothing else has to run.
   */
  async function forgetUnusedRegistrations (): Promise<void> {
    await store.deleteUnusedRegistrations(new Date(clock.now() - UNUSED_REGISTRATION_HOURS * 3600_000), SWEEP_BATCH)
  }

  /** Fetches a metadata document and stores the client it describes, its slug kept across fetches. */
  async function refreshFromMetadata (clientId: string): Promise<App> {
    const doc = await metadata.fetch(clientId)
    const scopes = requestedScopes(doc.scope, m => new ClientMetadataError(`scope: ${m}`))
    const stored = await store.upsertDescribedApp({
      clientId,
      slug: generatedSlug(doc.name),
      name: doc.name,
      websiteUrl: doc.websiteUrl ?? null,
      redirectUris: doc.redirectUris,
      scopes,
      maxAgeS: doc.maxAgeS
    })
    if (!stored) throw new ClientMetadataError('This client_id is registered otherwise.')
    return stored.app
  }

  return {
    async register (ownerSub: string, input: NewApp): Promise<{ app: App, clientSecret: string }> {
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
      const clientSecret = randomToken('mgs_')
      const stored = await store.insertDeveloperApp({
        clientId: randomToken('app_', 12),
        slug: input.slug,
        name: input.name,
        ownerSub,
        secretHash: sha256(clientSecret),
        redirectUris: [...new Set(input.redirectUris)],
        scopes,
        publisher: input.publisher ?? null,
        websiteUrl: input.websiteUrl ?? null
      })
      if (!stored) throw errors.conflict(`An app with slug ${JSON.stringify(input.slug)} already exists.`)
      return { app: stored.app, clientSecret }
    },

    /**
     * Dynamic Client Registration (RFC 7591): a new client for every registration, its redirect URIs stored
     * normalised. Throws RFC 7591 3.2.2 errors.
     */
    async registerDynamic (input: DynamicRegistration): Promise<{ app: App, clientSecret?: string }> {
      if (input.redirectUris.length === 0) throw errors.registrationInvalidRedirectUri('redirect_uris is required.')
      for (const uri of input.redirectUris) {
        const problem = redirectUriProblem(uri, 'native')
        if (problem) throw errors.registrationInvalidRedirectUri(problem)
      }
      const scopes = requestedScopes(input.scope, errors.invalidClientMetadata)
      const isPublic = input.authMethod === 'none'
      const clientSecret = isPublic ? undefined : randomToken('mgs_')
      // Every registration is a client of its own, even when another registered the same metadata: disabling one
      // must not cut off the other users of the same client software.
      const stored = await store.insertDynamicApp({
        clientId: randomToken('app_', 12),
        slug: generatedSlug(input.name),
        name: input.name ?? 'Unnamed client',
        secretHash: clientSecret === undefined ? null : sha256(clientSecret),
        redirectUris: [...new Set(input.redirectUris.map(normalizedRedirectUri))],
        scopes,
        websiteUrl: input.websiteUrl ?? null,
        clientType: isPublic ? 'public' : 'confidential'
      })
      // Beside the answer, not in its way: a sweep that fails (a consent racing with it) costs this client nothing.
      forgetUnusedRegistrations().catch(err => log.warn({ err }, 'could not forget unused registrations'))
      return { app: stored.app, ...(clientSecret === undefined ? {} : { clientSecret }) }
    },

    listOwnedBy (ownerSub: string): Promise<App[]> {
      return store.listOwnedBy(ownerSub)
    },

    /** The developer's own app; undefined for an unknown id and for anyone else's app alike. */
    async findOwned (ownerSub: string, clientId: string): Promise<App | undefined> {
      const stored = await store.find(clientId)
      return stored?.app.ownerSub === ownerSub ? stored.app : undefined
    },

    /** Whether the developer owns any app: where the dashboard takes them first. */
    ownsAny (ownerSub: string): Promise<boolean> {
      return store.ownsAny(ownerSub)
    },

    /**
     * The client behind a client_id: a registered app, or, for an https URL, the client its metadata document
     * describes (fetched, checked and cached as its caching headers allow). `discover: false` fetches only documents
     * already known (kept fresh), never a new one. Throws `ClientMetadataError`.
     */
    async resolve (clientId: string, { discover = true }: { discover?: boolean } = {}): Promise<App | undefined> {
      const stored = await store.find(clientId)
      const fresh = (s: NonNullable<typeof stored>) =>
        s.app.registeredBy !== 'cimd' || (s.metadataExpiresAt !== null && s.metadataExpiresAt.getTime() > clock.now())
      if (stored && fresh(stored)) return stored.app
      if (!isMetadataUrl(clientId) || (!stored && !discover)) return undefined
      return refreshFromMetadata(clientId)
    },

    /** The app whose credentials these are, whatever its key state; undefined when they are wrong. */
    async authenticateClient (clientId: string, clientSecret: string): Promise<App | undefined> {
      const stored = await store.find(clientId)
      if (!stored?.secretHash || !safeEqual(stored.secretHash, sha256(clientSecret))) return undefined
      return stored.app
    },

    /** `ownerSub` null: the operator (`marketplace-gateway client-key`), for any app, self-registered ones too. */
    setKeyEnabled (ownerSub: string | null, clientId: string, enabled: boolean): Promise<App | undefined> {
      return changeAccess({ clientId }, q => store.setKeyEnabled(q, ownerSub, clientId, enabled))
    }
  }
}

export type AppService = ReturnType<typeof createAppService>
