import { html, type Html } from './html.js'

/** The name the dashboard's forms carry their CSRF token under (what @fastify/csrf-protection reads). */
export const CSRF_FIELD = '_csrf'

/** The hidden field every dashboard form needs: the token bound to the signed-in user's session. */
export const csrfField = (token: string): Html => html`<input type="hidden" name="${CSRF_FIELD}" value="${token}">`

/** A hidden field; nothing when there is no value. */
export const hiddenField = (name: string, value: string | undefined): Html | string =>
  value === undefined ? '' : html`<input type="hidden" name="${name}" value="${value}">`
