/**
 * Where the service reads the time for its rules (token lifetimes, grace windows, retry schedules, leases): the
 * system clock in production, a clock the tests move by hand (BuildOptions.clock), so that no test waits for real
 * time to pass.
 */
export interface Clock {
  /** Milliseconds since the epoch, as Date.now(). */
  now (): number
}

export const systemClock: Clock = { now: () => Date.now() }
