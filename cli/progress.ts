/**
 * Progress of a long command on standard error: on a terminal a bar redrawn in place (at most ten times a second,
 * erased at the end); elsewhere (a log, CI) a plain line every few seconds, so that a short run prints none.
 * Hand-written rather than a dependency: two display modes in some sixty lines, no terminal library needed.
 */

export interface ProgressStream {
  write (text: string): unknown
  isTTY?: boolean
  columns?: number
}

export interface ProgressOptions {
  /** What is counted: `records`, or `bytes` (shown as kB, MB, GB). */
  unit: string
  total: number
  /** Where it starts (a resumed import): speed and time left count from there. */
  start?: number
  stream?: ProgressStream
  /** Milliseconds between plain lines when the stream is not a terminal. */
  interval?: number
  now?: () => number
}

const KB = 1000

export function formatBytes (n: number): string {
  if (n < KB) return `${n} B`
  const units = ['kB', 'MB', 'GB', 'TB']
  let value = n / KB
  let i = 0
  while (value >= KB && i < units.length - 1) {
    value /= KB
    i++
  }
  return `${value.toFixed(value < 10 ? 1 : 0)} ${units[i]}`
}

const seconds = (ms: number): string => ms < 60_000 ? `${Math.ceil(ms / 1000)} s` : `${Math.ceil(ms / 60_000)} min`

export class Progress {
  private readonly stream: ProgressStream
  private readonly tty: boolean
  private readonly now: () => number
  private readonly began: number
  private readonly from: number
  private shown = 0
  private drawn = false
  done = 0

  constructor (private readonly opts: ProgressOptions) {
    this.stream = opts.stream ?? process.stderr
    this.tty = this.stream.isTTY === true
    this.now = opts.now ?? (() => performance.now())
    this.began = this.now()
    this.from = this.done = opts.start ?? 0
  }

  private amount (n: number): string {
    return this.opts.unit === 'bytes' ? formatBytes(n) : n.toLocaleString('en-US')
  }

  /** The text without the bar: `45% 135/300 records, 10 s left`. */
  line (): string {
    const { total, unit } = this.opts
    const share = total > 0 ? Math.min(1, this.done / total) : 1
    const elapsed = this.now() - this.began
    const rate = (this.done - this.from) / Math.max(elapsed, 1)
    const left = rate > 0 && this.done < total ? `, ${seconds((total - this.done) / rate)} left` : ''
    const of = unit === 'bytes'
      ? `${this.amount(this.done)} of ${this.amount(total)}`
      : `${this.amount(this.done)}/${this.amount(total)} ${unit}`
    return `${Math.floor(share * 100)}% ${of}${left}`
  }

  update (done: number): void {
    this.done = done
    const at = this.now()
    if (this.tty) {
      if (at - this.shown < 100 && done < this.opts.total) return
      const text = this.line()
      const width = Math.max(10, Math.min(40, (this.stream.columns || 80) - text.length - 4))
      const filled = this.opts.total > 0 ? Math.round(width * Math.min(1, done / this.opts.total)) : width
      this.stream.write(`\r[${'#'.repeat(filled)}${'.'.repeat(width - filled)}] ${text}\x1b[K`)
      this.drawn = true
    } else {
      if (at - Math.max(this.shown, this.began) < (this.opts.interval ?? 5000)) return
      this.stream.write(`${this.line()}\n`)
    }
    this.shown = at
  }

  /** Erases the bar (the summary that follows says where it ended). */
  end (): void {
    if (this.drawn) this.stream.write('\r\x1b[K')
    this.drawn = false
  }
}
