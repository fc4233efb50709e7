import { html, type Html } from './html.js'
import { count } from './format.js'

/** One hour of attempts, as the chart and its table show it. */
export interface HourFigures {
  /** The hour's start. */
  hour: Date
  succeeded: number
  failed: number
}

const WIDTH = 480
const HEIGHT = 160
const AXIS = 24
const TOP = 8

const hourLabel = (d: Date): string => `${d.toISOString().slice(11, 13)}:00`

/**
 * The attempts of the last hours as an inline SVG bar chart: succeeded and failed side by side per hour. The
 * chart is an image with a title for screen readers; its numbers are in the table that follows it.
 */
export function activityChart (hours: readonly HourFigures[], titleId: string, title: string): Html {
  const max = Math.max(1, ...hours.map(h => Math.max(h.succeeded, h.failed)))
  const slot = WIDTH / Math.max(1, hours.length)
  const bar = Math.max(1, slot / 2 - 1)
  const plot = HEIGHT - AXIS - TOP
  const height = (n: number): number => n === 0 ? 0 : Math.max(1, Math.round((n / max) * plot))
  const rect = (x: number, n: number, kind: string) => {
    const h = height(n)
    return html`<rect class="bar-${kind}" x="${x.toFixed(1)}" y="${HEIGHT - AXIS - h}" width="${bar.toFixed(1)}"
      height="${h}"></rect>`
  }
  return html`<figure class="chart">
  <svg role="img" aria-labelledby="${titleId}" viewBox="0 0 ${WIDTH} ${HEIGHT}" preserveAspectRatio="none"
    xmlns="http://www.w3.org/2000/svg">
    <title id="${titleId}">${title}</title>
    <line class="axis" x1="0" y1="${HEIGHT - AXIS}" x2="${WIDTH}" y2="${HEIGHT - AXIS}"></line>
    ${hours.map((h, i) => html`${rect(i * slot, h.succeeded, 'succeeded')}${rect(i * slot + bar, h.failed, 'failed')}
    ${i % 6 === 0
      ? html`<text class="tick" x="${(i * slot).toFixed(1)}" y="${HEIGHT - 6}">${hourLabel(h.hour)}</text>`
      : ''}`)}
    <text class="tick" x="${WIDTH}" y="${TOP + 10}" text-anchor="end">max ${count(max)}</text>
  </svg>
  <figcaption><span class="key key-succeeded"></span> succeeded <span class="key key-failed"></span> failed
    (attempts per hour, UTC)</figcaption>
</figure>`
}

/** The chart's numbers as a table: every hour, succeeded and failed. */
export function activityTable (hours: readonly HourFigures[], caption: string): Html {
  return html`<div class="table-wrap"><table>
  <caption>${caption}</caption>
  <thead><tr><th scope="col">Hour (UTC)</th><th scope="col">Succeeded</th><th scope="col">Failed</th></tr></thead>
  <tbody>${hours.map(h => html`
    <tr><th scope="row"><time datetime="${h.hour.toISOString()}">${h.hour.toISOString().slice(0, 10)} ${
      hourLabel(h.hour)}</time></th><td>${count(h.succeeded)}</td><td>${count(h.failed)}</td></tr>`)}
  </tbody>
</table></div>`
}

/** The last `n` whole hours up to the one `now` is in, oldest first, filled from the figures kept (absent: 0). */
export function lastHours (
  now: number, n: number, kept: ReadonlyArray<{ hour: Date, succeeded: number, failed: number }>
): HourFigures[] {
  const current = Math.floor(now / 3_600_000) * 3_600_000
  const byHour = new Map<number, { succeeded: number, failed: number }>()
  for (const k of kept) {
    const prev = byHour.get(k.hour.getTime()) ?? { succeeded: 0, failed: 0 }
    byHour.set(k.hour.getTime(), { succeeded: prev.succeeded + k.succeeded, failed: prev.failed + k.failed })
  }
  return Array.from({ length: n }, (_, i) => {
    const hour = current - (n - 1 - i) * 3_600_000
    return { hour: new Date(hour), ...(byHour.get(hour) ?? { succeeded: 0, failed: 0 }) }
  })
}
