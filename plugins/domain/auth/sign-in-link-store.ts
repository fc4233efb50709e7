import type { Queryable } from '../../infrastructure/db/types.js'

/** Expired rows deleted per use of a link: enough to keep up with any rate of sign-ins, bounded per request. */
const SWEEP_BATCH = 100

/** Every statement about used sign-in links. */
export function createSignInLinkStore (db: Queryable) {
  return {
    /** Records the link as used; false when it was used before. */
    async markUsed (jti: string, expiresAt: Date): Promise<boolean> {
      const rows = await db.query(
        'insert into used_sign_in_links (jti, expires_at) values ($1, $2) on conflict (jti) do nothing returning jti',
        [jti, expiresAt]
      )
      return rows.length === 1
    },

    /** Forgets a batch of links that expired before `now`: their signature refuses them by now. */
    async deleteExpired (now: Date): Promise<void> {
      await db.query(
        `delete from used_sign_in_links where jti in
           (select jti from used_sign_in_links where expires_at < $1 limit $2)`,
        [now, SWEEP_BATCH]
      )
    }
  }
}

export type SignInLinkStore = ReturnType<typeof createSignInLinkStore>
