// A complete webhook receiver for marketplace-gateway deliveries, with nothing but Node's standard library.
// Run: SIGNING_SECRET=whsec_... TLS_KEY=key.pem TLS_CERT=cert.pem PORT=8443 node webhook-receiver.mjs
import { createHmac, timingSafeEqual } from 'node:crypto'
import { readFileSync } from 'node:fs'
import { createServer } from 'node:https'

/** True when `signature` is the HMAC-SHA256 of the raw body bytes, keyed with the secret string. */
export function verifySignature (secret, rawBody, signature) {
  const expected = Buffer.from(createHmac('sha256', secret).update(rawBody).digest('hex'))
  const received = Buffer.from(String(signature ?? ''))
  // Constant-time comparison, and only of equal lengths (timingSafeEqual throws otherwise).
  return expected.length === received.length && timingSafeEqual(expected, received)
}

/**
 * A request handler. `onEvent(event)` runs once per event id: retries re-send the same event with the same
 * X-Service-Event-Id, so the id is the idempotency key. Keep `seen` in your database in real life.
 */
export function createHandler ({ secret, onEvent, seen = new Set() }) {
  return (req, res) => {
    if (req.method !== 'POST') return res.writeHead(405).end()
    const chunks = []
    req.on('data', chunk => chunks.push(chunk))
    req.on('end', async () => {
      // Verify the raw bytes as received: re-serialised JSON would not match.
      const raw = Buffer.concat(chunks)
      const signature = req.headers['x-service-signature']
      if (!verifySignature(secret, raw, signature)) return res.writeHead(401).end('bad signature')
      const eventId = req.headers['x-service-event-id']
      if (seen.has(eventId)) return res.writeHead(200).end('already processed')
      try {
        await onEvent(JSON.parse(raw.toString('utf8')))
        seen.add(eventId)
        res.writeHead(204).end()
      } catch {
        // Any non-2xx answer is retried later with the same bytes.
        res.writeHead(500).end()
      }
    })
  }
}

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].split('/').pop())) {
  const handler = createHandler({
    secret: process.env.SIGNING_SECRET,
    onEvent: async event => console.log(event.topic, event.id, JSON.stringify(event.data))
  })
  createServer({ key: readFileSync(process.env.TLS_KEY), cert: readFileSync(process.env.TLS_CERT) }, handler)
    .listen(Number(process.env.PORT ?? 8443), () => console.log('listening'))
}
