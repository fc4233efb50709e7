import type { App } from '../plugins/domain/common/clients.js'
import type { TenantSubscription } from '../plugins/domain/webhooks/subscription-store.js'
import { appTabs } from './apps.js'
import { activityChart, activityTable, type HourFigures } from './chart.js'
import { badge, codes, count, hidden, when } from './format.js'
import { html, type Html } from './html.js'

export const subscriptionPath = (id: string): string => `/dashboard/webhooks/${encodeURIComponent(id)}`

const REASONS: Record<string, string> = {
  deleted: 'deleted by the app',
  consecutive_failures: 'disabled after failing for too long',
  gone: 'disabled: the receiver answered 410 Gone'
}

/** Active, failing or disabled, in words (the reason as the API names it, `DisabledReason`, beside them). */
export function subscriptionState (s: TenantSubscription): Html {
  if (!s.isActive) {
    return html`${badge('Disabled', 'bad')} ${REASONS[s.disabledReason ?? ''] ?? ''}${
      s.disabledReason ? html` (<code>${s.disabledReason}</code>)` : ''}`
  }
  return s.consecutiveFailures > 0 ? badge('Failing', 'warn') : badge('Active', 'ok')
}

/** The last delivery: when, and the HTTP status it got (0: no answer). */
export const lastDelivery = (s: TenantSubscription): Html | string => s.lastDeliveryAt === null
  ? 'none yet'
  : html`${when(s.lastDeliveryAt)}, HTTP ${s.lastDeliveryStatus ?? ''}${
    s.lastDeliveryStatus === 0 ? ' (no answer)' : ''}`

/** The webhooks of all of an app's installs: the last 24 hours' attempts, then every subscription. */
export function appWebhooksMain (
  app: App, hours: readonly HourFigures[], subscriptions: readonly TenantSubscription[], next: string | null
): Html {
  const succeeded = hours.reduce((n, h) => n + h.succeeded, 0)
  const failed = hours.reduce((n, h) => n + h.failed, 0)
  return html`${appTabs(app, 'webhooks')}
    <h1>Webhooks of ${app.name}</h1>
    <h2>Attempts in the last 24 hours</h2>
    <p>${count(succeeded)} succeeded, ${count(failed)} failed, across every install.</p>
    ${activityChart(hours, 'activity-title',
      `Attempts per hour over the last 24 hours: ${count(succeeded)} succeeded, ${count(failed)} failed`)}
    <details><summary>The chart's numbers</summary>
      ${activityTable(hours, 'Attempts per hour over the last 24 hours (UTC)')}
    </details>
    <h2>Subscriptions</h2>
    <p class="muted">Failing subscriptions first, then disabled ones, then the healthy ones.</p>
    ${subscriptions.length === 0
      ? html`<p>No install of ${app.name} has a webhook subscription yet.</p>`
      : html`<div class="table-wrap"><table>
      <caption class="visually-hidden">Webhook subscriptions of ${app.name}</caption>
      <thead><tr>
        <th scope="col">Subscription</th><th scope="col">Tenant</th><th scope="col">Topics</th>
        <th scope="col">Target</th><th scope="col">State</th><th scope="col">Consecutive failures</th>
        <th scope="col">Last delivery</th>
      </tr></thead>
      <tbody>${subscriptions.map(s => html`
        <tr>
          <th scope="row"><a href="${subscriptionPath(s.id)}"><code>${s.id}</code>${hidden(' attempts log')}</a></th>
          <td><code>${s.orgRefId}</code> / <code>${s.entityRefId}</code></td>
          <td>${codes(s.topics)}</td>
          <td><code>${s.targetUrl}</code></td>
          <td>${subscriptionState(s)}</td>
          <td>${count(s.consecutiveFailures)}</td>
          <td>${lastDelivery(s)}</td>
        </tr>`)}
      </tbody>
    </table></div>`}
    ${next ? html`<p class="pager"><a href="?cursor=${next}" rel="next">Next subscriptions</a></p>` : ''}`
}
