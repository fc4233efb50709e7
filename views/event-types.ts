import { html, type Html } from './html.js'

/** One topic of the event catalog, as `eventCatalog()` (schemas/webhooks.ts) gives it. */
export interface EventTypeView {
  name: string
  status: 'emitted' | 'planned'
  description: string
  payload_schema: unknown
}

const pretty = (value: unknown): string => JSON.stringify(value, null, 2)

/** The first example of a payload schema: the delivery body as a receiver gets it. */
function exampleOf (schema: unknown): unknown {
  const examples = (schema as { examples?: unknown[] } | null)?.examples
  return Array.isArray(examples) ? examples[0] : undefined
}

const STATUS_TEXT = {
  emitted: 'delivered to subscriptions',
  planned: 'accepted, not delivered yet'
}

function topic (t: EventTypeView): Html {
  const id = `topic-${t.name.replace(/[^a-z0-9_-]/gi, '-')}`
  const example = exampleOf(t.payload_schema)
  return html`<section class="topic" aria-labelledby="${id}">
      <h2 id="${id}"><code>${t.name}</code> <span class="status status-${t.status}">${t.status}</span></h2>
      <p>${t.description} <span class="muted">(${STATUS_TEXT[t.status]})</span></p>
      ${example === undefined
        ? ''
        : html`<details>
        <summary>Example delivery of <code>${t.name}</code></summary>
        <pre tabindex="0"><code>${pretty(example)}</code></pre>
      </details>`}
      <details>
        <summary>Payload schema of <code>${t.name}</code></summary>
        <pre tabindex="0"><code>${pretty(t.payload_schema)}</code></pre>
      </details>
    </section>`
}

/** Every topic with its status, payload schema and an example (the catalog of GET /public/v1/event-types). */
export function eventTypesMain (types: readonly EventTypeView[]): Html {
  return html`<h1>Event types</h1>
    <p>Every topic a webhook subscription may receive: <strong>emitted</strong> topics are delivered,
      <strong>planned</strong> ones are accepted in subscriptions but not delivered yet. The same catalog is at
      <a href="/public/v1/event-types"><code>GET /public/v1/event-types</code></a>.</p>
    ${types.map(topic)}`
}
