/**
 * Redirect URIs: which may be registered, and when a presented one matches a registered one
 * (docs/rules.md#clients; RFC 6749 3.1.2, RFC 8252 for native clients).
 */

const LOOPBACK_HOSTS = new Set(['127.0.0.1', '[::1]', 'localhost'])
// Schemes a browser runs or reads rather than hands to an app: never a place to send an authorization code.
const REFUSED_SCHEMES = new Set([
  'javascript', 'data', 'vbscript', 'file', 'about', 'blob', 'filesystem', 'view-source', 'chrome', 'ws', 'wss',
  'ftp', 'mailto', 'tel', 'sms'
])

/**
 * Private-use schemes of MCP clients that are not reverse domain names, taken as their clients register them. Any
 * other private-use scheme must be a reverse domain name (RFC 8252 7.1), so that it names one app: `x-javascript:`,
 * `jar:`, `ms-settings:` or `chrome-extension:` name something else.
 */
const KNOWN_APP_SCHEMES = new Set(['cursor', 'vscode', 'vscode-insiders'])
const REVERSE_DOMAIN = /^[a-z][a-z0-9-]*(\.[a-z0-9-]+)+$/

/**
 * `developer`: apps registered by a developer, https only. `native`: clients that register
 * themselves (DCR, CIMD), which may also be native apps: loopback http on any port and private-use schemes
 * such as `cursor://` (RFC 8252 7.1 and 7.3).
 */
export type RedirectPolicy = 'developer' | 'native'

const isLoopbackHttp = (url: URL): boolean => url.protocol === 'http:' && LOOPBACK_HOSTS.has(url.hostname)

/** What is wrong with a redirect URI offered for registration, or undefined. */
export function redirectUriProblem (uri: string, policy: RedirectPolicy): string | undefined {
  const url = URL.canParse(uri) ? new URL(uri) : undefined
  if (!url || /\s/.test(uri)) return `${JSON.stringify(uri)} is not an absolute URI.`
  if (url.hash || uri.includes('#')) return `${JSON.stringify(uri)} must not have a fragment.`
  if (url.username || url.password) return `${JSON.stringify(uri)} must not have user info.`
  if (url.protocol === 'https:') return undefined
  if (policy === 'developer') return `${JSON.stringify(uri)} must be an https URL.`
  if (url.protocol === 'http:') {
    return isLoopbackHttp(url)
      ? undefined
      : `${JSON.stringify(uri)}: http is allowed only on a loopback address (127.0.0.1, [::1] or localhost).`
  }
  const scheme = url.protocol.slice(0, -1)
  if (REFUSED_SCHEMES.has(scheme)) return `${JSON.stringify(uri)}: the ${scheme}: scheme cannot receive a redirect.`
  if (!REVERSE_DOMAIN.test(scheme) && !KNOWN_APP_SCHEMES.has(scheme)) {
    return `${JSON.stringify(uri)}: a private-use scheme must be a reverse domain name of the app, such as ` +
      'com.example.app:/callback (RFC 8252 section 7.1).'
  }
  return undefined
}

/**
 * A redirect URI as it is stored for a client that registered itself: the URL's own serialisation (scheme and host
 * in lower case, no default port, dot segments resolved), so that equal URIs are stored alike. Call it on a URI
 * `redirectUriProblem` accepted.
 */
export const normalizedRedirectUri = (uri: string): string => new URL(uri).href

/**
 * Whether `presented` is the registered URI. Exactly, except that a loopback redirect matches on any port, since
 * a native app gets its port from the operating system at the time of the request (RFC 8252 7.3).
 */
export function redirectUriMatches (registered: string, presented: string): boolean {
  if (registered === presented) return true
  if (!URL.canParse(registered) || !URL.canParse(presented)) return false
  // A client that registered itself may present the URI as it wrote it; it was stored normalised.
  if (!presented.includes('#') && normalizedRedirectUri(presented) === registered) return true
  const r = new URL(registered)
  const p = new URL(presented)
  return isLoopbackHttp(r) && p.protocol === r.protocol && p.hostname === r.hostname &&
    p.pathname === r.pathname && p.search === r.search && !p.username && !p.password && !presented.includes('#')
}

/** The CSP `form-action` source that lets the consent form's redirect reach this URI. */
export function formActionSource (uri: string): string {
  const url = new URL(uri)
  return url.protocol === 'http:' || url.protocol === 'https:' ? url.origin : url.protocol
}
