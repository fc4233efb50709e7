import { notify, type Db } from '../../infrastructure/db/index.js'

/** Every instance LISTENs here; a session's end NOTIFYs its id, so that none serves it from memory afterwards. */
export const SESSION_ENDED_CHANNEL = 'mcp_session_ended'

/** What an instance needs to serve a 2025-11-25 session it did not open: whose it is and what it negotiated. */
export interface StoredSession {
  id: string
  /** The install whose token opened it; null: opened without one (MCP_ALLOW_ANONYMOUS). */
  installId: string | null
  /** The revision its initialize negotiated, and the client's info and capabilities from it. */
  protocolVersion: string
  clientInfo: { name: string, version: string } & Record<string, unknown>
  clientCapabilities: Record<string, unknown>
  /** Milliseconds since the epoch; instances record it at most once every so often (sessions.ts). */
  lastSeen: number
}

interface Row {
  id: string
  install_id: string | null
  protocol_version: string
  client_info: StoredSession['clientInfo']
  client_capabilities: StoredSession['clientCapabilities']
  last_seen_ms: string
}

/** The sessions table (migrations/008_mcp_sessions.sql): every statement on it. */
export function createSessionStore (db: Db) {
  return {
    async insert (s: StoredSession): Promise<void> {
      const at = new Date(s.lastSeen)
      await db.query(
        `insert into mcp_sessions
           (id, install_id, protocol_version, client_info, client_capabilities, created_at, last_seen_at)
         values ($1, $2, $3, $4, $5, $6, $6)`,
        [s.id, s.installId, s.protocolVersion, JSON.stringify(s.clientInfo), JSON.stringify(s.clientCapabilities), at]
      )
    },

    async find (id: string): Promise<StoredSession | undefined> {
      const [row] = await db.query<Row>(
        `select id, install_id, protocol_version, client_info, client_capabilities,
                floor(extract(epoch from last_seen_at) * 1000)::int8 as last_seen_ms
           from mcp_sessions where id = $1`,
        [id]
      )
      if (!row) return undefined
      return {
        id: row.id,
        installId: row.install_id,
        protocolVersion: row.protocol_version,
        clientInfo: row.client_info,
        clientCapabilities: row.client_capabilities,
        lastSeen: Number(row.last_seen_ms)
      }
    },

    /**
     * Records that the session was used at `at`, unless a later use is recorded already. False when the session has
     * no row any more.
     */
    async touch (id: string, at: number): Promise<boolean> {
      const [row] = await db.query<{ found: boolean }>(
        `with touched as (update mcp_sessions set last_seen_at = greatest(last_seen_at, $2) where id = $1 returning 1)
         select exists (select 1 from touched) as found`,
        [id, new Date(at)])
      return row?.found === true
    },

    /** Ends a session for every instance: the row goes, and each instance hears of it. */
    async remove (id: string): Promise<void> {
      await db.tx(async q => {
        await q.query('delete from mcp_sessions where id = $1', [id])
        await notify(q, SESSION_ENDED_CHANNEL, id)
      })
    },

    /** Deletes the sessions last recorded before `before`; how many. */
    async removeIdle (before: number): Promise<number> {
      const [row] = await db.query<{ n: string }>(
        'with gone as (delete from mcp_sessions where last_seen_at < $1 returning 1) select count(*) as n from gone',
        [new Date(before)])
      return Number(row!.n)
    }
  }
}

export type SessionStore = ReturnType<typeof createSessionStore>
