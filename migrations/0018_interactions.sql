-- Interactions (issue 17; docs/interactions.md): questions runs parked on with ask_user.
--
-- Each interaction lives in its Interaction Durable Object (question, options or schema, audience,
-- origin, the parked run, status, answer, ticket hash, expiry); this table is the listing index the
-- paged doors read, written by the object in the background (its alarm), never on a turn's path.
-- `view` is the interaction as the doors show it (never the parked run, never a ticket). Rows are
-- deleted with their object when INTERACTIONS_RETENTION_SECONDS have passed since the end, and
-- with their thread (thread forget, person erase). Times are epoch milliseconds.
CREATE TABLE interactions (
  interaction_id TEXT PRIMARY KEY,
  status TEXT NOT NULL CHECK (status IN ('pending', 'answered', 'cancelled', 'expired')),
  audience TEXT,
  origin_kind TEXT NOT NULL CHECK (origin_kind IN ('thread', 'agent_run')),
  route_name TEXT,
  thread_id TEXT,
  target_kind TEXT NOT NULL,
  target_name TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  ended_at INTEGER,
  -- SHA-256 (hex) of the live callback ticket, if any; the ticket itself is never stored.
  ticket_hash TEXT,
  ticket_expires_at INTEGER,
  view TEXT NOT NULL
);
CREATE INDEX interactions_recent ON interactions (created_at DESC, interaction_id);
CREATE INDEX interactions_pending ON interactions (status, expires_at);
CREATE INDEX interactions_by_audience ON interactions (audience, created_at DESC);
CREATE INDEX interactions_by_thread ON interactions (thread_id);
CREATE UNIQUE INDEX interactions_by_ticket ON interactions (ticket_hash) WHERE ticket_hash IS NOT NULL;
