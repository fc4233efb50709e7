// The progress display of long commands (cli/progress.ts): a bar on a terminal, plain lines now and then elsewhere.
import t from 'tap'
import { formatBytes, Progress } from '../../../cli/progress.js'

const ERASE = '\x1b[K'

function fake (isTTY: boolean) {
  let clock = 0
  const written: string[] = []
  return {
    stream: { isTTY, columns: 100, write: (s: string) => written.push(s) },
    written,
    now: () => clock,
    tick: (ms: number) => { clock += ms }
  }
}

t.test('elsewhere than a terminal: a plain line at most every interval, none for a short run', async t => {
  const f = fake(false)
  const p = new Progress({ unit: 'records', total: 500, stream: f.stream, now: f.now, interval: 5000 })
  f.tick(1000)
  p.update(100)
  t.same(f.written, [], 'nothing in the first interval')
  f.tick(4000)
  p.update(250)
  t.same(f.written, ['50% 250/500 records, 5 s left\n'])
  f.tick(1000)
  p.update(300)
  t.equal(f.written.length, 1, 'not again before the interval')
  f.tick(4000)
  p.update(400)
  t.match(f.written[1], /^80% 400\/500 records, \d+ s left\n$/)
  p.end()
  t.equal(f.written.length, 2, 'the end writes nothing on a log')
})

t.test('on a terminal: a bar redrawn in place at most ten times a second, erased at the end', async t => {
  const f = fake(true)
  const p = new Progress({ unit: 'bytes', total: 2_000_000, start: 500_000, stream: f.stream, now: f.now })
  f.tick(200)
  p.update(1_000_000)
  // Carriage return, the bar, the text, then erase to the end of the line (ESC [ K).
  t.ok(f.written[0]!.startsWith('\r[') && f.written[0]!.endsWith(ERASE), 'redrawn in place')
  t.match(f.written[0], /^\r\[#{10,}\.+\] 50% 1\.0 MB of 2\.0 MB, 1 s left/)
  f.tick(50)
  p.update(1_100_000)
  t.equal(f.written.length, 1, 'not redrawn within 100 ms')
  f.tick(50)
  p.update(2_000_000)
  t.ok(f.written[1]!.endsWith(`] 100% 2.0 MB of 2.0 MB${ERASE}`), 'the end is always drawn')
  p.end()
  t.equal(f.written[2], `\r${ERASE}`, 'erased')
})

t.test('formatBytes', async t => {
  t.same([0, 999, 1000, 15_300, 2_500_000, 1_000_000_000].map(formatBytes),
    ['0 B', '999 B', '1.0 kB', '15 kB', '2.5 MB', '1.0 GB'])
})
