/**
 * An OAuth client as the rules read it: an app a developer registered, or a client that registered itself (DCR,
 * CIMD). Below the apps, OAuth and client-authentication modules, which all take it.
 */
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

/** A client's metadata document could not be fetched or is not acceptable; the message says why, for its developer. */
export class ClientMetadataError extends Error {
  override name = 'ClientMetadataError'
}
