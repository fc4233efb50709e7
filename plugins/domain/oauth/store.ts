import type { Db, Queryable } from '../../infrastructure/db/types.js'

/** An authorization code, found by the hash of its value. */
export interface StoredCode {
  clientId: string
  installId: string
  redirectUri: string
  codeChallenge: string
  /** The RFC 8707 resource of the grant; null: the public API. */
  resource: string | null
  /** Stamped at issue on the database clock: the issue time plus the code's lifetime. */
  expiresAt: Date
  usedAt: Date | null
}

/** A refresh token, found by the hash of its value. */
export interface StoredRefreshToken {
  tokenHash: string
  installId: string
  clientId: string
  /** The authorization code the chain started from. */
  codeHash: string
  resource: string | null
  /** The issue time, on the database clock (the clock key disables are stamped with). */
  createdAt: Date
  expiresAt: Date
  /** When it was first rotated, and the hash of its successor. */
  replacedAt: Date | null
  replacedBy: string | null
  revokedAt: Date | null
  /** `family` (reuse), `reissued` (an earlier version's grace re-issue); null for the others. */
  revokedReason: string | null
}

/** The successor a rotated token names, as a presentation of that token finds it after waiting for its row lock. */
export interface Successor {
  /** Neither rotated on nor revoked. */
  unused: boolean
  /** Created after the presentation arrived: the two presentations raced. */
  raced: boolean
  resource: string | null
  /** Now on the database clock, in epoch milliseconds: the issue time of an access token given with it again. */
  issuedMs: number
}

export interface NewCode {
  codeHash: string
  clientId: string
  installId: string
  redirectUri: string
  codeChallenge: string
  scopes: string[]
  resource: string | null
  ttlS: number
}

export interface NewRefreshToken {
  tokenHash: string
  installId: string
  clientId: string
  codeHash: string
  resource: string | null
  ttlS: number
}

interface CodeRow {
  client_id: string
  install_id: string
  redirect_uri: string
  code_challenge: string
  resource: string | null
  expires_at: Date
  used_at: Date | null
}

interface RefreshRow {
  token_hash: string
  install_id: string
  client_id: string
  code_hash: string
  resource: string | null
  created_at: Date
  expires_at: Date
  replaced_at: Date | null
  replaced_by: string | null
  revoked_at: Date | null
  revoked_reason: string | null
}

const toCode = (r: CodeRow): StoredCode => ({
  clientId: r.client_id,
  installId: r.install_id,
  redirectUri: r.redirect_uri,
  codeChallenge: r.code_challenge,
  resource: r.resource,
  expiresAt: r.expires_at,
  usedAt: r.used_at
})

const toRefreshToken = (r: RefreshRow): StoredRefreshToken => ({
  tokenHash: r.token_hash,
  installId: r.install_id,
  clientId: r.client_id,
  codeHash: r.code_hash,
  resource: r.resource,
  createdAt: r.created_at,
  expiresAt: r.expires_at,
  replacedAt: r.replaced_at,
  replacedBy: r.replaced_by,
  revokedAt: r.revoked_at,
  revokedReason: r.revoked_reason
})

/**
 * Every statement on authorization codes and refresh tokens, which are kept only as hashes. Instants are stamped
 * by the database: issue times order against key disables and family revocations, stamped on the same clock
 * (docs/decisions.md). Whether something has expired is the caller's to judge, on the app's clock. Statements
 * that take a Queryable run in the caller's transaction.
 */
export function createOAuthStore (db: Db) {
  return {
    async insertCode (q: Queryable, c: NewCode): Promise<void> {
      await q.query(
        `insert into authorization_codes
           (code_hash, client_id, install_id, redirect_uri, code_challenge, scopes, resource, expires_at)
         values ($1, $2, $3, $4, $5, $6, $7, now() + make_interval(secs => $8))`,
        [c.codeHash, c.clientId, c.installId, c.redirectUri, c.codeChallenge, c.scopes, c.resource, c.ttlS]
      )
    },

    /** The code, its row locked until the transaction ends: an exchange of one code at a time. */
    async lockCode (q: Queryable, codeHash: string): Promise<StoredCode | undefined> {
      const [row] = await q.query<CodeRow>(
        `select client_id, install_id, redirect_uri, code_challenge, resource, expires_at, used_at
           from authorization_codes where code_hash = $1 for update`,
        [codeHash]
      )
      return row && toCode(row)
    },

    async markCodeUsed (q: Queryable, codeHash: string): Promise<void> {
      await q.query('update authorization_codes set used_at = now() where code_hash = $1', [codeHash])
    },

    /** Revokes every refresh token of the chain a code started (a replayed code). */
    async revokeTokensOfCode (q: Queryable, codeHash: string): Promise<void> {
      await q.query('update refresh_tokens set revoked_at = now() where code_hash = $1 and revoked_at is null',
        [codeHash])
    },

    /** Stores a refresh token issued now, on the database clock; its issue time in epoch milliseconds. */
    async insertRefreshToken (q: Queryable, t: NewRefreshToken): Promise<number> {
      const [row] = await q.query<{ issued_ms: number }>(
        `insert into refresh_tokens (token_hash, install_id, client_id, code_hash, resource, created_at, expires_at)
         values ($1, $2, $3, $4, $5, clock_timestamp(), clock_timestamp() + make_interval(secs => $6))
         returning (extract(epoch from created_at) * 1000)::float8 as issued_ms`,
        [t.tokenHash, t.installId, t.clientId, t.codeHash, t.resource, t.ttlS]
      )
      return row!.issued_ms
    },

    /** When a request arrived `sinceArrivalMs` ago, on the database clock (the clock issue times are read from). */
    async arrivedAt (q: Queryable, sinceArrivalMs: number): Promise<Date> {
      const [row] = await q.query<{ arrived: Date }>(
        'select clock_timestamp() - make_interval(secs => $1) as arrived',
        [sinceArrivalMs / 1000]
      )
      return row!.arrived
    },

    /** The refresh token, its row locked until the transaction ends: presentations of one token take turns. */
    async lockRefreshToken (q: Queryable, tokenHash: string): Promise<StoredRefreshToken | undefined> {
      const [row] = await q.query<RefreshRow>(
        `select token_hash, install_id, client_id, code_hash, resource, created_at, expires_at, replaced_at,
                replaced_by, revoked_at, revoked_reason
           from refresh_tokens where token_hash = $1 for update`,
        [tokenHash]
      )
      return row && toRefreshToken(row)
    },

    /**
     * The successor of a rotated token, in a statement of its own: one that waited for the presented token's lock
     * must see the successor the lock holder has just committed (a join would still read the snapshot from before
     * the wait). `arrived`: when the presentation arrived (`arrivedAt`).
     */
    async successor (q: Queryable, successorHash: string, arrived: Date): Promise<Successor | undefined> {
      const [row] = await q.query<{ unused: boolean, raced: boolean, resource: string | null, issued_ms: number }>(
        `select replaced_at is null and revoked_at is null as unused, created_at >= $2 as raced, resource,
                (extract(epoch from clock_timestamp()) * 1000)::float8 as issued_ms
           from refresh_tokens where token_hash = $1`,
        [successorHash, arrived]
      )
      return row && { unused: row.unused, raced: row.raced, resource: row.resource, issuedMs: row.issued_ms }
    },

    /** Records the rotation of a token: its successor, and when it was first rotated. */
    async markReplaced (q: Queryable, tokenHash: string, successorHash: string): Promise<void> {
      await q.query(
        `update refresh_tokens set replaced_at = coalesce(replaced_at, now()), replaced_by = $2
          where token_hash = $1`,
        [tokenHash, successorHash]
      )
    },

    async installOfRefreshToken (tokenHash: string): Promise<string | undefined> {
      const [row] = await db.query<{ install_id: string }>(
        'select install_id from refresh_tokens where token_hash = $1', [tokenHash])
      return row?.install_id
    },

    /** Revokes every refresh token of the install: its family, on reuse. */
    async revokeFamily (q: Queryable, installId: string): Promise<void> {
      await q.query(
        `update refresh_tokens set revoked_at = now(), revoked_reason = 'family'
          where install_id = $1 and revoked_at is null`,
        [installId]
      )
    },

    /**
     * Revokes the chain a refresh token of the client belongs to (every token from the same code); nothing when
     * the token is unknown or another client's.
     */
    async revokeChainOf (clientId: string, tokenHash: string): Promise<void> {
      await db.query(
        `update refresh_tokens set revoked_at = now()
          where revoked_at is null and client_id = $2
            and code_hash = (select code_hash from refresh_tokens where token_hash = $1 and client_id = $2)`,
        [tokenHash, clientId]
      )
    }
  }
}

export type OAuthStore = ReturnType<typeof createOAuthStore>
