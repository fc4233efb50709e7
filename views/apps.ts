import type { App } from '../plugins/domain/common/clients.js'
import type { Install } from '../plugins/domain/installs/store.js'
import { csrfField } from './forms.js'
import { badge, codes, count, hidden, when } from './format.js'
import { html, type Html } from './html.js'

/** One app in the developer's list, with its figures. */
export interface AppSummary {
  app: App
  activeInstalls: number
  /** Deliveries of the last 24 hours: done, and failed for good. */
  succeeded: number
  failed: number
}

const appPath = (clientId: string): string => `/dashboard/apps/${encodeURIComponent(clientId)}`

const keyState = (enabled: boolean): Html => enabled ? badge('Enabled', 'ok') : badge('Disabled', 'bad')

/** The tabs of an app's pages. */
export function appTabs (app: App, current: 'overview' | 'installs' | 'webhooks'): Html {
  const tabs = [
    { key: 'overview', label: 'Overview', href: appPath(app.clientId) },
    { key: 'installs', label: 'Installs', href: `${appPath(app.clientId)}/installs` },
    { key: 'webhooks', label: 'Webhooks', href: `${appPath(app.clientId)}/webhooks` }
  ]
  return html`<p class="crumbs"><a href="/dashboard/apps">Apps</a> / ${app.name}</p>
    <nav class="tabs" aria-label="${app.name}">
      <ul>${tabs.map(t => html`<li><a href="${t.href}"${t.key === current ? html` aria-current="page"` : ''}>${
        t.label}</a></li>`)}</ul>
    </nav>`
}

/** The developer's apps: name, slug, key state, active installs, the last 24 hours' deliveries. */
export function appsMain (apps: readonly AppSummary[]): Html {
  if (apps.length === 0) {
    return html`<h1>Your apps</h1>
      <p>You have no apps yet. Register one with <code>POST /apps</code> (see the API reference at
        <a href="/docs">/docs</a>); it shows here at once.</p>
      <p>Looking for the apps connected to your organisation? See <a href="/dashboard/connections">Connections</a>.</p>`
  }
  return html`<h1>Your apps</h1>
    <div class="table-wrap"><table>
      <caption class="visually-hidden">Your apps</caption>
      <thead><tr>
        <th scope="col">App</th><th scope="col">Slug</th><th scope="col">API key</th>
        <th scope="col">Active installs</th><th scope="col">Deliveries, last 24 h</th>
      </tr></thead>
      <tbody>${apps.map(a => html`
        <tr>
          <th scope="row"><a href="${appPath(a.app.clientId)}">${a.app.name}</a></th>
          <td><code>${a.app.slug}</code></td>
          <td>${keyState(a.app.apiKeyEnabled)}</td>
          <td><a href="${appPath(a.app.clientId)}/installs">${count(a.activeInstalls)}${
            hidden(` active installs of ${a.app.name}`)}</a></td>
          <td><a href="${appPath(a.app.clientId)}/webhooks">${count(a.succeeded)} succeeded, ${count(a.failed)} failed${
            hidden(` (webhooks of ${a.app.name})`)}</a></td>
        </tr>`)}
      </tbody>
    </table></div>`
}

/** The API key's form: what a disable or an enable does, said before the button. */
function keyForm (app: App, csrfToken: string): Html {
  const action = `${appPath(app.clientId)}/api-key`
  if (app.apiKeyEnabled) {
    return html`<form method="post" action="${action}" class="panel">
      ${csrfField(csrfToken)}<input type="hidden" name="enabled" value="false">
      <p>Disabling the key refuses <strong>every access token of this app at once</strong>, in every install, and
        its token exchanges and refreshes. Tokens issued before the disable stay refused even after you enable the key
        again; the installs then need new tokens.</p>
      <button type="submit" class="danger">Disable the API key</button>
    </form>`
  }
  return html`<form method="post" action="${action}" class="panel">
    ${csrfField(csrfToken)}<input type="hidden" name="enabled" value="true">
    <p>Enabling the key lets the app exchange and refresh tokens again. Tokens issued before it was disabled stay
      refused.</p>
    <button type="submit" class="primary">Enable the API key</button>
  </form>`
}

/** One app: its identifiers, redirect URIs, scopes and the API key with its form. */
export function appMain (app: App, csrfToken: string): Html {
  return html`${appTabs(app, 'overview')}
    <h1>${app.name}</h1>
    <dl class="facts">
      <dt>Client ID</dt><dd><code>${app.clientId}</code></dd>
      <dt>Slug</dt><dd><code>${app.slug}</code></dd>
      <dt>Redirect URIs</dt><dd>${app.redirectUris.length === 0
? 'none'
: html`<ul class="plain">${
        app.redirectUris.map(u => html`<li><code>${u}</code></li>`)}</ul>`}</dd>
      <dt>Scopes</dt><dd>${codes(app.scopes)}</dd>
      <dt>Registered</dt><dd>${when(app.createdAt)}</dd>
    </dl>
    <h2 id="api-key">API key: ${keyState(app.apiKeyEnabled)}</h2>
    ${app.keyDisabledAt ? html`<p class="muted">Last disabled ${when(app.keyDisabledAt)}.</p>` : ''}
    ${keyForm(app, csrfToken)}`
}

/** The app's installs, a page at a time. */
export function installsMain (app: App, installs: readonly Install[], next: string | null): Html {
  return html`${appTabs(app, 'installs')}
    <h1>Installs of ${app.name}</h1>
    ${installs.length === 0
      ? html`<p>No organisation has installed ${app.name} yet.</p>`
      : html`<div class="table-wrap"><table>
      <caption class="visually-hidden">Installs of ${app.name}</caption>
      <thead><tr>
        <th scope="col">Organisation</th><th scope="col">Entity</th><th scope="col">Scopes</th>
        <th scope="col">Installed by</th><th scope="col">Installed at</th><th scope="col">Last used</th>
        <th scope="col">Status</th>
      </tr></thead>
      <tbody>${installs.map(i => html`
        <tr>
          <td><code>${i.orgRefId}</code></td><td><code>${i.entityRefId}</code></td><td>${codes(i.scopes)}</td>
          <td>${i.installedBy}</td><td>${when(i.createdAt)}</td><td>${when(i.lastUsedAt)}</td>
          <td>${i.status === 'active'
? badge('Active', 'ok')
: html`${badge('Uninstalled', 'neutral')} ${
            when(i.uninstalledAt, '')}`}</td>
        </tr>`)}
      </tbody>
    </table></div>`}
    ${next ? html`<p class="pager"><a href="?cursor=${next}" rel="next">Next installs</a></p>` : ''}`
}
