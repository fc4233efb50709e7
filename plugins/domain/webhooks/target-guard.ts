import { lookup as dnsLookup } from 'node:dns'
import { readFileSync } from 'node:fs'
import { BlockList, isIP } from 'node:net'
import { createSecureContext, rootCertificates } from 'node:tls'
import { Agent } from 'undici'

const MAX_URL_LENGTH = 2048
const DNS_TIMEOUT_MS = 2_000

// Loopback, private, link-local, CGNAT, multicast, unspecified and other non-public ranges: docs/rules.md#target-guard
const blocked = new BlockList()
for (const [net, prefix] of [
  ['0.0.0.0', 8],
  ['10.0.0.0', 8],
  ['100.64.0.0', 10],
  ['127.0.0.0', 8],
  ['169.254.0.0', 16],
  ['172.16.0.0', 12],
  ['192.0.0.0', 24],
  ['192.0.2.0', 24],
  ['192.88.99.0', 24],
  ['192.168.0.0', 16],
  ['198.18.0.0', 15],
  ['198.51.100.0', 24],
  ['203.0.113.0', 24],
  ['224.0.0.0', 4],
  ['240.0.0.0', 4]
] as const) { blocked.addSubnet(net, prefix, 'ipv4') }
for (const [net, prefix] of [
  ['::', 128],
  ['::1', 128],
  ['fc00::', 7],
  ['fe80::', 10],
  ['fec0::', 10],
  ['ff00::', 8],
  ['100::', 64],
  // Teredo tunnels to an IPv4 address it carries obfuscated, and the tunnel's relay is not ours to choose.
  ['2001::', 32],
  ['2001:db8::', 32]
] as const) { blocked.addSubnet(net, prefix, 'ipv6') }

/**
 * The IPv4 address an IPv6 address carries (IPv4-mapped, IPv4-compatible, IPv4-translated `::ffff:0:0/96`, NAT64,
 * 6to4), if any.
 */
function embeddedIPv4 (address: string): string | undefined {
  const groups = expandIPv6(address)
  if (!groups) return undefined
  const v4 = (hi: number, lo: number) => `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`
  const zero = (from: number, to: number) => groups.slice(from, to).every(g => g === 0)
  if (zero(0, 5) && (groups[5] === 0xffff || groups[5] === 0)) return v4(groups[6]!, groups[7]!)
  if (zero(0, 4) && groups[4] === 0xffff && groups[5] === 0) return v4(groups[6]!, groups[7]!)
  // NAT64: the well-known prefix 64:ff9b::/96 and the local-use 64:ff9b:1::/48 carry the IPv4 in the last 32 bits.
  if (groups[0] === 0x64 && groups[1] === 0xff9b && (zero(2, 6) || groups[2] === 1)) return v4(groups[6]!, groups[7]!)
  if (groups[0] === 0x2002) return v4(groups[1]!, groups[2]!)
  return undefined
}

function expandIPv6 (address: string): number[] | undefined {
  let a = address
    .toLowerCase()
    .replace(/^\[|\]$/g, '')
    .replace(/%.*$/, '')
  const dotted = a.match(/(\d+\.\d+\.\d+\.\d+)$/)
  if (dotted) {
    const p = dotted[1]!.split('.').map(Number)
    a = a.slice(0, -dotted[1]!.length) + ((p[0]! << 8) | p[1]!).toString(16) + ':' + ((p[2]! << 8) | p[3]!).toString(16)
  }
  const [head, tail] = a.split('::') as [string, string | undefined]
  const h = head ? head.split(':') : []
  const t = tail !== undefined ? (tail ? tail.split(':') : []) : []
  const fill = tail !== undefined ? 8 - h.length - t.length : 0
  const all = [...h, ...Array(fill).fill('0'), ...t]
  if (all.length !== 8) return undefined
  return all.map(g => parseInt(g, 16))
}

/** True when a connection to this address could reach something that is not the public internet. */
export function isBlockedAddress (address: string): boolean {
  const family = isIP(address)
  if (family === 4) return blocked.check(address, 'ipv4')
  if (family === 6) {
    const v4 = embeddedIPv4(address)
    if (v4 !== undefined && blocked.check(v4, 'ipv4')) return true
    return blocked.check(address, 'ipv6')
  }
  return true
}

export type TargetProblem = string

function resolveAll (host: string): Promise<string[] | undefined> {
  return new Promise(resolve => {
    const timer = setTimeout(() => resolve(undefined), DNS_TIMEOUT_MS)
    dnsLookup(host, { all: true, verbatim: true }, (err, addresses) => {
      clearTimeout(timer)
      resolve(err ? undefined : addresses.map(a => a.address))
    })
  })
}

/**
 * Checks a subscription's target URL when it is created. Returns what is wrong with it, or undefined.
 * The WHATWG URL parser has already turned decimal, octal and hex IPv4 forms (`2130706433`, `0x7f.1`) into
 * dotted quads, so literals are checked in their canonical form. A name that does not resolve now is accepted:
 * deliveries re-check at connection time.
 */
export async function checkTargetUrl (raw: string, allowPrivate: boolean): Promise<TargetProblem | undefined> {
  if (raw.length > MAX_URL_LENGTH) return `target_url must be at most ${MAX_URL_LENGTH} characters.`
  // The URL parser forgives a lot (spaces, `https:host`, backslashes); what is stored and shown must be plain.
  if (!/^https:\/\/[^\s\\]+$/i.test(raw)) {
    return /^https:/i.test(raw) || /^\s/.test(raw)
      ? 'target_url must be an absolute https:// URL without spaces, control characters or backslashes.'
      : 'target_url must be an HTTPS URL.'
  }
  let url: URL
  try {
    url = new URL(raw)
  } catch {
    return 'target_url must be an absolute URL.'
  }
  if (url.protocol !== 'https:') return 'target_url must be an HTTPS URL.'
  if (url.username || url.password) return 'target_url must not contain user info.'
  // A fragment is never sent to the receiver: a URL with one does not say where deliveries go.
  if (raw.includes('#')) return 'target_url must not contain a fragment.'
  if (allowPrivate) return undefined
  const host = url.hostname.replace(/^\[|\]$/g, '').replace(/\.$/, '')
  if (host === 'localhost' || host.endsWith('.localhost')) return 'target_url must not point at localhost.'
  if (isIP(host)) {
    return isBlockedAddress(host) ? 'target_url must not point at a loopback, private or reserved address.' : undefined
  }
  const addresses = await resolveAll(host)
  if (addresses?.some(isBlockedAddress)) return 'target_url resolves to a loopback, private or reserved address.'
  return undefined
}

type LookupCallback = (
  err: NodeJS.ErrnoException | null,
  address: string | Array<{ address: string, family: number }>,
  family?: number
) => void

/**
 * A `lookup` for the delivery client's sockets: it resolves the host, refuses when any address is blocked, and
 * hands the socket only an address it checked, so a DNS answer cannot change between check and connect.
 */
export function guardedLookup (allowPrivate: boolean) {
  return (hostname: string, options: { all?: boolean }, callback: LookupCallback): void => {
    dnsLookup(hostname, { all: true, verbatim: true }, (err, addresses) => {
      if (err) return callback(err, '')
      const bad = addresses.find(a => isBlockedAddress(a.address))
      if (bad && !allowPrivate) {
        const refused = Object.assign(
          new Error(`refused: ${hostname} resolves to a blocked address (${bad.address})`),
          { code: 'ETARGETBLOCKED' }
        )
        return callback(refused, '')
      }
      const chosen = addresses[0]!
      if (options.all) return callback(null, [chosen])
      callback(null, chosen.address, chosen.family)
    })
  }
}

/** Where the service may fetch from: private targets only when allowed, and one extra CA when configured. */
export interface OutboundPolicy {
  allowPrivate: boolean
  caFile: string | undefined
}

/**
 * The one client for URLs that third parties name (webhook targets, client metadata documents): every socket is
 * opened to an address `guardedLookup` approved, with bounded waits. Literal IP addresses never reach a lookup:
 * check them with `refusedLiteral` first.
 */
export function guardedAgent (
  policy: OutboundPolicy,
  limits: { connectTimeoutMs: number, responseTimeoutMs: number, connections: number }
): Agent {
  // One TLS context for every connection: passing `ca` would make Node build one per connection from ~150
  // certificates, about 20 ms of blocked event loop each (bench/webhooks.ts profile).
  const secureContext = policy.caFile
    ? createSecureContext({ ca: [...rootCertificates, readFileSync(policy.caFile, 'utf8')] })
    : undefined
  return new Agent({
    connect: {
      timeout: limits.connectTimeoutMs,
      lookup: guardedLookup(policy.allowPrivate),
      ...(secureContext ? { secureContext } : {})
    },
    headersTimeout: limits.responseTimeoutMs,
    bodyTimeout: limits.responseTimeoutMs,
    connections: limits.connections
  })
}

/** True when the URL is not https, or names a blocked IP address literally (which no lookup would see). */
export function refusedLiteral (url: URL, allowPrivate: boolean): boolean {
  const host = url.hostname.replace(/^\[|\]$/g, '')
  return url.protocol !== 'https:' || (isIP(host) !== 0 && !allowPrivate && isBlockedAddress(host))
}
