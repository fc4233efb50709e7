// The position file of `events import` (cli/event-import.ts, readPosition): what the command wrote is taken, anything
// else (edited by hand, another file's) is refused with one line naming the file, never trusted.
import { createHash } from 'node:crypto'
import { mkdtempSync, statSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import t from 'tap'
import { CommandError } from '../../../cli/events-client.js'
import { readPosition } from '../../../cli/event-import.js'

const dir = mkdtempSync(join(tmpdir(), 'mg-position-'))
const file = join(dir, 'events.ndjson')
const lines = ['{"id":"a"}', '{"id":"b"}', '{"id":"c"}']
writeFileSync(file, lines.map(l => l + '\n').join(''))
const size = statSync(file).size
const positionFile = `${file}.position`

/** What the command writes after a batch that ended with line 2 (bytes 11 to 22). */
const written = {
  file,
  line: 2,
  offset: 22,
  events: 2,
  check: { start: 11, sha256: createHash('sha256').update('{"id":"b"}\n').digest('hex') },
  updated_at: '2026-11-27T10:00:00.000Z'
}
const read = (content: unknown) => {
  writeFileSync(positionFile, typeof content === 'string' ? content : JSON.stringify(content))
  return readPosition(positionFile, file, size)
}

t.test('the position the command wrote is where the next run continues; none is the start', async t => {
  t.same(read(written), written)
  const start = { file: '', line: 0, offset: 0, events: 0, check: null, updated_at: '' }
  t.same(readPosition(join(dir, 'none.position'), file, size), start)
})

t.test('a position that is not what the command wrote is refused in one line naming the file', async t => {
  const refused = (why: string) => new CommandError(`${positionFile} is not a position this command wrote for ` +
    `${file}: ${why}. Delete it, or pass --restart to import the file from its start.`)
  // The parser's own words differ between Node versions.
  const notJson = new RegExp(`^${positionFile} is not a position this command wrote for ${file}: it is not JSON ` +
    '\\([^\\n]+\\)\\. Delete it, or pass --restart')
  t.throws(() => read('{"line": 2,'), { name: 'CommandError', message: notJson })
  const cases: Array<[unknown, string]> = [
    ['[]', 'it holds no JSON object'],
    ['null', 'it holds no JSON object'],
    [{ ...written, line: '2' }, '"line" must be a whole number from 1 (got "2")'],
    [{ ...written, line: -3 }, '"line" must be a whole number from 1 (got -3)'],
    [{ ...written, line: 0, offset: 0 }, '"line" must be a whole number from 1 (got 0)'],
    [{ ...written, line: 1.5 }, '"line" must be a whole number from 1 (got 1.5)'],
    [{ ...written, offset: -22 }, '"offset" must be a whole number of bytes from "line" (got -22)'],
    [{ ...written, offset: undefined }, '"offset" must be a whole number of bytes from "line" (got none)'],
    [{ ...written, line: 30 }, '"offset" must be a whole number of bytes from "line" (got 22)'],
    [{ ...written, events: 'two' }, '"events" must be a whole number from 1 to "line" (2) (got "two")'],
    [{ ...written, events: 3 }, '"events" must be a whole number from 1 to "line" (2) (got 3)'],
    [{ ...written, check: null }, '"check" must be an object of "start" and "sha256" (got null)'],
    [{ ...written, check: { ...written.check, start: 22 } }, '"check.start" must be a whole number below "offset" ' +
      '(got 22)'],
    [{ ...written, check: { ...written.check, sha256: 'abc' } }, '"check.sha256" must be 64 hexadecimal digits ' +
      '(got "abc")'],
    [{ ...written, file: 7 }, '"file" must be the file\'s path (got 7)']
  ]
  for (const [content, why] of cases) {
    t.throws(() => read(content), refused(why), why)
  }
})

t.test('a position past the end of the file, or of another content, is refused naming both files', async t => {
  t.throws(() => read({ ...written, offset: 999 }), new CommandError(`${positionFile} is past the end of ${file}: ` +
    `it says byte 999 (line 2), the file has ${size}. Pass --restart to import the file from its start, or ` +
    '--position-file for a position of its own.'))
  t.throws(() => read({ ...written, offset: 33, check: { ...written.check, start: 22 } }),
    new CommandError(`${file} is not the file ${positionFile} was written for (or its line 2 changed): pass ` +
      '--restart to import it from its start, or --position-file for a position of its own.'))
})
