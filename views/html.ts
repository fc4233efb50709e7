// Markup is built only through `html`: every interpolated value is text unless it is already Html, so a value from a
// user, an app or the database can never become a tag or an attribute.

const ESCAPES: Record<string, string> = { '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }

/** Text made safe for element content and for quoted attribute values. */
export const escapeHtml = (s: string): string => s.replace(/[&<>"']/g, c => ESCAPES[c]!)

/** A piece of markup that is safe to send as it is: made by `html`, or marked with `raw` on purpose. */
export class Html {
  readonly #markup: string
  constructor (markup: string) {
    this.#markup = markup
  }

  toString (): string {
    return this.#markup
  }
}

/** What may be interpolated: text and numbers are escaped, Html is kept, lists are joined, nothing is dropped. */
export type Interpolation = Html | string | number | boolean | null | undefined | readonly Interpolation[]

function render (value: Interpolation): string {
  if (value instanceof Html) return value.toString()
  if (Array.isArray(value)) return value.map(render).join('')
  if (value === null || value === undefined || value === false) return ''
  return escapeHtml(String(value))
}

/** The tagged template of every page: `html\`<p>${name}</p>\`` escapes `name`. */
export function html (strings: TemplateStringsArray, ...values: Interpolation[]): Html {
  let out = strings[0]!
  for (let i = 0; i < values.length; i++) out += render(values[i]!) + strings[i + 1]!
  return new Html(out)
}

/** Markup written by this service itself (never anything user-supplied): sent unescaped. */
export const raw = (markup: string): Html => new Html(markup)
