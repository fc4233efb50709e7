import type { Clock } from '../../lib/clock.js'

/** A clock the test moves by hand (BuildOptions.clock): time passes only when the test says so. */
export class ManualClock implements Clock {
  constructor (private at = Date.parse('2026-01-01T00:00:00Z')) {}

  now (): number {
    return this.at
  }

  /** Moves the clock forward by `ms` milliseconds. */
  advance (ms: number): void {
    this.at += ms
  }
}
