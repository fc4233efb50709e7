import { request, type Agent } from 'undici'
import { VERSION } from '../../../lib/root.js'
import { redirectUriProblem } from '../../../lib/redirect-uris.js'
import { ClientMetadataError } from '../common/clients.js'
import { guardedAgent, refusedLiteral, type OutboundPolicy } from '../webhooks/target-guard.js'

/** The draft's suggestion: a metadata document is small; anything larger is not one. */
export const MAX_DOCUMENT_BYTES = 5 * 1024
/** The default limit on one fetch; CLIENT_METADATA_TIMEOUT_SECONDS sets another. */
export const FETCH_TIMEOUT_MS = 3_000
/** Without caching headers a document is fetched again after an hour; however long it says, at most a day. */
const DEFAULT_MAX_AGE_S = 3_600
const MAX_MAX_AGE_S = 86_400

/** A Client ID Metadata Document, as far as this service uses it (draft-ietf-oauth-client-id-metadata-document). */
export interface ClientMetadata {
  clientId: string
  name: string
  websiteUrl: string | undefined
  redirectUris: string[]
  /** Space-separated scopes the document asks for, if it says. */
  scope: string | undefined
  /** How long the document may be used before it is fetched again. */
  maxAgeS: number
}

/** A client_id that names a metadata document: an https URL with a path (the MCP SDK's test, and the draft's). */
export function isMetadataUrl (clientId: string): boolean {
  if (!clientId.startsWith('https://') || !URL.canParse(clientId)) return false
  const url = new URL(clientId)
  return url.pathname !== '/' && !url.hash && !url.username && !url.password
}

function maxAgeOf (cacheControl: string | undefined, expires: string | undefined, now: number): number {
  const directives = (cacheControl ?? '').toLowerCase()
  if (/(^|,)\s*(no-store|no-cache)\b/.test(directives)) return 0
  const maxAge = directives.match(/(^|,)\s*max-age\s*=\s*"?(\d+)/)
  if (maxAge) return Math.min(Number(maxAge[2]), MAX_MAX_AGE_S)
  const at = expires ? Date.parse(expires) : NaN
  if (!Number.isNaN(at)) return Math.max(0, Math.min(Math.floor((at - now) / 1000), MAX_MAX_AGE_S))
  return DEFAULT_MAX_AGE_S
}

const header = (v: string | string[] | undefined): string | undefined => (Array.isArray(v) ? v.join(', ') : v)

/** How long a document that could not be used is answered from memory, without fetching it again. */
export const FAILURE_CACHE_MS = 30_000
/** Failures remembered at most, oldest out. */
const MAX_FAILURES = 1_000

/**
 * Fetches metadata documents through the same guard as webhook deliveries: no private addresses (unless the
 * operator allows them), a time limit, a size limit, no redirects followed.
 */
export class ClientMetadataFetcher {
  private readonly agent: Agent
  /** Fetches under way, by client_id: requests that need the same document at once share one fetch. */
  private readonly pending = new Map<string, Promise<ClientMetadata>>()
  /** Recent failures, by client_id: a document that could not be used is not fetched again for a while. */
  private readonly failures = new Map<string, { error: ClientMetadataError, until: number }>()

  /**
   * `timeoutMs`: the limit on one fetch, connection to last byte (CLIENT_METADATA_TIMEOUT_SECONDS); `now`: the
   * clock of the failure cache and of a document's `Expires`.
   */
  constructor (
    private readonly policy: OutboundPolicy,
    private readonly timeoutMs = FETCH_TIMEOUT_MS,
    private readonly now: () => number = Date.now
  ) {
    this.agent = guardedAgent(policy, {
      connectTimeoutMs: timeoutMs,
      responseTimeoutMs: timeoutMs,
      connections: 16
    })
  }

  /**
   * The client a metadata document describes. Concurrent calls for one client_id share one fetch, and a failure is
   * answered again without fetching for FAILURE_CACHE_MS: otherwise every authorization request of a client with a
   * broken document (and clients retry) would be an outbound fetch, 40 at once for 40 requests.
   */
  fetch (clientId: string): Promise<ClientMetadata> {
    const failed = this.failures.get(clientId)
    if (failed && failed.until > this.now()) return Promise.reject(failed.error)
    let pending = this.pending.get(clientId)
    if (!pending) {
      pending = this.fetchOnce(clientId).then(doc => {
        this.failures.delete(clientId)
        return doc
      }, (err: unknown) => {
        if (err instanceof ClientMetadataError) {
          if (this.failures.size >= MAX_FAILURES) this.failures.delete(this.failures.keys().next().value!)
          this.failures.set(clientId, { error: err, until: this.now() + FAILURE_CACHE_MS })
        }
        throw err
      }).finally(() => this.pending.delete(clientId))
      this.pending.set(clientId, pending)
    }
    return pending
  }

  private async fetchOnce (clientId: string): Promise<ClientMetadata> {
    const url = new URL(clientId)
    if (refusedLiteral(url, this.policy.allowPrivate)) {
      throw new ClientMetadataError('The client metadata document is at a private or reserved address.')
    }
    const { text, maxAgeS } = await this.download(url)
    let doc: Record<string, unknown>
    try {
      doc = JSON.parse(text) as Record<string, unknown>
    } catch {
      throw new ClientMetadataError('The client metadata document is not JSON.')
    }
    if (typeof doc !== 'object' || doc === null || Array.isArray(doc)) {
      throw new ClientMetadataError('The client metadata document is not a JSON object.')
    }
    return { ...this.validate(clientId, doc), maxAgeS }
  }

  private async download (url: URL): Promise<{ text: string, maxAgeS: number }> {
    let res: Awaited<ReturnType<typeof request>>
    try {
      res = await request(url, {
        method: 'GET',
        dispatcher: this.agent,
        signal: AbortSignal.timeout(this.timeoutMs),
        headers: { accept: 'application/json', 'user-agent': `marketplace-gateway/${VERSION}` }
      })
    } catch (err) {
      const e = err as Error & { code?: string, cause?: { code?: string } }
      const code = e.code ?? e.cause?.code
      if (code === 'ETARGETBLOCKED') {
        throw new ClientMetadataError('The client metadata document is at a private or reserved address.')
      }
      if (e.name === 'TimeoutError' || (code !== undefined && /TIMEOUT/.test(code))) {
        throw new ClientMetadataError(`The client metadata document did not arrive within ${this.timeoutMs} ms.`)
      }
      throw new ClientMetadataError(`The client metadata document could not be fetched (${code ?? e.name}).`)
    }
    const { statusCode, headers, body } = res
    // Bodies left unread are destroyed on purpose; what goes wrong while reading one reaches the loop below.
    body.on('error', () => {})
    if (statusCode !== 200) {
      body.destroy()
      throw new ClientMetadataError(
        statusCode >= 300 && statusCode < 400
          ? `The client metadata document answered a redirect (${statusCode}); redirects are not followed.`
          : `The client metadata document answered HTTP ${statusCode}.`
      )
    }
    const tooLarge = new ClientMetadataError(`The client metadata document is larger than ${MAX_DOCUMENT_BYTES} bytes.`)
    if (Number(headers['content-length'] ?? 0) > MAX_DOCUMENT_BYTES) {
      body.destroy()
      throw tooLarge
    }
    const chunks: Buffer[] = []
    let size = 0
    try {
      for await (const chunk of body) {
        size += (chunk as Buffer).length
        if (size > MAX_DOCUMENT_BYTES) break
        chunks.push(chunk as Buffer)
      }
    } catch {
      throw new ClientMetadataError(`The client metadata document did not arrive within ${this.timeoutMs} ms.`)
    }
    if (size > MAX_DOCUMENT_BYTES) throw tooLarge
    return {
      text: Buffer.concat(chunks).toString('utf8'),
      maxAgeS: maxAgeOf(header(headers['cache-control']), header(headers.expires), this.now())
    }
  }

  private validate (clientId: string, doc: Record<string, unknown>): Omit<ClientMetadata, 'maxAgeS'> {
    if (doc.client_id !== clientId) {
      throw new ClientMetadataError(
        `The client metadata document's client_id (${JSON.stringify(doc.client_id)}) is not its URL.`)
    }
    if ('client_secret' in doc || 'client_secret_expires_at' in doc) {
      throw new ClientMetadataError('A client metadata document must not carry a client secret.')
    }
    const method = doc.token_endpoint_auth_method ?? 'none'
    if (method !== 'none') {
      throw new ClientMetadataError('token_endpoint_auth_method must be none: such a client is public.')
    }
    const uris = doc.redirect_uris
    if (!Array.isArray(uris) || uris.length === 0 || uris.length > 10 || !uris.every(u => typeof u === 'string')) {
      throw new ClientMetadataError('redirect_uris must be an array of 1 to 10 URIs.')
    }
    for (const uri of uris as string[]) {
      const problem = redirectUriProblem(uri, 'native')
      if (problem) throw new ClientMetadataError(`redirect_uris: ${problem}`)
    }
    const name = typeof doc.client_name === 'string' && doc.client_name.trim() ? doc.client_name.trim() : undefined
    const site = typeof doc.client_uri === 'string' && /^https:\/\//.test(doc.client_uri) ? doc.client_uri : undefined
    return {
      clientId,
      name: (name ?? new URL(clientId).host).slice(0, 100),
      websiteUrl: site,
      redirectUris: uris as string[],
      scope: typeof doc.scope === 'string' ? doc.scope : undefined
    }
  }

  async close (): Promise<void> {
    await this.agent.close()
  }
}
