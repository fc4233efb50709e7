import type { Install } from '../plugins/domain/installs/store.js'
import { csrfField } from './forms.js'
import { hidden, scopesInWords, when } from './format.js'
import { html, type Html } from './html.js'

/** The apps connected to the user's organisation and entities, each with its Uninstall form. */
export function connectionsMain (
  org: string, entities: readonly string[], connections: readonly Install[], csrfToken: string
): Html {
  const where = html`organisation <code>${org}</code>${entities.length > 0
    ? html`, ${entities.length === 1 ? 'entity' : 'entities'} ${entities.map((e, i) =>
      html`${i > 0 ? ', ' : ''}<code>${e}</code>`)}`
    : ''}`
  if (entities.length === 0) {
    return html`<h1>Connected apps</h1>
      <p>Your session names no entity of ${where}, so there are no connections to show.</p>`
  }
  if (connections.length === 0) {
    return html`<h1>Connected apps</h1>
      <p>No app is connected to ${where}.</p>`
  }
  return html`<h1>Connected apps</h1>
    <p>The apps connected to ${where}, and what each may do.</p>
    <p class="muted">Uninstalling an app stops it at once: its access tokens stop working, its refresh tokens are
      revoked and its webhooks stop. Its data in the accounting system stays. It can be connected again later.</p>
    <div class="table-wrap"><table>
      <caption class="visually-hidden">Connected apps</caption>
      <thead><tr>
        <th scope="col">App</th><th scope="col">Entity</th><th scope="col">May</th><th scope="col">Installed by</th>
        <th scope="col">Installed at</th><th scope="col">Last used</th><th scope="col">Action</th>
      </tr></thead>
      <tbody>${connections.map(c => html`
        <tr>
          <th scope="row">${c.appName}</th>
          <td><code>${c.entityRefId}</code></td>
          <td>${scopesInWords(c.scopes)}</td>
          <td>${c.installedBy}</td>
          <td>${when(c.createdAt)}</td>
          <td>${when(c.lastUsedAt)}</td>
          <td><form method="post" action="/dashboard/connections/${encodeURIComponent(c.installId)}/uninstall">
            ${csrfField(csrfToken)}
            <button type="submit" class="danger">Uninstall${hidden(` ${c.appName} from ${c.entityRefId}`)}</button>
          </form></td>
        </tr>`)}
      </tbody>
    </table></div>`
}
