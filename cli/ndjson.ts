import { createReadStream } from 'node:fs'

/** A line of a file, with where it is: its number (from 1) and its bytes, `start` to `end` (after its newline). */
export interface Line {
  line: number
  start: number
  end: number
  text: string
}

/** A line the reader would not hold: longer than it may be, or not UTF-8. */
export class BadLine extends Error {
  constructor (readonly line: number, problem: string) {
    super(problem)
  }
}

const NEWLINE = 0x0a

/**
 * The lines of a file from byte `offset` on (the line after number `line`), streamed: at most one line and one
 * read buffer in memory, however large the file. `\n` or `\r\n` ends a line; a last line without one counts too;
 * a UTF-8 byte order mark at the very start is dropped. A line longer than `maxBytes` is refused with its number
 * as soon as it is known to be, before the rest of it is read.
 */
export async function * readLines (
  path: string, from: { offset: number, line: number }, maxBytes: number
): AsyncGenerator<Line> {
  const stream = createReadStream(path, { start: from.offset, highWaterMark: 256 * 1024 })
  let pending: Buffer[] = []
  let pendingBytes = 0
  let start = from.offset
  let line = from.line
  const decode = (bytes: Buffer, n: number): string => {
    try {
      // fatal: bytes that are not UTF-8 are an error, not U+FFFD; ignoreBOM false: a leading BOM is dropped.
      const text = new TextDecoder('utf-8', { fatal: true, ignoreBOM: start !== 0 }).decode(bytes)
      return text.endsWith('\r') ? text.slice(0, -1) : text
    } catch {
      throw new BadLine(n, 'is not UTF-8')
    }
  }
  const tooLong = (n: number) => new BadLine(n, `is longer than ${maxBytes} bytes`)
  try {
    for await (const chunk of stream as AsyncIterable<Buffer>) {
      let at = 0
      for (;;) {
        const nl = chunk.indexOf(NEWLINE, at)
        if (nl === -1) {
          if (at < chunk.length) {
            pending.push(chunk.subarray(at))
            pendingBytes += chunk.length - at
            if (pendingBytes > maxBytes) throw tooLong(line + 1)
          }
          break
        }
        const piece = chunk.subarray(at, nl)
        const bytes = pending.length > 0 ? Buffer.concat([...pending, piece]) : piece
        pending = []
        pendingBytes = 0
        line++
        if (bytes.length > maxBytes) throw tooLong(line)
        const end = start + bytes.length + 1
        yield { line, start, end, text: decode(bytes, line) }
        start = end
        at = nl + 1
      }
    }
    if (pendingBytes > 0) {
      line++
      yield { line, start, end: start + pendingBytes, text: decode(Buffer.concat(pending), line) }
    }
  } finally {
    stream.destroy()
  }
}
