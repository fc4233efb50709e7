import type { IncomingHttpHeaders } from 'node:http'

/**
 * Whether a browser sent the request from another site (a cross-site form post carries the user's cookies: CSRF).
 * The browser's own verdict (`Sec-Fetch-Site`) when it gives one: `same-origin`, or `none` for what the user typed
 * or bookmarked; otherwise the `Origin` header (older browsers), which must be the service's own when present.
 */
export function isCrossSite (headers: IncomingHttpHeaders, ownOrigin: string): boolean {
  const site = headers['sec-fetch-site']
  const origin = headers.origin
  return site !== undefined ? site !== 'same-origin' && site !== 'none' : origin !== undefined && origin !== ownOrigin
}
