// The dashboard as a browser uses it, through app.inject: a signed-in browser that keeps its cookies, opens pages,
// sends their forms (the form's own fields, as the page wrote them) and follows the 303 after an action; and what
// tests read out of a page (the text of a table's rows, a form's fields, the one 404 page).
import type { AppInstance } from '../../app.js'
import { bearer, REDIRECT_URI, unique } from './helper.js'

type Response = Awaited<ReturnType<AppInstance['inject']>>

/** How a browser sends a form of the service's own pages. */
export const SAME_ORIGIN = { 'sec-fetch-site': 'same-origin', origin: 'http://gateway.test' }

export interface RegisteredApp {
  clientId: string
  clientSecret: string
  appSlug: string
  /** The developer's user session (what `install` calls the owner's token). */
  ownerToken: string
  name: string
}

/** An app registered through POST /apps by the developer whose session this is. */
export async function registerApp (
  app: AppInstance, session: string, o: { name?: string, scopes?: string[] } = {}
): Promise<RegisteredApp> {
  const slug = unique('app').replace(/_/g, '-')
  const name = o.name ?? `App ${slug}`
  const res = await app.inject({
    method: 'POST',
    url: '/apps',
    headers: { ...bearer(session), 'content-type': 'application/json' },
    payload: {
      slug,
      name,
      redirect_uris: [REDIRECT_URI, 'https://app.example.com/other'],
      scopes: o.scopes ?? ['invoices:read', 'bills:read', 'customers:read']
    }
  })
  if (res.statusCode !== 201) throw new Error(`register app: ${res.statusCode} ${res.body}`)
  const created = res.json()
  return { clientId: created.client_id, clientSecret: created.client_secret, appSlug: slug, ownerToken: session, name }
}

const ENTITIES: Record<string, string> = { amp: '&', lt: '<', gt: '>', quot: '"', '#39': "'" }

/** Text of HTML as a page writes it: its character references read. */
export const decode = (s: string): string => s.replace(/&(amp|lt|gt|quot|#39);/g, (_m, e: string) => ENTITIES[e]!)

/** Elements that start a line of their own: their tags part words, where those of inline elements do not. */
const BLOCKS = new Set(['address', 'article', 'br', 'button', 'caption', 'dd', 'details', 'div', 'dl', 'dt',
  'figcaption', 'figure', 'footer', 'form', 'h1', 'h2', 'h3', 'h4', 'h5', 'h6', 'header', 'hr', 'input', 'label',
  'li', 'main', 'nav', 'ol', 'option', 'p', 'pre', 'section', 'select', 'summary', 'table', 'tbody', 'td', 'th',
  'thead', 'tr', 'ul'])

/** What a page says, without its markup: tags dropped, references read, white space collapsed. */
export const text = (markup: string): string =>
  decode(markup.replace(/<\/?([a-zA-Z0-9]+)[^>]*>/g, (_m, tag: string) => BLOCKS.has(tag.toLowerCase()) ? ' ' : ''))
    .replace(/\s+/g, ' ').trim()

/** The rows of the table whose caption says `caption`: each row the text of its cells; undefined: no such table. */
export function tableRows (body: string, caption: string): string[][] | undefined {
  const found = [...body.matchAll(/<caption\b[^>]*>([\s\S]*?)<\/caption>/g)].find(m => text(m[1]!) === caption)
  if (!found) return undefined
  const table = body.slice(found.index, body.indexOf('</table>', found.index))
  const tbody = table.slice(table.indexOf('<tbody>'))
  return [...tbody.matchAll(/<tr>([\s\S]*?)<\/tr>/g)]
    .map(r => [...r[1]!.matchAll(/<t[hd][^>]*>([\s\S]*?)<\/t[hd]>/g)].map(c => text(c[1]!)))
}

/** The attributes of a tag, their values read. */
function attributes (tag: string): Record<string, string> {
  return Object.fromEntries([...tag.matchAll(/([a-z-]+)(?:="([^"]*)")?/g)].slice(1)
    .map(m => [m[1]!, decode(m[2] ?? '')]))
}

/** The markup of the post forms of a page whose action is `action`. */
export function formsTo (body: string, action: string): string[] {
  return [...body.matchAll(/<form\b[^>]*>[\s\S]*?<\/form>/g)].map(m => m[0])
    .filter(f => attributes(/^<form\b[^>]*>/.exec(f)![0]).action === action)
}

/** The fields a browser would send with the form: its inputs' values and its selects' selected options. */
export function formFields (form: string): Record<string, string> {
  const fields: Record<string, string> = {}
  for (const m of form.matchAll(/<input\b[^>]*>/g)) {
    const a = attributes(m[0])
    if (a.name) fields[a.name] = a.value ?? ''
  }
  for (const m of form.matchAll(/<select\b([^>]*)>([\s\S]*?)<\/select>/g)) {
    const a = attributes(`<select${m[1]}>`)
    const options = [...m[2]!.matchAll(/<option\b[^>]*>/g)].map(o => attributes(o[0]))
    const chosen = options.find(o => 'selected' in o) ?? options[0]
    if (a.name && chosen) fields[a.name] = chosen.value ?? ''
  }
  return fields
}

/** The page's body with each form token replaced by the same placeholder: two pages compared as a person sees them. */
export const withoutTokens = (body: string): string =>
  body.replace(/name="_csrf" value="[^"]*"/g, 'name="_csrf" value=""')

/** The text of a page's main content. */
export const mainText = (body: string): string => text(body.slice(body.indexOf('<main'), body.indexOf('</main>')))

/** An instant as the pages write it: UTC, to the second. */
export const shown = (d: Date | number): string => {
  const iso = new Date(d).toISOString()
  return `${iso.slice(0, 10)} ${iso.slice(11, 19)} UTC`
}

/** The `sub` of a user session. */
export const subOf = (session: string): string =>
  JSON.parse(Buffer.from(session.split('.')[1]!, 'base64url').toString('utf8')).sub

/** A browser signed in to the dashboard with `session`: it keeps the cookies the dashboard sets, as a browser does. */
export class Browser {
  readonly cookies: Record<string, string>

  constructor (readonly app: AppInstance, readonly session: string) {
    this.cookies = { session }
  }

  private keep (res: Response): Response {
    for (const c of res.cookies as Array<{ name: string, value: string, expires?: Date, maxAge?: number }>) {
      const gone = c.value === '' || c.maxAge === 0 || (c.expires !== undefined && c.expires.getTime() <= Date.now())
      if (gone) delete this.cookies[c.name]
      else this.cookies[c.name] = c.value
    }
    return res
  }

  async get (url: string): Promise<Response> {
    const res = await this.app.inject({ method: 'GET', url, headers: { accept: 'text/html' }, cookies: this.cookies })
    return this.keep(res)
  }

  /** A form sent to `url` with these fields, from this service's pages unless `headers` say otherwise. */
  async post (url: string, fields: Record<string, string>, headers: Record<string, string> = SAME_ORIGIN) {
    return this.keep(await this.app.inject({
      method: 'POST',
      url,
      headers: { 'content-type': 'application/x-www-form-urlencoded', accept: 'text/html', ...headers },
      cookies: this.cookies,
      payload: new URLSearchParams(fields).toString()
    }))
  }

  /** Sends the page's (only) form to `action` with its own fields, `change` overriding some. */
  async submit (page: Response, action: string, change: Record<string, string> = {}): Promise<Response> {
    const forms = formsTo(page.body, action)
    if (forms.length !== 1) throw new Error(`${forms.length} forms to ${action} on the page`)
    return this.post(action, { ...formFields(forms[0]!), ...change })
  }

  /** The page the 303 of an action leads to. */
  async follow (res: Response): Promise<Response> {
    if (res.statusCode !== 303) throw new Error(`not a 303 but ${res.statusCode}: ${res.body.slice(0, 500)}`)
    return this.get(String(res.headers.location))
  }

  /** A form token of this browser's session, from any of its pages. */
  async token (): Promise<string> {
    const page = await this.get('/dashboard/event-types')
    return decode(/name="_csrf" value="([^"]+)"/.exec(page.body)![1]!)
  }
}

/** The one-time notice a page says, or undefined. */
export function noticeOf (body: string): string | undefined {
  const m = /<div\b[^>]*role="status"[^>]*>([\s\S]*?)<\/div>/.exec(body)
  const said = m ? text(m[1]!) : ''
  return said === '' ? undefined : said
}
