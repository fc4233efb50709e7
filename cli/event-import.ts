import { createHash } from 'node:crypto'
import { existsSync, openSync, readFileSync, readSync, closeSync, renameSync, statSync, writeFileSync } from 'node:fs'
import { resolve } from 'node:path'
import { Batch, CommandError, eventsClient, plural, refusal, refusalHint, type Answer } from './events-client.js'
import { EVENTS_BODY_LIMIT } from '../lib/limits.js'
import { BadLine, readLines, type Line } from './ndjson.js'
import { Progress, type ProgressStream } from './progress.js'

/**
 * `marketplace-gateway events import <file>`: a backfill from NDJSON (one event a line) through POST /events, in
 * batches, resumable. After each accepted batch the position (line and byte offset after it) goes to the position
 * file, written whole and renamed into place; a rerun continues after it. The first refused batch stops the
 * import with the file's line of each problem; the position stays where the last accepted batch ended.
 */

export interface ImportOptions {
  file: string
  base: string
  token: string
  batch: number
  positionFile: string
  restart: boolean
  out?: ProgressStream
  err?: ProgressStream
}

/**
 * Where the next run starts: after `line`, at byte `offset`. `check` is the last accepted line's digest, to notice
 * a file that is not the one the position was written for.
 */
export interface Position {
  file: string
  line: number
  offset: number
  events: number
  check: { start: number, sha256: string } | null
  updated_at: string
}

const START: Position = { file: '', line: 0, offset: 0, events: 0, check: null, updated_at: '' }

const sha256 = (bytes: Buffer | string): string => createHash('sha256').update(bytes).digest('hex')

function readSlice (path: string, start: number, end: number): Buffer {
  const fd = openSync(path, 'r')
  try {
    const buf = Buffer.alloc(end - start)
    const n = readSync(fd, buf, 0, buf.length, start)
    return buf.subarray(0, n)
  } finally {
    closeSync(fd)
  }
}

const isWhole = (v: unknown): v is number => Number.isSafeInteger(v) && (v as number) >= 0

/**
 * What is wrong with a position file's content, judged against what writePosition writes; or undefined when it is
 * such a position. One is written only after an accepted batch: at least one line and one event in.
 */
function positionProblem (p: unknown): string | undefined {
  if (typeof p !== 'object' || p === null || Array.isArray(p)) return 'it holds no JSON object'
  const { line, offset, events, check, file } = p as Record<string, unknown>
  const got = (v: unknown) => ` (got ${v === undefined ? 'none' : JSON.stringify(v).slice(0, 80)})`
  if (!isWhole(line) || line < 1) return `"line" must be a whole number from 1${got(line)}`
  if (!isWhole(offset) || offset < line) return `"offset" must be a whole number of bytes from "line"${got(offset)}`
  if (!isWhole(events) || events < 1 || events > line) {
    return `"events" must be a whole number from 1 to "line" (${line})${got(events)}`
  }
  if (typeof check !== 'object' || check === null || Array.isArray(check)) {
    return `"check" must be an object of "start" and "sha256"${got(check)}`
  }
  const { start, sha256: digest } = check as Record<string, unknown>
  if (!isWhole(start) || start >= offset) return `"check.start" must be a whole number below "offset"${got(start)}`
  if (typeof digest !== 'string' || !/^[0-9a-f]{64}$/.test(digest)) {
    return `"check.sha256" must be 64 hexadecimal digits${got(digest)}`
  }
  if (typeof file !== 'string') return `"file" must be the file's path${got(file)}`
}

/**
 * The position to continue from, checked against the file; the start when there is none. A position file edited by
 * hand (a line that is not a number, negative, past the end, a field missing) is refused, never trusted.
 */
export function readPosition (positionFile: string, file: string, size: number): Position {
  if (!existsSync(positionFile)) return START
  let text: string
  try {
    text = readFileSync(positionFile, 'utf8')
  } catch (e) {
    throw new CommandError(`Cannot read ${positionFile}: ${(e as Error).message}`)
  }
  let problem: string | undefined
  let p: unknown
  try {
    p = JSON.parse(text)
    problem = positionProblem(p)
  } catch (e) {
    problem = `it is not JSON (${(e as Error).message})`
  }
  if (problem !== undefined) {
    throw new CommandError(`${positionFile} is not a position this command wrote for ${file}: ${problem}. Delete ` +
      'it, or pass --restart to import the file from its start.')
  }
  const position = p as Position
  if (position.offset > size) {
    throw new CommandError(`${positionFile} is past the end of ${file}: it says byte ${position.offset} (line ` +
      `${position.line}), the file has ${size}. Pass --restart to import the file from its start, or ` +
      '--position-file for a position of its own.')
  }
  if (sha256(readSlice(file, position.check!.start, position.offset)) !== position.check!.sha256) {
    throw new CommandError(`${file} is not the file ${positionFile} was written for (or its line ${position.line} ` +
      'changed): pass --restart to import it from its start, or --position-file for a position of its own.')
  }
  return { ...START, ...position }
}

function writePosition (positionFile: string, p: Position): void {
  const tmp = `${positionFile}.tmp`
  writeFileSync(tmp, JSON.stringify(p, null, 2) + '\n')
  renameSync(tmp, positionFile)
}

const lines = (from: number, to: number): string => from === to ? `line ${from}` : `lines ${from}–${to}`

/** Each problem of a refused batch at the file's line of its event: `events.ndjson:7: /data/total must …`. */
export function problemsByLine (
  file: string, answer: Extract<Answer, { ok: false }>, batch: Array<{ meta: { line: number, topic?: string } }>
): string[] {
  const json = answer.json
  const at = (i: number): string => `${file}:${batch[i]!.meta.line}`
  const out: string[] = []
  for (const d of json?.details ?? []) {
    // In a batch the path starts with the event's index: /3/data/total is line batch[3], field /data/total.
    const m = /^\/(\d+)(\/.*)?$/.exec(d.path ?? '')
    const i = m ? Number(m[1]) : -1
    if (m && i < batch.length) out.push(`${at(i)}: ${m[2] ?? '(the event)'} ${d.message ?? 'is invalid'}`)
    else out.push(`${file}: ${d.path ?? ''} ${d.message ?? 'is invalid'}`.replace(/ {2,}/g, ' '))
  }
  if (json?.error === 'unknown_topic' || json?.error === 'topic_not_emitted') {
    const topics = json.unknown ?? [/Topic (\S+) /.exec(json.message ?? '')?.[1]]
    batch.forEach((b, i) => {
      if (b.meta.topic !== undefined && topics.includes(b.meta.topic)) out.push(`${at(i)}: ${json.message}`)
    })
  }
  return out
}

export async function importEvents (opts: ImportOptions): Promise<void> {
  const out = opts.out ?? process.stdout
  const err = opts.err ?? process.stderr
  let size: number
  try {
    size = statSync(opts.file).size
  } catch (e) {
    throw new CommandError(`Cannot read ${opts.file}: ${(e as Error).message}`)
  }
  const began = performance.now()
  const from = opts.restart ? START : readPosition(opts.positionFile, opts.file, size)
  let position = { ...from, file: resolve(opts.file) }
  const post = eventsClient(opts.base, opts.token)
  const batch = new Batch<{ line: Line, topic?: string }>(opts.batch)
  const progress = new Progress({ unit: 'bytes', total: size, start: from.offset, stream: err })
  let sent = 0
  let deliveries = 0
  let batches = 0
  let firstLine: number | undefined
  let warnedId = false
  /** Where a stopped import leaves things, and what to do: `fix the line and run…`. */
  const kept = (todo = 'run'): string => position.line > 0
    ? `The position stays after line ${position.line} (${plural(position.events, 'event')} in), in ` +
      `${opts.positionFile}: ${todo} the same command again to continue from there.`
    : `Nothing of the file is in yet: ${todo} the same command again to start.`

  const flush = async (): Promise<void> => {
    const items = batch.items
    const answer = await post(batch.body())
    if (!answer.ok) {
      progress.end()
      const sentLines = items.map(i => ({ meta: { line: i.meta.line.line, topic: i.meta.topic } }))
      const problems = problemsByLine(opts.file, answer, sentLines)
      const span = lines(items[0]!.meta.line.line, items.at(-1)!.meta.line.line)
      throw new CommandError([
        `${opts.file}: the service refused the batch of ${span} (${refusal(answer)})` +
          (problems.length > 0 ? ':' : '.'),
        ...problems.map(p => `  ${p}`),
        `Nothing of that batch was stored.${refusalHint(answer)} ` +
          kept(problems.length > 0 ? 'fix the line and run' : 'run')
      ].join('\n'))
    }
    const last = items.at(-1)!.meta.line
    sent += items.length
    batches++
    deliveries += answer.accepted.reduce((s, a) => s + a.deliveries, 0)
    position = {
      ...position,
      line: last.line,
      offset: last.end,
      events: position.events + items.length,
      check: { start: last.start, sha256: sha256(readSlice(opts.file, last.start, last.end)) },
      updated_at: new Date().toISOString()
    }
    writePosition(opts.positionFile, position)
    batch.clear()
    progress.update(last.end)
  }

  try {
    for await (const line of readLines(opts.file, from, EVENTS_BODY_LIMIT - 2)) {
      if (line.text.trim() === '') continue
      firstLine ??= line.line
      let event: unknown
      try {
        event = JSON.parse(line.text)
      } catch (e) {
        progress.end()
        const pendingNote = batch.items.length > 0
          ? ` The batch from line ${batch.items[0]!.meta.line.line} on was not sent.`
          : ''
        throw new CommandError(`${opts.file}:${line.line}: not JSON (${(e as Error).message}).${pendingNote} ` +
          kept('fix the line and run'))
      }
      const topic = (event as { topic?: unknown })?.topic
      if (!warnedId && typeof event === 'object' && event !== null && !('id' in event)) {
        warnedId = true
        progress.end()
        err.write(`${opts.file}:${line.line}: this event has no id. Give every event one (your idempotency key): ` +
          'an import interrupted while a batch is on its way sends that batch again on the next run, and only ' +
          'events with ids are accepted once.\n')
      }
      const text = line.text.trim()
      if (!batch.fits(text)) await flush()
      batch.add(text, { line, topic: typeof topic === 'string' ? topic : undefined })
      if (batch.items.length === batch.size) await flush()
    }
    if (batch.items.length > 0) await flush()
  } catch (e) {
    progress.end()
    if (e instanceof BadLine) {
      const limit = e.message.startsWith('is longer') ? `; POST /events takes at most ${EVENTS_BODY_LIMIT} bytes` : ''
      throw new CommandError(`${opts.file}:${e.line}: ${e.message}${limit}. ${kept('fix the line and run')}`)
    }
    throw e
  }
  progress.update(size)
  progress.end()

  const seconds = ((performance.now() - began) / 1000).toFixed(1)
  if (sent === 0) {
    out.write(from.line > 0
      ? `Nothing to import: ${opts.file} has no event after line ${from.line} (the position in ` +
        `${opts.positionFile}). --restart sends the whole file again.\n`
      : `Nothing to import: ${opts.file} has no event.\n`)
    return
  }
  const resumed = from.line > 0 ? `Continued after line ${from.line}: ` : ''
  out.write(`${resumed}imported ${plural(sent, 'event')} from ${opts.file} (${lines(firstLine!, position.line)}) in ` +
    `${plural(batches, 'batch', 'batches')}, ${seconds} s; ` +
    `${plural(deliveries, 'webhook delivery', 'webhook deliveries')} queued.\n` +
    `Position: after line ${position.line}, in ${opts.positionFile}.\n`)
}
