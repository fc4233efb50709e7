import { type Agent, request } from 'undici'
import { VERSION } from '../../lib/root.js'
import { serviceSignature, standardSignature, type SigningKey } from './signing.js'
import { guardedAgent, refusedLiteral } from './target-guard.js'

export const CONNECT_TIMEOUT_MS = 5_000
export const TOTAL_TIMEOUT_MS = 15_000
const KEPT_RESPONSE_BYTES = 4096

export interface Outcome {
  /** HTTP status, 0 when there was no HTTP answer. */
  status: number
  responseBody: string | null
  error: string | null
  /** Seconds from a Retry-After header (429/503 only). */
  retryAfterS: number | null
  durationMs: number
}

export interface Attempt {
  targetUrl: string
  eventId: string
  topic: string
  attempt: number
  body: string
  /** The current secret first; during a rotation's overlap also the one it replaced. */
  keys: SigningKey[]
}

function parseRetryAfter (value: string | string[] | undefined): number | null {
  const v = Array.isArray(value) ? value[0] : value
  if (!v) return null
  if (/^\d+$/.test(v)) return Number(v)
  const at = Date.parse(v)
  return Number.isNaN(at) ? null : Math.max(0, Math.ceil((at - Date.now()) / 1000))
}

/** Sends signed deliveries over HTTPS, only ever to addresses the target guard approved. */
export class Sender {
  private readonly agent: Agent

  constructor (private readonly opts: { allowPrivate: boolean, caFile: string | undefined, connections: number }) {
    this.agent = guardedAgent(opts, {
      connectTimeoutMs: CONNECT_TIMEOUT_MS,
      responseTimeoutMs: TOTAL_TIMEOUT_MS,
      connections: opts.connections
    })
  }

  async send (a: Attempt): Promise<Outcome> {
    const started = performance.now()
    const done = (o: Omit<Outcome, 'durationMs'>): Outcome => ({
      ...o,
      durationMs: Math.round(performance.now() - started)
    })
    const url = new URL(a.targetUrl)
    if (refusedLiteral(url, this.opts.allowPrivate)) {
      return done({
        status: 0,
        responseBody: null,
        error: 'refused: target is not an allowed HTTPS address',
        retryAfterS: null
      })
    }
    const timestamp = Math.floor(Date.now() / 1000)
    try {
      const res = await request(url, {
        method: 'POST',
        dispatcher: this.agent,
        signal: AbortSignal.timeout(TOTAL_TIMEOUT_MS),
        headers: {
          'content-type': 'application/json',
          'user-agent': `marketplace-webhooks/${VERSION}`,
          // During a rotation's overlap the spec's single signature stays on the secret receivers already hold
          // (docs/decisions.md#webhook-signatures-issue-10); webhook-signature carries both.
          'x-service-signature': serviceSignature(a.keys.at(-1)!.secret, a.body),
          'x-service-topic': a.topic,
          'x-service-event-id': a.eventId,
          'x-service-delivery-attempt': String(a.attempt),
          'webhook-id': a.eventId,
          'webhook-timestamp': String(timestamp),
          'webhook-signature': standardSignature(a.keys, a.eventId, timestamp, a.body)
        },
        body: a.body
      })
      const chunks: Buffer[] = []
      let kept = 0
      for await (const chunk of res.body) {
        const buf = chunk as Buffer
        chunks.push(buf.subarray(0, KEPT_RESPONSE_BYTES - kept))
        kept += Math.min(buf.length, KEPT_RESPONSE_BYTES - kept)
        if (kept >= KEPT_RESPONSE_BYTES) break
      }
      if (kept >= KEPT_RESPONSE_BYTES) res.body.destroy()
      const retryAfter =
        res.statusCode === 429 || res.statusCode === 503 ? parseRetryAfter(res.headers['retry-after']) : null
      // Postgres text cannot hold NUL; the kept answer is for people to read.
      const text = Buffer.concat(chunks).toString('utf8').replace(/\0/g, '\uFFFD')
      return done({ status: res.statusCode, responseBody: text, error: null, retryAfterS: retryAfter })
    } catch (err) {
      const e = err as Error & { code?: string, cause?: { code?: string, message?: string } }
      const code = e.code ?? e.cause?.code
      const message =
        e.name === 'TimeoutError' || code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT'
          ? `timed out after ${TOTAL_TIMEOUT_MS / 1000} s`
          : code === 'UND_ERR_CONNECT_TIMEOUT'
            ? `connect timed out after ${CONNECT_TIMEOUT_MS / 1000} s`
            : `${code ?? e.name}: ${e.cause?.message ?? e.message}`
      return done({ status: 0, responseBody: null, error: message.slice(0, 500), retryAfterS: null })
    }
  }

  async close (): Promise<void> {
    await this.agent.close()
  }
}
