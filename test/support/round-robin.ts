import { createServer, request, type Server } from 'node:http'
import type { AddressInfo } from 'node:net'
import type { Test } from 'tap'

/**
 * A plain round-robin load balancer in front of instances: each request goes to the next instance in turn, with no
 * affinity of any kind, and is streamed through both ways (event streams included). `targets` may be changed while
 * it runs (a rolling restart); `hits` counts the requests each target got.
 */
export async function roundRobin (t: Test, targets: string[]): Promise<{
  url: string
  targets: string[]
  hits: Map<string, number>
}> {
  const hits = new Map<string, number>()
  let next = 0
  const balancer = {
    url: '',
    targets,
    hits
  }
  const server: Server = createServer((req, res) => {
    const target = new URL(balancer.targets[next++ % balancer.targets.length]!)
    hits.set(target.origin, (hits.get(target.origin) ?? 0) + 1)
    const upstream = request({
      host: target.hostname,
      port: target.port,
      method: req.method,
      path: req.url,
      headers: req.headers
    }, answer => {
      res.writeHead(answer.statusCode!, answer.headers)
      answer.pipe(res)
    })
    upstream.on('error', () => {
      if (!res.headersSent) res.writeHead(502)
      res.end()
    })
    res.on('close', () => upstream.destroy())
    req.pipe(upstream)
  })
  await new Promise<void>(resolve => server.listen(0, '127.0.0.1', resolve))
  t.teardown(() => new Promise<void>(resolve => {
    server.closeAllConnections()
    server.close(() => resolve())
  }))
  balancer.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`
  return balancer
}
