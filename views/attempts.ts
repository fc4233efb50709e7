import type { AttemptLogEntry, AttemptOutcome, DeliveryDetail } from '../plugins/domain/webhooks/attempt-log-store.js'
import type { TenantSubscription } from '../plugins/domain/webhooks/subscription-store.js'
import { csrfField, hiddenField } from './forms.js'
import { badge, codes, count, hidden, localValue, when } from './format.js'
import { html, type Html } from './html.js'
import { lastDelivery, subscriptionPath, subscriptionState } from './webhooks.js'

/** The filters of the log as the form shows them back: the values typed, whether valid or not. */
export interface LogFilterFields {
  status: string
  topic: string
  since: string
  until: string
  event_id: string
}

/** What the log page shows beside the attempts. */
export interface LogPageView {
  subscription: TenantSubscription
  app: { clientId: string, name: string }
  entries: readonly AttemptLogEntry[]
  fields: LogFilterFields
  /** The page's own query (filters and cursor): the actions on the page come back to it. */
  query: string
  /** The query of the next page, or null on the last one. */
  nextQuery: string | null
  searchedTo: Date | null
  topics: readonly string[]
  csrfToken: string
  /** The default `since` of the Recover form: a day before now. */
  recoverSince: Date
  /** The Recover form's idempotency key: sent twice (a double click), the form recovers once. */
  replayKey: string
}

const OUTCOMES: Record<AttemptOutcome, Html> = {
  succeeded: badge('Succeeded', 'ok'),
  pending: badge('Retrying', 'warn'),
  failed: badge('Failed', 'bad')
}

const deliveryPath = (subscriptionId: string, deliveryId: string): string =>
  `${subscriptionPath(subscriptionId)}/deliveries/${encodeURIComponent(deliveryId)}`

const httpStatus = (status: number): Html | string =>
  status === 0 ? html`0 <span class="muted">(no answer)</span>` : String(status)

function option (value: string, label: string, selected: string): Html {
  return html`<option value="${value}"${value === selected ? html` selected` : ''}>${label}</option>`
}

function filterForm (v: LogPageView): Html {
  const f = v.fields
  return html`<form method="get" action="${subscriptionPath(v.subscription.id)}" class="filters" role="search"
      aria-label="Filter the attempts">
    <div class="field"><label for="f-status">Status</label>
      <select id="f-status" name="status">${option('', 'Any', f.status)}${option('succeeded', 'Succeeded', f.status)}${
        option('failed', 'Failed', f.status)}${option('pending', 'Retrying (pending)', f.status)}</select></div>
    <div class="field"><label for="f-topic">Topic</label>
      <select id="f-topic" name="topic">${option('', 'Any', f.topic)}${
        v.topics.map(t => option(t, t, f.topic))}</select></div>
    <div class="field"><label for="f-since">Since (UTC)</label>
      <input id="f-since" name="since" type="datetime-local" step="1" value="${f.since}"></div>
    <div class="field"><label for="f-until">Until (UTC)</label>
      <input id="f-until" name="until" type="datetime-local" step="1" value="${f.until}"></div>
    <div class="field"><label for="f-event">Event ID</label>
      <input id="f-event" name="event_id" type="text" value="${f.event_id}" autocomplete="off" spellcheck="false"></div>
    <div class="field buttons"><button type="submit" class="primary">Filter</button>
      <a href="${subscriptionPath(v.subscription.id)}">Clear filters</a></div>
  </form>`
}

function resendForm (v: LogPageView, a: AttemptLogEntry): Html | string {
  if (a.outcome === 'succeeded' || !v.subscription.isActive) return ''
  return html`<form method="post" action="${deliveryPath(v.subscription.id, a.deliveryId)}/retry" class="inline">
    ${csrfField(v.csrfToken)}${hiddenField('back', v.query)}
    <button type="submit">Resend${hidden(` delivery ${a.deliveryId}`)}</button>
  </form>`
}

function attemptsTable (v: LogPageView): Html {
  if (v.entries.length === 0) {
    return html`<p>${v.searchedTo
      ? html`No attempt matches in this part of the log.`
      : 'No attempt matches.'}</p>`
  }
  return html`<div class="table-wrap"><table class="log">
    <caption class="visually-hidden">Attempts, newest first</caption>
    <thead><tr>
      <th scope="col">Time</th><th scope="col">Event</th><th scope="col">Topic</th><th scope="col">Attempt</th>
      <th scope="col">HTTP status</th><th scope="col">Duration</th><th scope="col">Outcome</th>
      <th scope="col">Next retry</th><th scope="col">Actions</th>
    </tr></thead>
    <tbody>${v.entries.map(a => html`
      <tr>
        <td><a href="${deliveryPath(v.subscription.id, a.deliveryId)}">${when(a.attemptedAt)}${
          hidden(`: attempt ${a.attempt} of ${a.eventId}`)}</a></td>
        <td><code>${a.eventId}</code></td>
        <td><code>${a.topic}</code></td>
        <td>${a.attempt}</td>
        <td>${httpStatus(a.responseStatus)}</td>
        <td>${count(a.durationMs)} ms</td>
        <td>${OUTCOMES[a.outcome]}</td>
        <td>${when(a.nextAttemptAt, '')}</td>
        <td>${resendForm(v, a)}</td>
      </tr>`)}
    </tbody>
  </table></div>`
}

function pageActions (v: LogPageView): Html {
  const path = subscriptionPath(v.subscription.id)
  if (!v.subscription.isActive) {
    return html`<h2>Actions</h2>
      <p>This subscription is disabled: resending, recovering, test events and secret rotation need an active one.
        The app can create a new subscription for the same target.</p>`
  }
  return html`<h2>Actions</h2>
    <div class="panels">
    <form method="post" action="${path}/replay" class="panel">
      <h3>Recover</h3>
      ${csrfField(v.csrfToken)}${hiddenField('back', v.query)}${hiddenField('replay_key', v.replayKey)}
      <p>Sends again, as new deliveries, the events of a time range (when they happened) whose delivery failed, or
        every event that was delivered.</p>
      <div class="field"><label for="r-since">Since (UTC)</label>
        <input id="r-since" name="since" type="datetime-local" step="1" required
          value="${localValue(v.recoverSince)}"></div>
      <div class="field"><label for="r-until">Until (UTC, empty: now)</label>
        <input id="r-until" name="until" type="datetime-local" step="1"></div>
      <div class="field"><label for="r-status">Which events</label>
        <select id="r-status" name="status">${option('failed', 'Failed deliveries', 'failed')}${
          option('all', 'Every delivered event', 'failed')}</select></div>
      <button type="submit" class="primary">Recover</button>
    </form>
    <form method="post" action="${path}/test" class="panel">
      <h3>Send a test event</h3>
      ${csrfField(v.csrfToken)}${hiddenField('back', v.query)}
      <p>Queues a signed <code>webhook.test</code> event to this subscription only; it shows in the log.</p>
      <button type="submit">Send test event</button>
    </form>
    <form method="post" action="${path}/rotate-secret" class="panel">
      <h3>Rotate the signing secret</h3>
      ${csrfField(v.csrfToken)}
      <p>Makes a new signing secret, shown once on the next page. The current secret keeps signing beside it for 24
        hours, so the receiver can switch in its own time.</p>
      <button type="submit" class="danger">Rotate signing secret</button>
    </form>
    </div>`
}

/** A subscription's attempts log: its state, the filters, a page of attempts and the actions. */
export function attemptsLogMain (v: LogPageView): Html {
  const s = v.subscription
  const appPath = `/dashboard/apps/${encodeURIComponent(v.app.clientId)}`
  return html`<p class="crumbs"><a href="/dashboard/apps">Apps</a> / <a href="${appPath}">${v.app.name}</a> /
      <a href="${appPath}/webhooks">Webhooks</a></p>
    <h1>Subscription <code>${s.id}</code></h1>
    <dl class="facts">
      <dt>State</dt><dd>${subscriptionState(s)}</dd>
      <dt>Tenant</dt><dd><code>${s.orgRefId}</code> / <code>${s.entityRefId}</code></dd>
      <dt>Target</dt><dd><code>${s.targetUrl}</code></dd>
      <dt>Topics</dt><dd>${codes(s.topics)}</dd>
      <dt>Consecutive failures</dt><dd>${count(s.consecutiveFailures)}</dd>
      <dt>Last delivery</dt><dd>${lastDelivery(s)}</dd>
    </dl>
    <h2>Attempts</h2>
    ${filterForm(v)}
    ${attemptsTable(v)}
    ${v.searchedTo
      ? html`<p class="muted">Searched back to ${when(v.searchedTo)}; older attempts were not searched yet.</p>`
      : ''}
    ${v.nextQuery
      ? html`<p class="pager"><a href="?${v.nextQuery}" rel="next">${
        v.searchedTo ? 'Search older attempts' : 'Older attempts'}</a></p>`
      : ''}
    ${pageActions(v)}`
}

const SIGNATURE_HEADER = /signature/i

/** A signature header's value with the signatures hidden: their scheme and version stay, to show which were sent. */
export function maskSignature (value: string): string {
  return value.split(' ').map(part => {
    const cut = part.search(/[,=]/)
    return cut < 0 ? '••••••••' : `${part.slice(0, cut + 1)}••••••••`
  }).join(' ')
}

function headersList (headers: Record<string, string> | null, mask: boolean): Html | string {
  if (!headers || Object.keys(headers).length === 0) return html`<p class="muted">None kept.</p>`
  return html`<pre tabindex="0"><code>${Object.entries(headers).map(([k, v]) =>
    `${k}: ${mask && SIGNATURE_HEADER.test(k) ? maskSignature(v) : v}\n`).join('')}</code></pre>`
}

/** Pretty JSON when the body is JSON, else the bytes as they are. */
function bodyText (body: string): string {
  try {
    return JSON.stringify(JSON.parse(body), null, 2)
  } catch {
    return body
  }
}

/** One delivery: what was sent (headers with signatures masked, body) and each attempt's answer. */
export function deliveryMain (
  s: TenantSubscription, d: DeliveryDetail, attempts: readonly AttemptLogEntry[], csrfToken: string
): Html {
  return html`<p class="crumbs"><a href="${subscriptionPath(s.id)}">Subscription <code>${s.id}</code></a></p>
    <h1>Delivery <code>${d.id}</code></h1>
    <dl class="facts">
      <dt>Event</dt><dd><code>${d.eventId}</code> (<code>${d.topic}</code>)</dd>
      <dt>Status</dt><dd><code>${d.status}</code>${
        d.nextAttemptAt ? html`, next attempt ${when(d.nextAttemptAt)}` : ''}</dd>
      <dt>Attempts</dt><dd>${d.attempts}</dd>
      <dt>Created</dt><dd>${when(d.createdAt)}</dd>
    </dl>
    ${s.isActive && d.status !== 'pending'
      ? html`<form method="post" action="${deliveryPath(s.id, d.id)}/retry">
        ${csrfField(csrfToken)}<button type="submit">Resend this delivery</button></form>`
      : ''}
    <h2>Request body</h2>
    <pre tabindex="0"><code>${bodyText(d.body)}</code></pre>
    ${attempts.length === 0
? html`<p>No attempt yet.</p>`
: attempts.map(a => html`
    <section class="attempt" aria-labelledby="attempt-${a.attempt}-${a.id}">
      <h2 id="attempt-${a.attempt}-${a.id}">Attempt ${a.attempt}: ${OUTCOMES[a.outcome]}</h2>
      <p>${when(a.attemptedAt)}, HTTP ${httpStatus(a.responseStatus)}, ${count(a.durationMs)} ms${
        a.error ? html`: ${a.error}${a.errorClass ? html` (<code>${a.errorClass}</code>)` : ''}` : ''}</p>
      <h3>Request headers</h3>
      ${headersList(a.requestHeaders, true)}
      <h3>Response headers</h3>
      ${headersList(a.responseHeaders, false)}
      <h3>Response body</h3>
      ${a.responseBody === null || a.responseBody === ''
        ? html`<p class="muted">None kept.</p>`
        : html`<pre tabindex="0"><code>${a.responseBody}</code></pre>`}
    </section>`)}`
}

/** The new signing secret, shown once (the page is not stored: no-store, like every page). */
export function rotatedMain (s: TenantSubscription, secret: string, previousExpiresAt: Date | null): Html {
  return html`<h1>New signing secret</h1>
    <p>The new signing secret of subscription <code>${s.id}</code>. <strong>It is shown only this once</strong>:
      copy it into the receiver's configuration now.</p>
    <pre tabindex="0"><code>${secret}</code></pre>
    <p>${previousExpiresAt
      ? html`The previous secret keeps signing beside it until ${when(previousExpiresAt)}.`
      : 'The previous secret no longer signs.'}</p>
    <p><a href="${subscriptionPath(s.id)}">Back to the subscription</a></p>`
}
