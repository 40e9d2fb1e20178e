-- Background tool runs may ask (ask_user) and wait (docs/interactions.md "Questions from tool runs"):
-- a tool run's listing row can say 'waiting', and an interaction's origin can be a tool run.
-- SQLite cannot alter a CHECK constraint, so both listing indexes are rebuilt. Neither holds data
-- of its own: the runs and the interactions live in their objects, which write these rows.
CREATE TABLE tool_runs_v3 (
  run_id TEXT PRIMARY KEY,
  tool_name TEXT NOT NULL,
  caller_user_id TEXT NOT NULL,
  origin TEXT NOT NULL CHECK (origin IN ('api', 'schedule', 'hook')),
  schedule_name TEXT,
  hook_name TEXT,
  status TEXT NOT NULL CHECK (status IN ('queued', 'running', 'waiting', 'succeeded', 'failed')),
  error_kind TEXT,
  created_at INTEGER NOT NULL,
  finished_at INTEGER,
  expires_at INTEGER
);
INSERT INTO tool_runs_v3 (run_id, tool_name, caller_user_id, origin, schedule_name, hook_name, status, error_kind, created_at, finished_at, expires_at)
  SELECT run_id, tool_name, caller_user_id, origin, schedule_name, hook_name, status, error_kind, created_at, finished_at, expires_at FROM tool_runs;
DROP TABLE tool_runs;
ALTER TABLE tool_runs_v3 RENAME TO tool_runs;
CREATE INDEX tool_runs_recent ON tool_runs (created_at DESC, run_id);
CREATE INDEX tool_runs_by_tool ON tool_runs (tool_name, created_at DESC);
CREATE INDEX tool_runs_by_caller ON tool_runs (caller_user_id, created_at DESC);
CREATE INDEX tool_runs_by_expiry ON tool_runs (expires_at) WHERE expires_at IS NOT NULL;

CREATE TABLE interactions_v2 (
  interaction_id TEXT PRIMARY KEY,
  status TEXT NOT NULL CHECK (status IN ('pending', 'answered', 'cancelled', 'expired')),
  audience TEXT,
  origin_kind TEXT NOT NULL CHECK (origin_kind IN ('thread', 'agent_run', 'tool_run')),
  route_name TEXT,
  thread_id TEXT,
  target_kind TEXT NOT NULL,
  target_name TEXT NOT NULL,
  created_at INTEGER NOT NULL,
  expires_at INTEGER NOT NULL,
  ended_at INTEGER,
  ticket_hash TEXT,
  ticket_expires_at INTEGER,
  view TEXT NOT NULL
);
INSERT INTO interactions_v2 SELECT interaction_id, status, audience, origin_kind, route_name, thread_id, target_kind, target_name, created_at, expires_at, ended_at, ticket_hash, ticket_expires_at, view FROM interactions;
DROP TABLE interactions;
ALTER TABLE interactions_v2 RENAME TO interactions;
CREATE INDEX interactions_recent ON interactions (created_at DESC, interaction_id);
CREATE INDEX interactions_pending ON interactions (status, expires_at);
CREATE INDEX interactions_by_audience ON interactions (audience, created_at DESC);
CREATE INDEX interactions_by_thread ON interactions (thread_id);
CREATE UNIQUE INDEX interactions_by_ticket ON interactions (ticket_hash) WHERE ticket_hash IS NOT NULL;
