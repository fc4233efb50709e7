import { formActionSource } from '../../lib/redirect-uris.js'
import { describeScope } from '../../lib/scopes.js'
import type { SessionUser } from '../../plugins/domain/auth/user-session.js'
import type { ApiError } from '../../plugins/infrastructure/errors.js'
import type { ConsentRequest } from '../../plugins/domain/oauth/service.js'

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }
export const escapeHtml = (s: string): string => s.replace(/[&<>"']/g, c => ESCAPES[c]!)

const hidden = (name: string, value: string | undefined): string =>
  value === undefined ? '' : `<input type="hidden" name="${escapeHtml(name)}" value="${escapeHtml(value)}">`

/** Security headers of every page here: no framing (clickjacking), no scripts, forms only where they must go. */
function pageHeaders (formAction: string): Record<string, string> {
  return {
    'content-type': 'text/html; charset=utf-8',
    'cache-control': 'no-store',
    'x-frame-options': 'DENY',
    // same-origin, not no-referrer: under no-referrer browsers send `Origin: null` even on this same-origin post.
    'referrer-policy': 'same-origin',
    'content-security-policy': "default-src 'none'; style-src 'unsafe-inline'; " +
      `form-action ${formAction}; frame-ancestors 'none'; base-uri 'none'`
  }
}

/** The consent page's headers: its form posts here, and the answer redirects to the app. */
export const consentHeaders = (c: ConsentRequest): Record<string, string> =>
  pageHeaders(`'self' ${formActionSource(c.redirectUri)}`)

// Readable from 320 px up: nothing is wider than the screen, long identifiers wrap.
const STYLE = `
    body { font: 16px/1.5 system-ui, sans-serif; max-width: 34rem; margin: 2rem auto; padding: 0 1rem; color: #1a1a1a;
           overflow-wrap: anywhere; }
    h1 { font-size: 1.35rem; line-height: 1.3; } code { font-size: .85em; color: #555; }
    .muted { color: #555; font-size: .95rem; }
    .mark { font-size: .8rem; font-weight: 600; color: #8a1c00; background: #fff1ec; border-radius: .3rem;
            padding: 0 .35rem; white-space: nowrap; }
    fieldset { border: 1px solid #ccc; border-radius: .4rem; padding: .5rem 1rem; margin: 1rem 0; }
    label { display: block; padding: .25rem 0; cursor: pointer; }
    .actions { display: flex; flex-wrap: wrap; gap: .75rem; margin-top: 1.5rem; }
    button { font: inherit; padding: .5rem 1.25rem; border-radius: .4rem; border: 1px solid #888; background: #fff;
             cursor: pointer; }
    button[value=allow] { background: #1f6feb; border-color: #1f6feb; color: #fff; }
    :focus-visible { outline: 3px solid #1f6feb; outline-offset: 2px; }`

function page (title: string, main: string): string {
  return `<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <meta name="viewport" content="width=device-width, initial-scale=1">
  <title>${escapeHtml(title)}</title>
  <style>${STYLE}
  </style>
</head>
<body>
  <main>
${main}
  </main>
</body>
</html>
`
}

/** Where the browser goes after the decision, as a person reads it: the host, or the app's own scheme. */
function destination (uri: string): string {
  const url = new URL(uri)
  return url.protocol === 'http:' || url.protocol === 'https:' ? url.host : `${url.protocol}//${url.host}`
}

/** Who the app is, as far as this service can vouch for it. */
function provenance (c: ConsentRequest): string {
  const a = c.app
  const site = a.websiteUrl
    ? ` · <a href="${escapeHtml(a.websiteUrl)}" rel="noopener noreferrer">${escapeHtml(new URL(a.websiteUrl).host)}</a>`
    : ''
  if (a.registeredBy === 'cimd') {
    return `Identified by its metadata at <strong>${escapeHtml(new URL(a.clientId).host)}</strong>${site}. ` +
      'The marketplace has not reviewed it.'
  }
  if (a.registeredBy === 'dcr') return `Registered itself with the marketplace${site}. Its publisher is not verified.`
  return a.publisher ? `By <strong>${escapeHtml(a.publisher)}</strong>${site}` : `Marketplace app${site}`
}

function scopeItem (scope: string): string {
  const verb = scope.split(':')[1]
  const mark = verb === 'delete'
    ? ' <span class="mark">deletes data</span>'
    : verb === 'create' || verb === 'update' ? ' <span class="mark">changes data</span>' : ''
  return `<li>${escapeHtml(describeScope(scope))}${mark} <code>${escapeHtml(scope)}</code></li>`
}

function entityPicker (c: ConsentRequest): string {
  const only = c.entities.length === 1
  const options = c.entities.map((e, i) => {
    const checked = e === c.entityRefId || (only && c.entityRefId === undefined) ? ' checked' : ''
    // `required` on one radio of the group makes choosing one required, without script.
    return `<label><input type="radio" name="entity_ref_id" value="${escapeHtml(e)}"${checked}` +
      `${i === 0 ? ' required' : ''}> ${escapeHtml(e)}</label>`
  }).join('\n        ')
  return `<fieldset>
        <legend>Install into which entity?</legend>
        ${options}
      </fieldset>`
}

/** The consent page: who asks, where the answer goes, which entity, for what, in plain words. Every value escaped. */
export function renderConsent (c: ConsentRequest, user: SessionUser): string {
  const fields = [
    hidden('client_id', c.app.clientId),
    hidden('redirect_uri', c.redirectUri),
    hidden('scope', c.scopes.join(' ')),
    hidden('state', c.state),
    hidden('code_challenge', c.codeChallenge),
    hidden('code_challenge_method', 'S256'),
    hidden('resource', c.resource),
    hidden('org_ref_id', c.orgRefId)
  ].join('\n      ')
  const who = `Organisation <strong>${escapeHtml(c.orgRefId)}</strong>, signed in as ` +
    `<strong>${escapeHtml(user.sub)}</strong>.`
  return page(`Install ${c.app.name}?`, `    <h1><strong>${escapeHtml(c.app.name)}</strong> wants access to your \
accounting data</h1>
    <p class="muted">${provenance(c)}</p>
    <p>${who}</p>
    <form method="post" action="/oauth/authorize">
      ${fields}
      ${entityPicker(c)}
      <p>If you allow it, the app will be able to:</p>
      <ul>
        ${c.scopes.map(scopeItem).join('\n        ')}
      </ul>
      <p class="muted">After you choose, you go back to <strong>${escapeHtml(destination(c.redirectUri))}</strong>.
        You can revoke this access at any time by uninstalling the app: its tokens stop working at once.</p>
      <div class="actions">
        <button type="submit" name="decision" value="allow">Allow</button>
        <button type="submit" name="decision" value="deny" formnovalidate>Deny</button>
      </div>
    </form>`)
}

/** A browser-facing error of /oauth/authorize: the same status, code and message as the JSON answer. */
export function renderErrorPage (e: ApiError): { headers: Record<string, string>, body: string } {
  const signIn = e.statusCode === 401
    ? '\n    <p>Sign in to the accounting system, then open the link that brought you here again.</p>'
    : '\n    <p>Go back to the app and start again; if this keeps happening, tell the app\'s developer what this ' +
      'page says.</p>'
  const title = e.statusCode === 401 ? 'Sign in to continue' : 'This request cannot be completed'
  return {
    headers: pageHeaders("'none'"),
    body: page(title, `    <h1>${escapeHtml(title)}</h1>
    <p>${escapeHtml(e.message)}</p>${signIn}
    <p class="muted">Error code: <code>${escapeHtml(e.code)}</code></p>`)
  }
}
