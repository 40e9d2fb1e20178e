-- Hooks and trigger links (issue 17; docs/hooks.md), and state bindings on hook and schedule fires.
--
-- A hook fires a tool as its bound execution key when a delivery on its topic matches its jq
-- condition. Each fire is a background tool run (a ToolRun object, listed in tool_runs with
-- origin 'hook'). Times of hooks and verifiers are ISO-8601 text; a link's expiry is epoch ms.
CREATE TABLE hooks (
  name TEXT PRIMARY KEY,
  topic TEXT NOT NULL,
  tool TEXT NOT NULL,
  execution_key TEXT NOT NULL,
  execution_key_fingerprint TEXT NOT NULL,
  tool_kwargs TEXT NOT NULL,
  condition TEXT,
  condition_id TEXT,
  condition_kwargs TEXT,
  condition_program TEXT,
  expr TEXT,
  expr_id TEXT,
  expr_kwargs TEXT,
  expr_program TEXT,
  state_binding TEXT,
  created_by TEXT NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
CREATE INDEX hooks_by_topic ON hooks (topic, name);
CREATE INDEX hooks_by_creator ON hooks (created_by, name);

-- At most one verifier per topic. The secret is sealed (AES-256-GCM under SETTINGS_ENCRYPTION_KEY)
-- or an env reference; exactly one of the two is set.
CREATE TABLE hook_verifiers (
  topic TEXT PRIMARY KEY,
  kind TEXT NOT NULL CHECK (kind IN ('github', 'stripe', 'standard_webhooks', 'hmac_sha256')),
  secret_sealed TEXT,
  secret_env TEXT,
  signature_header TEXT,
  delivery_header TEXT,
  created_by TEXT NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  CHECK ((secret_sealed IS NULL) <> (secret_env IS NULL))
);

-- Capability URLs: only the token's SHA-256 is kept.
CREATE TABLE hook_trigger_links (
  name TEXT PRIMARY KEY,
  token_hash TEXT NOT NULL UNIQUE,
  topic TEXT NOT NULL,
  execution_key TEXT NOT NULL,
  execution_key_fingerprint TEXT NOT NULL,
  tool_kwargs TEXT NOT NULL,
  require_api_key INTEGER NOT NULL,
  created_by TEXT NOT NULL,
  created_at TEXT NOT NULL,
  expires_at INTEGER
);
CREATE INDEX hook_trigger_links_by_expiry ON hook_trigger_links (expires_at) WHERE expires_at IS NOT NULL;

-- Background runs gain the origin 'hook' and the hook's name. SQLite cannot alter a CHECK
-- constraint, so the listing index is rebuilt (it holds no user data; the runs live in objects).
CREATE TABLE tool_runs_v2 (
  run_id TEXT PRIMARY KEY,
  tool_name TEXT NOT NULL,
  caller_user_id TEXT NOT NULL,
  origin TEXT NOT NULL CHECK (origin IN ('api', 'schedule', 'hook')),
  schedule_name TEXT,
  hook_name TEXT,
  status TEXT NOT NULL CHECK (status IN ('queued', 'running', 'succeeded', 'failed')),
  error_kind TEXT,
  created_at INTEGER NOT NULL,
  finished_at INTEGER,
  expires_at INTEGER
);
INSERT INTO tool_runs_v2 (run_id, tool_name, caller_user_id, origin, schedule_name, hook_name, status, error_kind, created_at, finished_at, expires_at)
  SELECT run_id, tool_name, caller_user_id, origin, schedule_name, NULL, status, error_kind, created_at, finished_at, expires_at FROM tool_runs;
DROP TABLE tool_runs;
ALTER TABLE tool_runs_v2 RENAME TO tool_runs;
CREATE INDEX tool_runs_recent ON tool_runs (created_at DESC, run_id);
CREATE INDEX tool_runs_by_tool ON tool_runs (tool_name, created_at DESC);
CREATE INDEX tool_runs_by_caller ON tool_runs (caller_user_id, created_at DESC);
CREATE INDEX tool_runs_by_expiry ON tool_runs (expires_at) WHERE expires_at IS NOT NULL;

-- A schedule may carry a state binding (spec §2.6), passed to each fire's run.
ALTER TABLE schedules ADD COLUMN state_binding TEXT;
