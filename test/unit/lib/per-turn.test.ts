import t from 'tap'
import { perTurn } from '../../../lib/per-turn.js'

t.test('calls of one turn run together, in order, each getting its own result', async t => {
  const batches: number[][] = []
  const double = perTurn(async (calls: number[]) => {
    batches.push(calls)
    return calls.map(c => c * 2)
  })
  t.strictSame(await Promise.all([double(1), double(2), double(3)]), [2, 4, 6])
  t.strictSame(await double(4), 8, 'a call alone waits only for its turn')
  t.strictSame(batches, [[1, 2, 3], [4]])
})

t.test('a turn with more calls than a batch holds goes out as several batches at once', async t => {
  const batches: number[][] = []
  let running = 0
  let most = 0
  const same = perTurn(async (calls: number[]) => {
    batches.push(calls)
    most = Math.max(most, ++running)
    await new Promise(resolve => setImmediate(resolve))
    running--
    return calls
  }, 2)
  t.strictSame(await Promise.all([1, 2, 3, 4, 5].map(same)), [1, 2, 3, 4, 5])
  t.strictSame(batches, [[1, 2], [3, 4], [5]])
  t.equal(most, 3, 'the batches did not wait for each other')
})

t.test('a failing batch rejects its own calls only', async t => {
  const fail = new Error('refused')
  const picky = perTurn(async (calls: number[]) => {
    if (calls.includes(0)) throw fail
    return calls
  }, 2)
  const settled = await Promise.allSettled([picky(0), picky(1), picky(2), picky(3)])
  t.strictSame(settled.map(s => s.status), ['rejected', 'rejected', 'fulfilled', 'fulfilled'])
  t.equal((settled[0] as PromiseRejectedResult).reason, fail)
  t.strictSame(settled.slice(2).map(s => (s as PromiseFulfilledResult<number>).value), [2, 3])
})
