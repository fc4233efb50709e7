import type { Clock } from '../../lib/clock.js'

/**
 * A clock the test moves by hand (BuildOptions.clock): time passes only when the test says so, and timers fire when
 * it passes their time (a timer of no time at all fires on the next turn of the event loop, as setTimeout's does).
 */
export class ManualClock implements Clock {
  private timers: Array<{ at: number, fn: () => void }> = []

  constructor (private at = Date.parse('2026-01-01T00:00:00Z')) {}

  now (): number {
    return this.at
  }

  timer (ms: number, fn: () => void): () => void {
    if (ms <= 0) {
      const immediate = setImmediate(fn)
      return () => clearImmediate(immediate)
    }
    const timer = { at: this.at + ms, fn }
    this.timers.push(timer)
    return () => { this.timers = this.timers.filter(t => t !== timer) }
  }

  /** Timers waiting for the clock to move. */
  get waiting (): number {
    return this.timers.length
  }

  /** Moves the clock forward by `ms` milliseconds, firing the timers due on the way in the order they fall due. */
  advance (ms: number): void {
    const until = this.at + ms
    for (;;) {
      const due = this.timers.filter(t => t.at <= until).sort((a, b) => a.at - b.at)[0]
      if (!due) break
      this.timers = this.timers.filter(t => t !== due)
      this.at = Math.max(this.at, due.at)
      due.fn()
    }
    this.at = until
  }
}
