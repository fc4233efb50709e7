import { formActionSource } from '../../lib/redirect-uris.js'
import { describeScope } from '../../lib/scopes.js'
import type { SessionUser } from '../../plugins/domain/auth/user-session.js'
import type { ApiError } from '../../plugins/infrastructure/errors.js'
import type { ConsentRequest } from '../../plugins/domain/oauth/service.js'
import { html, type Html } from '../../views/html.js'
import { hiddenField } from '../../views/forms.js'
import { layout } from '../../views/layout.js'

/**
 * Security headers of every page here: no framing (clickjacking), no scripts, styles only from the service's own
 * stylesheet, forms only where they must go.
 */
function pageHeaders (formAction: string): Record<string, string> {
  return {
    'content-type': 'text/html; charset=utf-8',
    'cache-control': 'no-store',
    'x-frame-options': 'DENY',
    'x-content-type-options': 'nosniff',
    // same-origin, not no-referrer: under no-referrer browsers send `Origin: null` even on this same-origin post.
    'referrer-policy': 'same-origin',
    'content-security-policy': "default-src 'none'; style-src 'self'; img-src 'self'; " +
      `form-action ${formAction}; frame-ancestors 'none'; base-uri 'none'`
  }
}

/** The consent page's headers: its form posts here, and the answer redirects to the app. */
export const consentHeaders = (c: ConsentRequest): Record<string, string> =>
  pageHeaders(`'self' ${formActionSource(c.redirectUri)}`)

/** Where the browser goes after the decision, as a person reads it: the host, or the app's own scheme. */
function destination (uri: string): string {
  const url = new URL(uri)
  return url.protocol === 'http:' || url.protocol === 'https:' ? url.host : `${url.protocol}//${url.host}`
}

/** Who the app is, as far as this service can vouch for it. */
function provenance (c: ConsentRequest): Html {
  const a = c.app
  const site = a.websiteUrl
    ? html` · <a href="${a.websiteUrl}" rel="noopener noreferrer">${new URL(a.websiteUrl).host}</a>`
    : ''
  if (a.registeredBy === 'cimd') {
    return html`Identified by its metadata at <strong>${new URL(a.clientId).host}</strong>${site}. The marketplace \
has not reviewed it.`
  }
  if (a.registeredBy === 'dcr') {
    return html`Registered itself with the marketplace${site}. Its publisher is not verified.`
  }
  return a.publisher ? html`By <strong>${a.publisher}</strong>${site}` : html`Marketplace app${site}`
}

function scopeItem (scope: string): Html {
  const verb = scope.split(':')[1]
  const mark = verb === 'delete'
    ? html` <span class="mark">deletes data</span>`
    : verb === 'create' || verb === 'update' ? html` <span class="mark">changes data</span>` : ''
  return html`<li>${describeScope(scope)}${mark} <code>${scope}</code></li>`
}

function entityPicker (c: ConsentRequest): Html {
  const only = c.entities.length === 1
  const options = c.entities.map((e, i) => {
    const checked = e === c.entityRefId || (only && c.entityRefId === undefined)
    // `required` on one radio of the group makes choosing one required, without script.
    return html`
        <label><input type="radio" name="entity_ref_id" value="${e}"${checked ? html` checked` : ''}${
          i === 0 ? html` required` : ''}> ${e}</label>`
  })
  return html`<fieldset>
        <legend>Install into which entity?</legend>${options}
      </fieldset>`
}

/** The consent page: who asks, where the answer goes, which entity, for what, in plain words. Every value escaped. */
export function renderConsent (c: ConsentRequest, user: SessionUser): string {
  const fields = [
    hiddenField('client_id', c.app.clientId),
    hiddenField('redirect_uri', c.redirectUri),
    hiddenField('scope', c.scopes.join(' ')),
    hiddenField('state', c.state),
    hiddenField('code_challenge', c.codeChallenge),
    hiddenField('code_challenge_method', 'S256'),
    hiddenField('resource', c.resource),
    hiddenField('org_ref_id', c.orgRefId)
  ].map(f => html`
      ${f}`)
  return layout({
    title: `Install ${c.app.name}?`,
    narrow: true,
    main: html`    <h1><strong>${c.app.name}</strong> wants access to your accounting data</h1>
    <p class="muted">${provenance(c)}</p>
    <p>Organisation <strong>${c.orgRefId}</strong>, signed in as <strong>${user.sub}</strong>.</p>
    <form method="post" action="/oauth/authorize">${fields}
      ${entityPicker(c)}
      <p>If you allow it, the app will be able to:</p>
      <ul>
        ${c.scopes.map(scopeItem)}
      </ul>
      <p class="muted">After you choose, you go back to <strong>${destination(c.redirectUri)}</strong>.
        You can revoke this access at any time by uninstalling the app: its tokens stop working at once.</p>
      <div class="actions">
        <button type="submit" name="decision" value="allow">Allow</button>
        <button type="submit" name="decision" value="deny" formnovalidate>Deny</button>
      </div>
    </form>`
  }).toString()
}

/** A browser-facing error of /oauth/authorize: the same status, code and message as the JSON answer. */
export function renderErrorPage (e: ApiError): { headers: Record<string, string>, body: string } {
  const signIn = e.statusCode === 401
    ? html`
    <p>Sign in to the accounting system, then open the link that brought you here again.</p>`
    : html`
    <p>Go back to the app and start again; if this keeps happening, tell the app's developer what this page says.</p>`
  const title = e.statusCode === 401 ? 'Sign in to continue' : 'This request cannot be completed'
  return {
    headers: pageHeaders("'none'"),
    body: layout({
      title,
      narrow: true,
      main: html`    <h1>${title}</h1>
    <p>${e.message}</p>${signIn}
    <p class="muted">Error code: <code>${e.code}</code></p>`
    }).toString()
  }
}
