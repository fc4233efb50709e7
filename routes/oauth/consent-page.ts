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

/**
 * Where a visitor without a session signs in from the consent page, to come back to the same authorization request:
 * the accounting system's sign-in page (LOGIN_URL), or on a development machine a one-time sign-in link of the
 * development user.
 */
export type SignIn =
  | { kind: 'accounting-system', href: string }
  | { kind: 'development', href: string, user: SessionUser }

/** What the 401 page says to do: follow the sign-in link when there is one, else sign in and start again. */
function signInStep (signIn: SignIn | undefined): Html {
  if (signIn?.kind === 'accounting-system') {
    return html`
    <p><a href="${signIn.href}">Sign in to the accounting system</a>. You come back to this page afterwards.</p>`
  }
  if (signIn?.kind === 'development') {
    return html`
    <p>This is a development service, with no accounting system to sign in to.
      <a href="${signIn.href}">Sign in as ${signIn.user.sub} of ${signIn.user.orgRefId}</a> (entity
      ${signIn.user.entityRefIds.join(', ')}; a one-time link, valid 10 minutes). You come back to this page
      afterwards.</p>`
  }
  return html`
    <p>Sign in to the accounting system, then open the link that brought you here again.</p>`
}

/**
 * A browser-facing error of /oauth/authorize: the same status, code and message as the JSON answer. A 401 says how
 * to sign in, with a link that comes back to the request when `signIn` gives one.
 */
export function renderErrorPage (e: ApiError, signIn?: SignIn): { headers: Record<string, string>, body: string } {
  const next = e.statusCode === 401
    ? signInStep(signIn)
    : html`
    <p>Go back to the app and start again; if this keeps happening, tell the app's developer what this page says.</p>`
  const title = e.statusCode === 401 ? 'Sign in to continue' : 'This request cannot be completed'
  return {
    headers: pageHeaders("'none'"),
    body: layout({
      title,
      narrow: true,
      main: html`    <h1>${title}</h1>
    <p>${e.message}</p>${next}
    <p class="muted">Error code: <code>${e.code}</code></p>`
    }).toString()
  }
}
