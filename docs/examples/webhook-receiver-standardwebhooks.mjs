// A webhook receiver that verifies marketplace-gateway deliveries with the Standard Webhooks library
// (npm install standardwebhooks). The library checks webhook-signature and that webhook-timestamp is recent.
// Run: SIGNING_SECRET=whsec_... TLS_KEY=key.pem TLS_CERT=cert.pem PORT=8443 node webhook-receiver-standardwebhooks.mjs
import { readFileSync } from 'node:fs'
import { createServer } from 'node:https'
import { Webhook } from 'standardwebhooks'

/**
 * A request handler. `onEvent(event)` runs once per event id (`webhook-id`, the same on every retry). Keep `seen`
 * in your database in real life. During a secret rotation either secret verifies: give this the one you hold.
 */
export function createHandler ({ secret, onEvent, seen = new Set() }) {
  const webhook = new Webhook(secret)
  return (req, res) => {
    if (req.method !== 'POST') return res.writeHead(405).end()
    const chunks = []
    req.on('data', chunk => chunks.push(chunk))
    req.on('end', async () => {
      // Verify the raw bytes as received: re-serialised JSON would not match.
      const raw = Buffer.concat(chunks).toString('utf8')
      let event
      try {
        event = webhook.verify(raw, req.headers)
      } catch {
        return res.writeHead(401).end('bad signature or stale timestamp')
      }
      const eventId = req.headers['webhook-id']
      if (seen.has(eventId)) return res.writeHead(200).end('already processed')
      try {
        await onEvent(event)
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
