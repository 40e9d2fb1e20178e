-- Pending state saves (issue 13; spec §2.12, §3.3; platform-facts A4): a bound turn's updates that
-- could not apply when the turn ended (the state's object was unreachable, or an older save on the
-- same subject still waits), kept to be applied in order. Written only on that rare path, never on
-- the per-message path; the row goes once the save has applied.
CREATE TABLE IF NOT EXISTS state_pending_saves (
  id INTEGER PRIMARY KEY AUTOINCREMENT,
  status TEXT NOT NULL CHECK (status IN ('pending', 'calls', 'running', 'failed')),
  target_kind TEXT NOT NULL,
  target_name TEXT NOT NULL,
  run_id TEXT,
  -- JSON: ["state", …] and [{"state": …, "subject": {…}}, …]
  states TEXT NOT NULL,
  subjects TEXT NOT NULL,
  -- JSON: what applying needs again: the run input, the tool output, the write origin and, per
  -- bound state, its attach and the first update still to apply.
  work TEXT NOT NULL,
  attempts INTEGER NOT NULL DEFAULT 0,
  last_error TEXT,
  failed_phase TEXT,
  created_at INTEGER NOT NULL,
  failed_at INTEGER,
  next_attempt_at INTEGER NOT NULL
);
CREATE INDEX IF NOT EXISTS state_pending_saves_due ON state_pending_saves(status, next_attempt_at);
CREATE INDEX IF NOT EXISTS state_pending_saves_target ON state_pending_saves(target_kind, target_name);
