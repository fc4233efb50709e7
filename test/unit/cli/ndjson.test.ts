// The import's line reader (cli/ndjson.ts): lines with their numbers and byte offsets, streamed from any offset.
import { mkdtempSync, writeFileSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import fc from 'fast-check'
import t from 'tap'
import { BadLine, readLines, type Line } from '../../../cli/ndjson.js'

const dir = mkdtempSync(join(tmpdir(), 'mg-ndjson-'))
let n = 0
const file = (content: string | Buffer): string => {
  const path = join(dir, `f${n++}.ndjson`)
  writeFileSync(path, content)
  return path
}
const read = async (path: string, from = { offset: 0, line: 0 }, max = 1000): Promise<Line[]> => {
  const out: Line[] = []
  for await (const l of readLines(path, from, max)) out.push(l)
  return out
}

t.test('lines, numbers and byte offsets; CRLF, a last line without newline, blank lines, a BOM', async t => {
  const lines = await read(file('\uFEFF{"a":"ä"}\r\n\n{"b":2}\n{"c":3}'))
  t.same(lines.map(l => [l.line, l.text]), [[1, '{"a":"ä"}'], [2, ''], [3, '{"b":2}'], [4, '{"c":3}']])
  t.same(lines.map(l => [l.start, l.end]), [[0, 15], [15, 16], [16, 24], [24, 31]], 'offsets in bytes, BOM included')
  t.same(await read(file('')), [], 'an empty file has no line')
})

t.test('from an offset: the lines after it, numbered on', async t => {
  const path = file('{"a":1}\n{"b":2}\n{"c":3}\n')
  t.same((await read(path, { offset: 8, line: 1 })).map(l => [l.line, l.text, l.start]),
    [[2, '{"b":2}', 8], [3, '{"c":3}', 16]])
  t.same(await read(path, { offset: 24, line: 3 }), [], 'nothing after the end')
})

t.test('lines across the read buffer\'s edges (256 KiB): whole, with their offsets', async t => {
  const lines = Array.from({ length: 3000 }, (_, i) => JSON.stringify({ i, pad: 'é'.repeat(i % 300) }))
  const content = lines.join('\n') + '\n'
  const bytes = Buffer.from(content)
  const got = await read(file(content), { offset: 0, line: 0 }, 10_000)
  t.equal(got.length, 3000)
  t.ok(got.every((l, i) => l.text === lines[i] && bytes.subarray(l.start, l.end).toString() === `${lines[i]}\n`),
    'each line whole, at its offsets')
})

t.test('a line over the limit is refused with its number before the rest of it is read; bytes that are not UTF-8',
  async t => {
    const path = file('{"a":1}\n' + 'x'.repeat(5000) + '\n{"b":2}\n')
    const seen: number[] = []
    const reading = (async () => {
      for await (const l of readLines(path, { offset: 0, line: 0 }, 100)) seen.push(l.line)
    })()
    await t.rejects(reading, new BadLine(2, 'is longer than 100 bytes'))
    t.same(seen, [1], 'the lines before it were read')
    await t.rejects(read(file(Buffer.from([0x7b, 0xff, 0x7d, 0x0a]))), { line: 1, message: 'is not UTF-8' })
  })

t.test('property: the lines, joined again, are the file; offsets cut the file where the lines are', async t => {
  const line = fc.string({ unit: 'grapheme', maxLength: 30 }).map(s => s.replace(/[\r\n\uFEFF]/g, ''))
  await fc.assert(fc.asyncProperty(fc.array(line, { maxLength: 20 }), fc.boolean(), async (lines, trailing) => {
    const content = lines.join('\n') + (trailing ? '\n' : '')
    const expected = content.split('\n')
    if (expected.at(-1) === '') expected.pop()
    const bytes = Buffer.from(content)
    const got = await read(file(content), { offset: 0, line: 0 }, 10_000)
    const slices = got.map(l => bytes.subarray(l.start, l.end).toString())
    return got.length === expected.length && slices.join('') === content &&
      got.every((l, i) => l.text === expected[i] && l.line === i + 1 && slices[i]!.replace(/\n$/, '') === l.text)
  }), { numRuns: 100 })
  t.pass('for generated lines')
})
