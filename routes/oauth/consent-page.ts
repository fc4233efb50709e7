import { describeScope } from '../../lib/scopes.js'
import type { SessionUser } from '../../plugins/auth/user-session.js'
import type { ConsentRequest } from '../../plugins/oauth.js'

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }
export const escapeHtml = (s: string): string => s.replace(/[&<>"']/g, c => ESCAPES[c]!)

const hidden = (name: string, value: string | undefined): string =>
  value === undefined ? '' : `<input type="hidden" name="${escapeHtml(name)}" value="${escapeHtml(value)}">`

/** Security headers for the page: no framing (clickjacking), no scripts, forms only to here and to the app. */
export function consentHeaders (c: ConsentRequest): Record<string, string> {
  return {
    'content-type': 'text/html; charset=utf-8',
    'cache-control': 'no-store',
    'x-frame-options': 'DENY',
    // same-origin, not no-referrer: under no-referrer browsers send `Origin: null` even on this same-origin post.
    'referrer-policy': 'same-origin',
    'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; " +
      `form-action 'self' ${new URL(c.redirectUri).origin}; frame-ancestors 'none'; base-uri 'none'`
  }
}

/** The consent page: who asks, for which entity, for what, in plain words. Every value is escaped. */
export function renderConsent (c: ConsentRequest, user: SessionUser): string {
  const fields = [
    hidden('client_id', c.app.clientId),
    hidden('redirect_uri', c.redirectUri),
    hidden('scope', c.scopes.join(' ')),
    hidden('state', c.state),
    hidden('code_challenge', c.codeChallenge),
    hidden('code_challenge_method', 'S256'),
    hidden('org_ref_id', c.orgRefId),
    hidden('entity_ref_id', c.entityRefId)
  ].join('\n      ')
  const scopes = c.scopes
    .map(s => `<li>${escapeHtml(describeScope(s))} <code>${escapeHtml(s)}</code></li>`)
    .join('\n        ')
  const heading = `<strong>${escapeHtml(c.app.name)}</strong> wants access to entity ` +
    `<strong>${escapeHtml(c.entityRefId)}</strong>`
  const signedIn = `Organisation <strong>${escapeHtml(c.orgRefId)}</strong>, ` +
    `signed in as <strong>${escapeHtml(user.sub)}</strong>.`
  return `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>Install ${escapeHtml(c.app.name)}?</title>
  <style>
    body { font: 16px/1.5 system-ui, sans-serif; max-width: 32rem; margin: 3rem auto; padding: 0 1rem; color: #1a1a1a; }
    h1 { font-size: 1.4rem; } code { font-size: .85em; color: #555; }
    .actions { display: flex; gap: .75rem; margin-top: 1.5rem; }
    button { font: inherit; padding: .5rem 1.25rem; border-radius: .4rem; border: 1px solid #888; background: #fff;
             cursor: pointer; }
    button[value=allow] { background: #1f6feb; border-color: #1f6feb; color: #fff; }
  </style>
</head>
<body>
  <main>
    <h1>${heading}</h1>
    <p>${signedIn}</p>
    <p>If you allow it, the app will be able to:</p>
    <ul>
        ${scopes}
    </ul>
    <form method="post" action="/oauth/authorize">
      ${fields}
      <div class="actions">
        <button type="submit" name="decision" value="allow">Allow</button>
        <button type="submit" name="decision" value="deny">Deny</button>
      </div>
    </form>
  </main>
</body>
</html>
`
}
