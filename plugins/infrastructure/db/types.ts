/** Anything that runs parameterised SQL: the database itself, or an open transaction. */
export interface Queryable {
  query<T = Record<string, unknown>>(sql: string, params?: unknown[]): Promise<T[]>
}

/**
 * The one small interface the rest of the service sees, the same for Postgres and the embedded database.
 * Inside `tx`, use only the transaction's Queryable: the embedded database has a single connection, and a query
 * on `db` itself would wait for the transaction that is waiting for it.
 */
export interface Db extends Queryable {
  readonly kind: 'postgres' | 'embedded'
  /** Postgres `application_name` of the notification connection (Postgres only). */
  readonly listenerName?: string
  /** Whether the database answers within `timeoutMs`; never holds a connection longer than that. */
  ping(timeoutMs: number): Promise<boolean>
  tx<T>(fn: (q: Queryable) => Promise<T>): Promise<T>
  /** Runs a multi-statement script (migrations). */
  exec(sql: string): Promise<void>
  /** Runs `fn` while holding a session-level advisory lock, on one connection. */
  withAdvisoryLock<T>(key: number, fn: (q: Queryable & { exec(sql: string): Promise<void> }) => Promise<T>): Promise<T>
  /**
   * Subscribes to a notification channel. `onLost` runs whenever delivery was interrupted (a dropped connection):
   * notifications may have been missed, so anything cached on their strength must be dropped.
   */
  listen(channel: string, onMessage: (payload: string) => void): Promise<void>
  onNotificationsLost(fn: () => void): void
  /** False while notifications cannot be trusted (listener connection down). */
  readonly notificationsHealthy: boolean
  /** Connections of the pool (Postgres only), for operators. */
  poolStats?(): { total: number, idle: number, waiting: number }
  close(): Promise<void>
}

/** Sends a notification; inside a transaction it is delivered at commit, as Postgres does. */
export async function notify (q: Queryable, channel: string, payload: string): Promise<void> {
  await q.query('select pg_notify($1, $2)', [channel, payload])
}

/**
 * The database could not be reached or did not answer in time: a connection refused, dropped or timed out, a
 * statement past its time-out, a server shutting down or starting up. Requests that meet it are answered 503 with
 * Retry-After (docs/operations.md); nothing the caller sent is wrong.
 */
export class DatabaseUnavailableError extends Error {
  constructor (readonly kind: string, options: { cause: unknown }) {
    super(`database unavailable (${kind})`, options)
    this.name = 'DatabaseUnavailableError'
  }
}
