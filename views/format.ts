import { describeScope } from '../lib/scopes.js'
import { html, type Html, type Interpolation } from './html.js'

/** An instant as pages show it: UTC to the second, in a `<time>` that carries the exact value. */
export function when (d: Date | null, never = 'never'): Html | string {
  if (d === null) return never
  const iso = d.toISOString()
  return html`<time datetime="${iso}">${iso.slice(0, 10)} ${iso.slice(11, 19)} UTC</time>`
}

/** The value a `datetime-local` field shows for an instant (UTC, to the second). */
export const localValue = (d: Date | undefined): string => d === undefined ? '' : d.toISOString().slice(0, 19)

/** A list of identifiers as code, comma-separated. */
export const codes = (items: readonly string[]): Html => html`${items.map((s, i) =>
  html`${i > 0 ? ', ' : ''}<code>${s}</code>`)}`

/** Scopes in plain words, for organisation users: what each one lets the app do. */
export const scopesInWords = (scopes: readonly string[]): Html =>
  html`<ul class="plain">${scopes.map(s => html`<li>${describeScope(s)}</li>`)}</ul>`

/** A state word with its colour class (never colour alone: the word says it). */
export const badge = (text: string, tone: 'ok' | 'bad' | 'warn' | 'neutral'): Html =>
  html`<span class="status status-${tone}">${text}</span>`

/** A number with thousands separators, as English writes it. */
export const count = (n: number): string => n.toLocaleString('en-US')

/** Text only a screen reader reads: the context a short visible label leaves out. */
export const hidden = (text: Interpolation): Html => html`<span class="visually-hidden">${text}</span>`
