import { randomUUID } from 'node:crypto'
import pg from 'pg'
import type { FastifyBaseLogger } from 'fastify'
import type { Db, Queryable } from './types.js'

const RECONNECT_MS = 250

export async function createPostgres (url: string, log: FastifyBaseLogger): Promise<Db> {
  const pool = new pg.Pool({ connectionString: url, max: 20, idleTimeoutMillis: 30_000 })
  // An idle client that loses its connection must not crash the process; the pool replaces it.
  pool.on('error', err => log.warn({ err }, 'idle postgres client error'))
  await pool.query('select 1')

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
    const client = new pg.Client({ connectionString: url, application_name: listenerName })
    client.on('notification', msg => {
      for (const fn of handlers.get(msg.channel) ?? []) fn(msg.payload ?? '')
    })
    const onDown = (err?: Error): void => {
      if (listener !== client) return
      listener = undefined
      if (err) log.warn({ err }, 'postgres notification listener lost')
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

  function scheduleReconnect (): void {
    if (closing || reconnectTimer) return
    reconnectTimer = setTimeout(() => {
      reconnectTimer = undefined
      connectListener().catch(err => {
        log.warn({ err }, 'postgres notification listener reconnect failed')
        scheduleReconnect()
      })
    }, RECONNECT_MS)
    reconnectTimer.unref()
  }

  await connectListener()

  // Named statements are parsed and planned once per connection, not on every call: the service's SQL is a
  // small fixed set, so the name is simply a number per distinct text.
  const names = new Map<string, string>()
  const nameOf = (sql: string): string => {
    let name = names.get(sql)
    if (!name) names.set(sql, name = `mg${names.size}`)
    return name
  }
  const queryable = (c: pg.Pool | pg.PoolClient): Queryable => ({
    async query<T> (sql: string, params?: unknown[]) {
      const res = await c.query({ name: nameOf(sql), text: sql, values: params as unknown[] })
      return res.rows as T[]
    }
  })

  return {
    kind: 'postgres',
    listenerName,
    ...queryable(pool),
    async tx (fn) {
      const client = await pool.connect()
      try {
        await client.query('begin')
        const result = await fn(queryable(client))
        await client.query('commit')
        return result
      } catch (err) {
        await client.query('rollback').catch(() => {})
        throw err
      } finally {
        client.release()
      }
    },
    async exec (sql) {
      await pool.query(sql)
    },
    async withAdvisoryLock (key, fn) {
      const client = await pool.connect()
      try {
        await client.query('select pg_advisory_lock($1)', [key])
        try {
          return await fn({ ...queryable(client), exec: async (sql: string) => { await client.query(sql) } })
        } finally {
          await client.query('select pg_advisory_unlock($1)', [key])
        }
      } finally {
        client.release()
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
