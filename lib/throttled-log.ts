import type { FastifyBaseLogger } from 'fastify'
import { systemClock, type Clock } from './clock.js'

/**
 * Logs a recurring failure once per interval with a count, not once per request: an outage under load is one line
 * when it starts and one summary line per interval while it lasts, not thousands of stack traces.
 */
export function throttledLog (
  log: FastifyBaseLogger,
  message: string,
  intervalMs = 10_000,
  clock: Clock = systemClock
) {
  const windows = new Map<string, { until: number, suppressed: number }>()
  return (kind: string, err: unknown): void => {
    const now = clock.now()
    const w = windows.get(kind)
    if (w && now < w.until) {
      w.suppressed++
      return
    }
    const suppressed = w?.suppressed ?? 0
    windows.set(kind, { until: now + intervalMs, suppressed: 0 })
    const e = err as { message?: string, code?: string }
    // The first line of an episode carries the error; later ones say how many were folded into the previous one.
    log.warn({ kind, error: e?.message, code: e?.code, suppressed, interval_s: intervalMs / 1000 }, message)
  }
}
