-- MCP sessions (2025-11-25) where every instance sees them (docs/mcp.md#sessions-on-every-instance). Postgres 15 and
-- PGlite.

-- What an instance needs to serve a session it did not open: whose it is, and what its initialize negotiated.
create table mcp_sessions (
  id text primary key,
  -- The install whose token opened it; null for an anonymous session (MCP_ALLOW_ANONYMOUS).
  install_id text,
  protocol_version text not null,
  client_info jsonb not null,
  client_capabilities jsonb not null,
  created_at timestamptz not null,
  -- Recorded at most about once a minute per instance (not on every request); idle expiry allows for that lag.
  last_seen_at timestamptz not null
);
-- The sweep of idle sessions.
create index mcp_sessions_last_seen on mcp_sessions (last_seen_at);
