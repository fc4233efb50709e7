import { type Agent, request } from 'undici'
import { VERSION } from '../../../lib/root.js'
import { serviceSignature, standardSignature, type SigningKey } from './signing.js'
import { guardedAgent, refusedLiteral } from './target-guard.js'

export const CONNECT_TIMEOUT_MS = 5_000
/** An attempt's time-out in all, unless WEBHOOK_ATTEMPT_TIMEOUT_SECONDS says otherwise. */
export const TOTAL_TIMEOUT_MS = 15_000
const KEPT_RESPONSE_BYTES = 4096

/**
 * Why an attempt got no (good) answer, in a word a program can branch on
 * (docs/rules.md#test-deliveries-replay-and-the-delivery-log).
 */
export type ErrorClass =
  | 'http_status' | 'redirect' | 'timeout' | 'connect_timeout' | 'connection_refused' | 'connection_reset' | 'dns'
  | 'tls' | 'blocked' | 'network' | 'internal'

export interface Outcome {
  /** HTTP status, 0 when there was no HTTP answer. */
  status: number
  responseBody: string | null
  error: string | null
  errorClass: ErrorClass | null
  /** What was sent: every header, signatures included (they are not secrets; the secret never leaves). */
  requestHeaders: Record<string, string>
  responseHeaders: Record<string, string> | null
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

/** What the worker needs of a sender: tests give it one that answers without a network. */
export interface AttemptSender {
  send (a: Attempt): Promise<Outcome>
  close (): Promise<void>
}

/** The error class of a failed request, from its error code (or its cause's) and the error's name. */
export function classOf (code: string | undefined, name: string): ErrorClass {
  if (name === 'TimeoutError' || code === 'UND_ERR_HEADERS_TIMEOUT' || code === 'UND_ERR_BODY_TIMEOUT') return 'timeout'
  if (code === 'UND_ERR_CONNECT_TIMEOUT') return 'connect_timeout'
  if (code === 'ECONNREFUSED') return 'connection_refused'
  if (code === 'ECONNRESET' || code === 'UND_ERR_SOCKET' || code === 'EPIPE') return 'connection_reset'
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN' || code === 'ENODATA') return 'dns'
  if (code === 'ETARGETBLOCKED') return 'blocked'
  if (code !== undefined && /CERT|TLS|SSL|SELF_SIGNED|UNABLE_TO_VERIFY/.test(code)) return 'tls'
  return 'network'
}

const flat = (headers: Record<string, string | string[] | undefined>): Record<string, string> =>
  Object.fromEntries(Object.entries(headers).filter(([, v]) => v !== undefined)
    .map(([k, v]) => [k, Array.isArray(v) ? v.join(', ') : v!]))

/** Retry-After in seconds: a number of seconds, or an HTTP date (from `now`); null when absent or unreadable. */
export function parseRetryAfter (value: string | string[] | undefined, now = Date.now()): number | null {
  const v = Array.isArray(value) ? value[0] : value
  if (!v) return null
  if (/^\d+$/.test(v)) return Number(v)
  const at = Date.parse(v)
  return Number.isNaN(at) ? null : Math.max(0, Math.ceil((at - now) / 1000))
}

/** Sends signed deliveries over HTTPS, only ever to addresses the target guard approved. */
export class Sender implements AttemptSender {
  private readonly agent: Agent
  private readonly timeoutMs: number
  private readonly connectTimeoutMs: number

  constructor (private readonly opts: {
    allowPrivate: boolean
    caFile: string | undefined
    connections: number
    /** The attempt's time-out in all (TOTAL_TIMEOUT_MS by default). */
    timeoutMs?: number
  }) {
    this.timeoutMs = opts.timeoutMs ?? TOTAL_TIMEOUT_MS
    // The abort signal does not end a connection attempt (a TLS handshake that never completes): its own bound does.
    this.connectTimeoutMs = Math.min(CONNECT_TIMEOUT_MS, this.timeoutMs)
    this.agent = guardedAgent(opts, {
      connectTimeoutMs: this.connectTimeoutMs,
      responseTimeoutMs: this.timeoutMs,
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
    const timestamp = Math.floor(Date.now() / 1000)
    const headers = {
      'content-type': 'application/json',
      'user-agent': `marketplace-webhooks/${VERSION}`,
      // During a rotation's overlap the spec's single signature stays on the secret receivers already hold
      // (docs/decisions.md#webhooks-for-receivers); webhook-signature carries both.
      'x-service-signature': serviceSignature(a.keys.at(-1)!.secret, a.body),
      'x-service-topic': a.topic,
      'x-service-event-id': a.eventId,
      'x-service-delivery-attempt': String(a.attempt),
      'webhook-id': a.eventId,
      'webhook-timestamp': String(timestamp),
      'webhook-signature': standardSignature(a.keys, a.eventId, timestamp, a.body)
    }
    const failed = (errorClass: ErrorClass, error: string): Outcome => done({
      status: 0,
      responseBody: null,
      error,
      errorClass,
      requestHeaders: headers,
      responseHeaders: null,
      retryAfterS: null
    })
    if (refusedLiteral(url, this.opts.allowPrivate)) {
      return failed('blocked', 'refused: target is not an allowed HTTPS address')
    }
    try {
      const res = await request(url, {
        method: 'POST',
        dispatcher: this.agent,
        signal: AbortSignal.timeout(this.timeoutMs),
        headers,
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
      const ok = res.statusCode >= 200 && res.statusCode < 300
      return done({
        status: res.statusCode,
        responseBody: text,
        error: null,
        errorClass: ok ? null : res.statusCode >= 300 && res.statusCode < 400 ? 'redirect' : 'http_status',
        requestHeaders: headers,
        responseHeaders: flat(res.headers),
        retryAfterS: retryAfter
      })
    } catch (err) {
      const e = err as Error & { code?: string, cause?: { code?: string, message?: string } }
      const code = e.code ?? e.cause?.code
      const errorClass = classOf(code, e.name)
      const message =
        errorClass === 'timeout'
          ? `timed out after ${this.timeoutMs / 1000} s`
          : errorClass === 'connect_timeout'
            ? `connect timed out after ${this.connectTimeoutMs / 1000} s`
            : `${code ?? e.name}: ${e.cause?.message ?? e.message}`
      return failed(errorClass, message.slice(0, 500))
    }
  }

  async close (): Promise<void> {
    await this.agent.close()
  }
}
