import { randomUUID } from 'node:crypto'
import { userInfo } from 'node:os'
import pg from 'pg'
import type { FastifyBaseLogger } from 'fastify'
import { networkErrorKind } from '../../../lib/network-errors.js'
import { throttledLog } from '../../../lib/throttled-log.js'
import { DatabaseUnavailableError, type Db, type Queryable } from './types.js'

const RECONNECT_MS = 250

/**
 * Every wait on Postgres is bounded (docs/operations.md#time-outs), so that a database that stops answering turns
 * into a prompt 503, never a hung request: a pool client is acquired or a connection made within CONNECT_MS, and a
 * statement answers within STATEMENT_MS (the server cancels it) or QUERY_MS (the client gives up on a server that
 * answers nothing at all, frozen or behind a black hole). One request's worst case is CONNECT_MS + QUERY_MS.
 */
export const PG_TIMEOUTS = { CONNECT_MS: 1_500, STATEMENT_MS: 2_000, QUERY_MS: 2_500, IDLE_IN_TX_MS: 10_000 }

/**
 * Connection settings: the URL, with the OS user when it names none, as libpq does (pg only reads USER, and the
 * environment of a container may have none).
 */
export function connectionOptions (url: string): pg.ClientConfig {
  const u = new URL(url)
  if (u.username === '' && !u.searchParams.has('user')) {
    u.searchParams.set('user', process.env.PGUSER ?? process.env.USER ?? userInfo().username)
  }
  // No JIT (docs/decisions.md, "Postgres settings of the service's connections"); options the URL gives come after,
  // and so win.
  u.searchParams.set('options', ['-c jit=off', u.searchParams.get('options')].filter(Boolean).join(' '))
  return { connectionString: u.toString(), keepAlive: true }
}

/** Postgres's own codes for an unavailable server (SQLSTATE). */
const UNAVAILABLE_CODES: Record<string, string> = {
  57014: 'timeout', // statement_timeout
  '25P03': 'timeout', // idle_in_transaction_session_timeout
  '57P01': 'shutting_down',
  '57P02': 'shutting_down',
  '57P03': 'starting_up',
  53300: 'overloaded'
}
const UNAVAILABLE_MESSAGES: [RegExp, string][] = [
  [/timeout exceeded when trying to connect|connection timeout|Query read timeout/, 'timeout'],
  [/Connection terminated|not queryable|ended unexpectedly/, 'connection_lost'],
  [/Cannot use a pool after calling end/, 'shutting_down']
]

/** What kind of unavailability an error is, or undefined when it is anything else (a constraint, a bad query). */
export function unavailableKind (err: unknown): string | undefined {
  const e = err as { code?: string, message?: string }
  const network = networkErrorKind(err)
  if (network) return network
  if (e?.code && UNAVAILABLE_CODES[e.code]) return UNAVAILABLE_CODES[e.code]
  // Class 08 is "connection exception"; class 53 "insufficient resources".
  if (e?.code && /^(08|53)/.test(e.code)) return e.code.startsWith('08') ? 'connection_lost' : 'overloaded'
  for (const [pattern, kind] of UNAVAILABLE_MESSAGES) if (pattern.test(e?.message ?? '')) return kind
  return undefined
}

export interface PostgresOptions {
  /** Called for every error that made the database unavailable to a caller (metrics). */
  onUnavailable?: (kind: string) => void
}

/** Distinct statement texts prepared by name at most; the service's own are about a hundred. */
const MAX_NAMED = 1_000

export async function createPostgres (url: string, log: FastifyBaseLogger, opts: PostgresOptions = {}): Promise<Db> {
  const connection = connectionOptions(url)
  const pool = new pg.Pool({
    ...connection,
    max: 20,
    idleTimeoutMillis: 30_000,
    connectionTimeoutMillis: PG_TIMEOUTS.CONNECT_MS,
    statement_timeout: PG_TIMEOUTS.STATEMENT_MS,
    query_timeout: PG_TIMEOUTS.QUERY_MS,
    idle_in_transaction_session_timeout: PG_TIMEOUTS.IDLE_IN_TX_MS
  })
  const report = throttledLog(log, 'postgres unavailable: requests answer 503 until it is back')
  /** Turns an outage into DatabaseUnavailableError (logged once per interval); anything else passes unchanged. */
  const translate = (err: unknown): unknown => {
    if (err instanceof DatabaseUnavailableError) return err
    const kind = unavailableKind(err)
    if (!kind) return err
    report(kind, err)
    opts.onUnavailable?.(kind)
    return new DatabaseUnavailableError(kind, { cause: err })
  }
  // A client that loses its connection, idle or checked out, must not crash the process; the pool replaces it.
  pool.on('error', err => { translate(err) })
  const checkout = async (): Promise<pg.PoolClient> => {
    const client = await pool.connect().catch(err => { throw translate(err) })
    const onError = (err: Error): void => { translate(err) }
    client.on('error', onError)
    const release = client.release.bind(client)
    client.release = (destroy?: Error | boolean) => {
      client.off('error', onError)
      return release(destroy)
    }
    return client
  }

  // The first connection says at once whether the database is there at all; the caller decides about retrying.
  await pool.query('select 1').catch(async err => {
    await pool.end().catch(() => {})
    throw err
  })
  // Named so that operators (and tests) can tell each instance's notification connection apart.
  const listenerName = `mg-listener-${randomUUID().slice(0, 8)}`
  const handlers = new Map<string, Set<(payload: string) => void>>()
  const lostHandlers = new Set<() => void>()
  let listener: pg.Client | undefined
  let healthy = false
  let closing = false
  let reconnectTimer: NodeJS.Timeout | undefined

  function markLost (): void {
    const wasHealthy = healthy
    healthy = false
    if (wasHealthy) for (const fn of lostHandlers) fn()
  }

  async function connectListener (): Promise<void> {
    const client = new pg.Client({
      ...connection,
      application_name: listenerName,
      connectionTimeoutMillis: PG_TIMEOUTS.CONNECT_MS
    })
    client.on('notification', msg => {
      for (const fn of handlers.get(msg.channel) ?? []) fn(msg.payload ?? '')
    })
    const onDown = (err?: Error): void => {
      if (listener !== client) return
      listener = undefined
      if (err) log.warn({ error: err.message }, 'postgres notification listener lost')
      markLost()
      client.end().catch(() => {})
      scheduleReconnect()
    }
    client.on('error', onDown)
    client.on('end', () => onDown())
    await client.connect()
    for (const channel of handlers.keys()) await client.query(`listen ${pg.escapeIdentifier(channel)}`)
    listener = client
    healthy = true
  }

  // An outage is one line when the listener is lost, one when a reconnect first fails (its message, no stack), and
  // one when it is back: not a line at every retry.
  let failingSince: number | undefined
  function scheduleReconnect (): void {
    if (closing || reconnectTimer) return
    reconnectTimer = setTimeout(() => {
      reconnectTimer = undefined
      connectListener().then(() => {
        if (failingSince === undefined) return
        log.warn({ seconds: Math.round((Date.now() - failingSince) / 1000) }, 'postgres notification listener back')
        failingSince = undefined
      }, (err: Error) => {
        if (failingSince === undefined) {
          failingSince = Date.now()
          log.warn({ error: err.message }, `postgres notification listener reconnect failed; retrying every ${
            RECONNECT_MS / 1000} s`)
        }
        scheduleReconnect()
      })
    }, RECONNECT_MS)
    reconnectTimer.unref()
  }

  await connectListener()

  // Named statements are parsed and planned once per connection, not on every call: the service's SQL is a
  // small fixed set, so the name is simply a number per distinct text. Past MAX_NAMED distinct texts every new one
  // goes unnamed, so that neither this map nor any backend's prepared statements can grow without bound.
  const names = new Map<string, string>()
  const nameOf = (sql: string): string | undefined => {
    let name = names.get(sql)
    if (!name && names.size < MAX_NAMED) names.set(sql, name = `mg${names.size}`)
    return name
  }
  const queryable = (c: pg.Pool | pg.PoolClient | pg.Client): Queryable => ({
    async query<T> (sql: string, params?: unknown[]) {
      try {
        const name = nameOf(sql)
        const res = await c.query({ ...(name && { name }), text: sql, values: params as unknown[] })
        return res.rows as T[]
      } catch (err) {
        throw translate(err)
      }
    }
  })

  return {
    kind: 'postgres',
    listenerName,
    ...queryable(pool),
    async ping (timeoutMs) {
      // Its own bound on both waits: acquiring a client, and the answer (after which the client is destroyed).
      return Promise.race([
        pool.query({ text: 'select 1', query_timeout: timeoutMs } as pg.QueryConfig).then(() => true, () => false),
        new Promise<boolean>(resolve => setTimeout(() => resolve(false), timeoutMs).unref())
      ])
    },
    async tx (fn) {
      const client = await checkout()
      let broken: Error | undefined
      try {
        await queryable(client).query('begin')
        const result = await fn(queryable(client))
        await queryable(client).query('commit')
        return result
      } catch (err) {
        // A client whose connection failed or timed out is destroyed, not returned to the pool.
        if (err instanceof DatabaseUnavailableError) broken = err
        else await client.query('rollback').catch(e => { broken = e })
        throw err
      } finally {
        client.release(broken)
      }
    },
    async exec (sql) {
      await pool.query(sql).catch(err => { throw translate(err) })
    },
    async withAdvisoryLock (key, fn) {
      // Migrations: their own connection, without the statement time-outs, since a migration may rightly take long.
      const client = new pg.Client({ ...connection, connectionTimeoutMillis: PG_TIMEOUTS.CONNECT_MS })
      client.on('error', err => { translate(err) })
      await client.connect().catch(err => { throw translate(err) })
      const q = queryable(client)
      try {
        await q.query('select pg_advisory_lock($1)', [key])
        try {
          return await fn({ ...q, exec: async (sql: string) => { await client.query(sql) } })
        } finally {
          await q.query('select pg_advisory_unlock($1)', [key])
        }
      } finally {
        await client.end().catch(() => {})
      }
    },
    async listen (channel, onMessage) {
      let set = handlers.get(channel)
      if (!set) {
        set = new Set()
        handlers.set(channel, set)
        await listener?.query(`listen ${pg.escapeIdentifier(channel)}`)
      }
      set.add(onMessage)
    },
    onNotificationsLost (fn) { lostHandlers.add(fn) },
    get notificationsHealthy () { return healthy },
    poolStats: () => ({ total: pool.totalCount, idle: pool.idleCount, waiting: pool.waitingCount }),
    async close () {
      closing = true
      clearTimeout(reconnectTimer)
      const l = listener
      listener = undefined
      healthy = false
      await l?.end().catch(() => {})
      await pool.end()
    }
  }
}
