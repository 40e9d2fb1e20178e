-- Run traces and metrics (issue 16; docs/observability.md).
--
-- `runs`: one summary row per run (bridge turn, agent run, tool run, hook fire), written only by
-- the IndexShard objects in their batched flushes (never on the per-message path). It carries no
-- input, output or error text: the full trace lives in the turn's thread object (home 'thread')
-- or in the IndexShard its trace id hashes to (home 'shard'), and goes with it (thread retention
-- and forget, person erase, trace retention, POST /api/runs/prune). Times are epoch milliseconds.
CREATE TABLE runs (
  trace_id TEXT PRIMARY KEY,
  kind TEXT NOT NULL,
  trigger TEXT NOT NULL,
  target_kind TEXT NOT NULL,
  target_name TEXT NOT NULL,
  target_version TEXT,
  route_name TEXT,
  thread_id TEXT,
  interaction_id TEXT,
  user_id TEXT,
  principal TEXT,
  started_at INTEGER NOT NULL,
  duration_ms INTEGER NOT NULL,
  outcome TEXT NOT NULL,
  step_count INTEGER NOT NULL DEFAULT 0,
  has_error INTEGER NOT NULL DEFAULT 0,
  home TEXT NOT NULL CHECK (home IN ('thread', 'shard'))
);
CREATE INDEX runs_recent ON runs (started_at DESC, trace_id);
CREATE INDEX runs_by_principal ON runs (principal, started_at DESC);
CREATE INDEX runs_by_user ON runs (user_id, started_at DESC);
CREATE INDEX runs_by_thread ON runs (thread_id);
CREATE INDEX runs_by_kind ON runs (kind, started_at);

-- Additive per-minute counters (delivery attempts, failed attempts, rate-cap sheds), by label
-- (a route name). `minute` is epoch ms / 60000, floored. Old minutes are pruned by the shards.
CREATE TABLE run_counters (
  minute INTEGER NOT NULL,
  name TEXT NOT NULL,
  label TEXT NOT NULL,
  value INTEGER NOT NULL,
  PRIMARY KEY (minute, name, label)
);

-- Each thread's FIFO depth and delivery backlog as of its last listing push (same lag as the
-- listing): the metrics' queue depths and backlog sum these rows.
CREATE TABLE thread_loads (
  thread_id TEXT PRIMARY KEY,
  route_name TEXT NOT NULL,
  queue_depth INTEGER NOT NULL,
  pending_deliveries INTEGER NOT NULL,
  updated_at INTEGER NOT NULL
);
CREATE INDEX thread_loads_by_route ON thread_loads (route_name);
