-- Background tool runs and schedules (issue 16; docs/tool-runs.md, docs/schedules.md).
--
-- Each run lives in its ToolRun Durable Object (request, status, result or error, attempts); this
-- table is only the listing index: one row written once when the run is submitted and replaced
-- when it ends. It carries no arguments and no result (user data stays in the object, which its
-- retention deletes). Times are epoch milliseconds.
CREATE TABLE tool_runs (
  run_id TEXT PRIMARY KEY,
  tool_name TEXT NOT NULL,
  caller_user_id TEXT NOT NULL,
  origin TEXT NOT NULL CHECK (origin IN ('api', 'schedule')),
  schedule_name TEXT,
  status TEXT NOT NULL CHECK (status IN ('queued', 'running', 'succeeded', 'failed')),
  error_kind TEXT,
  created_at INTEGER NOT NULL,
  finished_at INTEGER,
  expires_at INTEGER
);
CREATE INDEX tool_runs_recent ON tool_runs (created_at DESC, run_id);
CREATE INDEX tool_runs_by_tool ON tool_runs (tool_name, created_at DESC);
CREATE INDEX tool_runs_by_caller ON tool_runs (caller_user_id, created_at DESC);
CREATE INDEX tool_runs_by_expiry ON tool_runs (expires_at) WHERE expires_at IS NOT NULL;

-- Each schedule lives in its Schedule Durable Object (spec, next slot as its alarm, recent fires);
-- this table mirrors the spec for the listing and is refreshed by the object at each fire.
CREATE TABLE schedules (
  name TEXT PRIMARY KEY,
  tool_name TEXT NOT NULL,
  tool_kwargs TEXT NOT NULL,
  schedule_kwargs TEXT NOT NULL,
  cron TEXT NOT NULL,
  timezone TEXT NOT NULL,
  execution_key TEXT NOT NULL,
  execution_key_fingerprint TEXT NOT NULL,
  created_by TEXT NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  next_fire_at TEXT,
  last_fire_at TEXT,
  last_run_id TEXT,
  fires INTEGER NOT NULL DEFAULT 0
);
CREATE INDEX schedules_by_creator ON schedules (created_by, name);
CREATE INDEX schedules_by_key ON schedules (execution_key, name);
