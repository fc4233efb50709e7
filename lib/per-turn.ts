/**
 * Calls made in the same turn of the event loop, run together when the turn ends. Under load a turn reads many
 * sockets, and requests that arrive together then share one database round trip: on a loopback or local socket
 * the write of each statement costs the service more CPU than the work it asks for (BENCHMARKS.md, accounting
 * records). Alone, a call waits for nothing but the end of its turn. Each call still reaches the database after it
 * was made, so it sees every change committed before.
 *
 * `run` answers one result per call, in the calls' order; when it throws, every call of its batch rejects with that
 * error. A batch holds at most `most` calls; more go out as further batches at once.
 */
export function perTurn<A, R> (run: (calls: A[]) => Promise<R[]>, most = 64): (call: A) => Promise<R> {
  let waiting: Array<{ call: A, resolve: (result: R) => void, reject: (err: unknown) => void }> = []

  async function go (batch: typeof waiting): Promise<void> {
    try {
      const results = await run(batch.map(b => b.call))
      batch.forEach((b, k) => b.resolve(results[k] as R))
    } catch (err) {
      for (const b of batch) b.reject(err)
    }
  }

  function flush (): void {
    const all = waiting
    waiting = []
    // go() never rejects: its batch's calls carry the outcome.
    for (let k = 0; k < all.length; k += most) go(all.slice(k, k + most)).catch(() => {})
  }

  return call => new Promise<R>((resolve, reject) => {
    if (waiting.push({ call, resolve, reject }) === 1) setImmediate(flush)
  })
}

/**
 * `perTurn` with a batch per shape of call (`shapeOf`): the calls of one turn and one shape run together, each shape's
 * batch apart (its own statement, connection and failure), so that `run` gets calls of one shape only.
 */
export function perTurnByShape<A, R> (
  shapeOf: (call: A) => string, run: (calls: A[]) => Promise<R[]>
): (call: A) => Promise<R> {
  const byShape = new Map<string, (call: A) => Promise<R>>()
  return call => {
    const shape = shapeOf(call)
    let batch = byShape.get(shape)
    if (!batch) {
      batch = perTurn(run)
      byShape.set(shape, batch)
    }
    return batch(call)
  }
}
