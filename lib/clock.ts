/**
 * Where the service reads the time for its rules (token lifetimes, grace windows, retry schedules, leases) and where
 * its background work waits (the delivery worker's poll, reaper and drain): the system clock in production, a clock
 * the tests move by hand (BuildOptions.clock), so that no test waits for real time to pass.
 */
export interface Clock {
  /** Milliseconds since the epoch, as Date.now(). */
  now (): number
  /**
   * Calls `fn` once, when `ms` milliseconds have passed on this clock; returns what cancels it. `background`: the
   * timer alone does not keep the process alive (an unref'd timer).
   */
  timer (ms: number, fn: () => void, opts?: { background?: boolean }): () => void
}

export const systemClock: Clock = {
  now: () => Date.now(),
  timer (ms, fn, opts) {
    const timer = setTimeout(fn, ms)
    if (opts?.background) timer.unref()
    return () => clearTimeout(timer)
  }
}
