-- Refresh-token families (docs/decisions.md, "Refresh tokens under concurrency"). Postgres 15 and PGlite.

-- Why a refresh token was revoked. A token revoked by a grace re-issue ('reissued') that is presented again
-- means two parties hold the chain: the whole family is revoked ('family').
alter table refresh_tokens add column revoked_reason text;

-- Access tokens of the install issued at or before this instant are refused: set when a family is revoked on reuse,
-- so that a thief's access token dies with its refresh token.
alter table installs add column tokens_revoked_at timestamptz;
