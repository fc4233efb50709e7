import { EVENTS_BODY_LIMIT } from '../lib/limits.js'

/**
 * The producer's side of POST /events for the command line (`sandbox seed`, `events import`): batches within the
 * route's limits, the answers, and errors that say what to do.
 */

/** A command that cannot go on: cli.ts prints the message alone, without a stack trace, and exits 1. */
export class CommandError extends Error {
  override name = 'CommandError'
}

/** The most events one POST /events takes (MAX_EVENT_BATCH in schemas/events.ts; a unit test keeps them equal). */
export const MAX_BATCH = 100

export interface Accepted { id: string, deliveries: number }

export interface ErrorJson {
  error?: string
  message?: string
  details?: Array<{ location?: string, path?: string, message?: string }>
  unknown?: string[]
}

export type Answer =
  | { ok: true, accepted: Accepted[] }
  | { ok: false, status: number, body: string, json: ErrorJson | undefined }

/** Events as JSON texts, gathered until the next would pass `size` events or the route's body limit. */
export class Batch<T> {
  items: Array<{ text: string, meta: T }> = []
  private bytes = 2

  constructor (readonly size: number, readonly limit = EVENTS_BODY_LIMIT) {}

  /** Whether `text` fits beside what is gathered (an empty batch takes anything). */
  fits (text: string): boolean {
    if (this.items.length === 0) return true
    return this.items.length < this.size && this.bytes + 1 + Buffer.byteLength(text) <= this.limit
  }

  add (text: string, meta: T): void {
    this.bytes += Buffer.byteLength(text) + (this.items.length > 0 ? 1 : 0)
    this.items.push({ text, meta })
  }

  /** The request body: the events as one JSON array, each exactly as given. */
  body (): string {
    return `[${this.items.map(i => i.text).join(',')}]`
  }

  clear (): void {
    this.items = []
    this.bytes = 2
  }
}

/** `1 event`, `2,000 events`; `many` for irregular plurals. */
export const plural = (n: number, one: string, many = `${one}s`): string =>
  `${n.toLocaleString('en-US')} ${n === 1 ? one : many}`

/** Why fetch failed, in a few words: `connect ECONNREFUSED 127.0.0.1:3000`. */
function failure (err: unknown): string {
  const e = err as { name?: string, message?: string, cause?: { message?: string, code?: string } }
  if (e.name === 'TimeoutError') return 'no answer in time'
  return e.cause?.message ?? e.message ?? String(err)
}

/** Posts a batch body to `<base>/events` with the events token; network trouble is a CommandError. */
export function eventsClient (base: string, token: string, timeoutMs = 120_000) {
  const url = `${base.replace(/\/+$/, '')}/events`
  return async (body: string): Promise<Answer> => {
    let res: Response
    let text: string
    try {
      res = await fetch(url, {
        method: 'POST',
        headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
        body,
        signal: AbortSignal.timeout(timeoutMs)
      })
      text = await res.text()
    } catch (err) {
      throw new CommandError(`Cannot reach the service at ${url}: ${failure(err)}. ` +
        'Is it running (npm start)? If it listens elsewhere, pass --url, or set PORT (and HOST) as the service ' +
        'has them.')
    }
    if (res.status === 202) {
      const parsed = JSON.parse(text) as Accepted | Accepted[]
      return { ok: true, accepted: Array.isArray(parsed) ? parsed : [parsed] }
    }
    let json: ErrorJson | undefined
    try {
      json = JSON.parse(text) as ErrorJson
    } catch {}
    return { ok: false, status: res.status, body: text, json }
  }
}

/**
 * A refusal in a few words: `400 validation_error: Request validation failed.`, or the status and the body when it
 * is not the service's error JSON.
 */
export function refusal (answer: Extract<Answer, { ok: false }>): string {
  const j = answer.json
  return typeof j?.error === 'string'
    ? `${answer.status} ${j.error}: ${j.message ?? ''}`.trim()
    : `${answer.status} ${answer.body.trim().slice(0, 2000)}`
}

/** What to do about a refusal, where something helps: ` The service expects…` (with its leading space). */
export function refusalHint (answer: Extract<Answer, { ok: false }>): string {
  return answer.status === 401
    ? ' The service expects another EVENTS_TOKEN: run this command with the service\'s configuration (the same ' +
      'EVENTS_TOKEN, or the same DATA_DIR for the generated development one).'
    : ''
}
