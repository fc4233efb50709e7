import { html, type Html } from './html.js'

/** A refusal or failure as the dashboard shows it: what happened, in the catalog's words, and what to do next. */
export interface PageError {
  statusCode: number
  code: string
  message: string
  /** What exactly was wrong with the request, field by field. */
  details?: ReadonlyArray<{ path: string, message: string }> | undefined
}

/** How to get a sign-in link, said wherever one is needed. */
export const HOW_TO_SIGN_IN = html`<p>Open the dashboard from the accounting system, which signs you in. On a
    development machine, print a sign-in link (valid 10 minutes, usable once) and open it:</p>
    <pre tabindex="0"><code>npx marketplace-gateway dashboard-link --sub YOUR_USER_ID --org YOUR_ORG_ID</code></pre>`

function nextStep (e: PageError): Html {
  if (e.code === 'invalid_sign_in_link') {
    return html`<p>A sign-in link works once and for 10 minutes. Get a new one:</p>
    ${HOW_TO_SIGN_IN}`
  }
  if (e.statusCode === 404) return html`<p><a href="/dashboard">Go to the dashboard</a>.</p>`
  if (e.statusCode === 403) {
    return html`<p>Nothing was changed. <a href="/dashboard">Go back to the dashboard</a>, sign in if you need to,
    and try again from there.</p>`
  }
  if (e.statusCode >= 500) return html`<p>Nothing you did caused this. Try again in a few seconds.</p>`
  return html`<p>Go back, correct it and try again, or <a href="/dashboard">go to the dashboard</a>.</p>`
}

/** A field as a form names it: `/since` is `since`. */
const fieldName = (path: string): string => path.replace(/^\//, '') || 'request'

/** The title of the page that shows an error. */
export function errorTitle (e: PageError): string {
  if (e.code === 'invalid_sign_in_link') return 'This sign-in link cannot be used'
  if (e.statusCode === 404) return 'Page not found'
  if (e.statusCode === 403) return 'This action was refused'
  if (e.statusCode >= 500) return 'Something went wrong'
  return 'This request cannot be completed'
}

/** The main content of the page that shows an error. */
export function errorMain (e: PageError): Html {
  return html`<h1>${errorTitle(e)}</h1>
    <p>${e.message}</p>
    ${e.details && e.details.length > 0
      ? html`<ul>${e.details.map(d => html`<li><code>${fieldName(d.path)}</code> ${d.message}</li>`)}</ul>`
      : ''}
    ${nextStep(e)}
    <p class="muted">Error code: <code>${e.code}</code></p>`
}

/** The sign-in page: how to sign in, for a visitor without a session. */
export function signInMain (signedInAs: string | undefined): Html {
  return html`<h1>Sign in to the marketplace dashboard</h1>
    ${signedInAs
      ? html`<p>You are signed in as <strong>${signedInAs}</strong>. <a href="/dashboard">Go to the dashboard</a>.</p>`
      : ''}
    ${HOW_TO_SIGN_IN}`
}
