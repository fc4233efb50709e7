/** Node's socket errors, by the kind of unavailability they mean: the same words for Postgres and Redis. */
const KINDS: Record<string, string> = {
  ECONNREFUSED: 'refused',
  ECONNRESET: 'connection_lost',
  EPIPE: 'connection_lost',
  ETIMEDOUT: 'timeout',
  ENOTFOUND: 'unresolved',
  EAI_AGAIN: 'unresolved',
  EHOSTUNREACH: 'unreachable',
  ENETUNREACH: 'unreachable'
}

/** The kind of a socket error (`refused`, `timeout`, …), or undefined when it is not one. */
export function networkErrorKind (err: unknown): string | undefined {
  const code = (err as { code?: unknown })?.code
  // Own keys only: a code named like an Object member (`constructor`) is not a kind.
  return typeof code === 'string' && Object.hasOwn(KINDS, code) ? KINDS[code] : undefined
}
