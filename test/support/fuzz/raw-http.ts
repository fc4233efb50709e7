import { connect } from 'node:net'
import type { Answer } from './oracle.js'

/** No answer at all within this time is a finding of its own. */
const RAW_TIMEOUT_MS = 5_000

/**
 * Sends bytes over a fresh TCP connection and reads the first HTTP answer: for what `inject` cannot express
 * (raw bytes in the request line, broken framing, oversized headers). Resolves undefined when the server closed the
 * connection without a word, and rejects on time-out.
 */
export function rawRequest (port: number, bytes: Buffer): Promise<Answer | undefined> {
  return new Promise((resolve, reject) => {
    const socket = connect({ port, host: '127.0.0.1' })
    const chunks: Buffer[] = []
    let done = false
    const finish = (err?: Error) => {
      if (done) return
      done = true
      clearTimeout(timer)
      socket.destroy()
      if (err) return reject(err)
      const all = Buffer.concat(chunks)
      resolve(all.length === 0 ? undefined : parseAnswer(all))
    }
    const timer = setTimeout(() => finish(new Error(`no answer within ${RAW_TIMEOUT_MS} ms`)), RAW_TIMEOUT_MS)
    socket.on('data', chunk => {
      chunks.push(chunk)
      const all = Buffer.concat(chunks)
      if (parseAnswer(all, true)) finish()
    })
    socket.on('error', () => finish())
    socket.on('close', () => finish())
    socket.write(bytes)
  })
}

/** Parses the first answer in `raw`; with `complete`, only when all of it has arrived (else undefined). */
function parseAnswer (raw: Buffer, complete: true): Answer | undefined
function parseAnswer (raw: Buffer): Answer
function parseAnswer (raw: Buffer, complete = false): Answer | undefined {
  // Interim answers (100 Continue) come first; the answer is the one after them.
  while (/^HTTP\/1\.[01] 1\d\d /.test(raw.subarray(0, 13).toString('latin1'))) {
    const interimEnd = raw.indexOf('\r\n\r\n')
    if (interimEnd < 0) break
    raw = raw.subarray(interimEnd + 4)
  }
  const end = raw.indexOf('\r\n\r\n')
  if (end < 0) {
    if (complete) return undefined
    return { statusCode: 0, headers: {}, body: raw.toString('latin1') }
  }
  const [statusLine = '', ...lines] = raw.subarray(0, end).toString('latin1').split('\r\n')
  const headers: Record<string, string> = {}
  for (const line of lines) {
    const colon = line.indexOf(':')
    if (colon > 0) headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim()
  }
  const statusCode = Number(statusLine.split(' ')[1] ?? 0)
  let body = raw.subarray(end + 4)
  if (headers['transfer-encoding']?.includes('chunked')) {
    const parts: Buffer[] = []
    let rest = body
    for (;;) {
      const eol = rest.indexOf('\r\n')
      if (eol < 0) {
        if (complete) return undefined
        break
      }
      const size = parseInt(rest.subarray(0, eol).toString('latin1'), 16)
      if (size === 0) break
      if (rest.length < eol + 2 + size + 2) {
        if (complete) return undefined
        break
      }
      parts.push(rest.subarray(eol + 2, eol + 2 + size))
      rest = rest.subarray(eol + 2 + size + 2)
    }
    body = Buffer.concat(parts)
  } else if (headers['content-length'] !== undefined) {
    const length = Number(headers['content-length'])
    if (body.length < length) {
      if (complete) return undefined
    } else {
      body = body.subarray(0, length)
    }
  } else if (complete && statusCode !== 204 && statusCode !== 304) {
    return undefined // read until the server closes
  }
  return { statusCode, headers, body: body.toString('utf8') }
}
