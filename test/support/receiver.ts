import { execFileSync } from 'node:child_process'
import { mkdtempSync, readFileSync } from 'node:fs'
import type { IncomingMessage, ServerResponse } from 'node:http'
import { createServer } from 'node:https'
import type { AddressInfo } from 'node:net'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { eventually } from './helper.js'

type Test = { teardown(fn: () => unknown): void }

let certs: { dir: string, key: string, cert: string, caFile: string } | undefined

/** A self-signed certificate for 127.0.0.1 and localhost, made once per test process with openssl. */
export function selfSigned (): { key: string, cert: string, caFile: string } {
  if (!certs) {
    const dir = mkdtempSync(join(tmpdir(), 'mg-cert-'))
    execFileSync(
      'openssl',
      [
        'req',
        '-x509',
        '-newkey',
        'rsa:2048',
        '-nodes',
        '-days',
        '1',
        '-subj',
        '/CN=localhost',
        '-addext',
        'subjectAltName=DNS:localhost,IP:127.0.0.1,IP:::1',
        '-keyout',
        join(dir, 'key.pem'),
        '-out',
        join(dir, 'cert.pem')
      ],
      { stdio: 'ignore' }
    )
    certs = {
      dir,
      key: readFileSync(join(dir, 'key.pem'), 'utf8'),
      cert: readFileSync(join(dir, 'cert.pem'), 'utf8'),
      caFile: join(dir, 'cert.pem')
    }
  }
  return certs
}

export interface Received {
  path: string
  headers: IncomingMessage['headers']
  /** The raw bytes, exactly as they arrived. */
  body: Buffer
}

export type Responder = (req: Received, res: ServerResponse) => void

/**
 * An HTTPS server on 127.0.0.1 with the self-signed certificate, answering with `handler`, closed when the test
 * ends; its URL's `/hooks` path.
 */
export async function listenHttps (
  t: Test,
  handler: (req: IncomingMessage, res: ServerResponse) => void
): Promise<{ port: number, url: string }> {
  const { key, cert } = selfSigned()
  const server = createServer({ key, cert }, handler)
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  t.teardown(
    () =>
      new Promise<void>(resolve => {
        server.closeAllConnections()
        server.close(() => resolve())
      })
  )
  const port = (server.address() as AddressInfo).port
  return { port, url: `https://127.0.0.1:${port}/hooks` }
}

/** A real HTTPS webhook receiver on 127.0.0.1. `respond` decides each answer (default 200). */
export async function startReceiver (t: Test, respond: Responder = (_r, res) => res.end('ok')) {
  const { caFile } = selfSigned()
  const received: Received[] = []
  const state = { respond }
  const { port, url } = await listenHttps(t, (req, res) => {
    const chunks: Buffer[] = []
    req.on('data', c => chunks.push(c))
    req.on('end', () => {
      const r = { path: req.url ?? '/', headers: req.headers, body: Buffer.concat(chunks) }
      received.push(r)
      state.respond(r, res)
    })
  })
  return {
    url,
    port,
    caFile,
    received,
    get respond (): Responder {
      return state.respond
    },
    set respond (fn: Responder) {
      state.respond = fn
    },
    /** Resolves once `n` requests have arrived (or rejects after `ms`). */
    async waitFor (n: number, ms = 10_000): Promise<Received[]> {
      await eventually(() => received.length, { until: count => count >= n, timeout: ms, what: `${n} requests` })
      return received
    }
  }
}
