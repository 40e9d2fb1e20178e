-- Targets (decisions §4): declared HTTP tools, declared agents, presets with immutable
-- versions, and the `d1` checkpoint provider's tables.

-- HTTP tools declared with POST /api/tools-config/entries. `spec` is JSON
-- {url, method, headers, input_schema, timeout_seconds}; header values are literals or
-- {"env": "VAR"} references resolved at dispatch, never the secret itself.
CREATE TABLE tool_declarations (
  title       TEXT PRIMARY KEY,
  kind        TEXT NOT NULL,
  description TEXT NOT NULL DEFAULT '',
  spec        TEXT NOT NULL,
  created_at  TEXT NOT NULL,
  updated_at  TEXT NOT NULL
);

-- Agents declared with POST /api/agents-config/entries (`kind` llm | http; `config` JSON).
CREATE TABLE agent_declarations (
  title       TEXT PRIMARY KEY,
  kind        TEXT NOT NULL,
  description TEXT NOT NULL DEFAULT '',
  config      TEXT NOT NULL,
  created_at  TEXT NOT NULL,
  updated_at  TEXT NOT NULL
);

-- A preset is a live tool name; its versions are append-only and `current_version` is the
-- active one (rollback moves it without writing a version).
CREATE TABLE presets (
  name            TEXT PRIMARY KEY,
  current_version INTEGER NOT NULL,
  latest_version  INTEGER NOT NULL,
  created_at      TEXT NOT NULL,
  updated_at      TEXT NOT NULL
);

CREATE TABLE preset_versions (
  name       TEXT NOT NULL REFERENCES presets(name) ON DELETE CASCADE,
  version    INTEGER NOT NULL,
  body       TEXT NOT NULL,               -- JSON {base_tool, description, fixed_kwargs, input_schema, output_schema}
  tags       TEXT NOT NULL DEFAULT '[]',  -- JSON array of strings
  created_at TEXT NOT NULL,
  PRIMARY KEY (name, version)
);

-- `d1` checkpoint provider: one row per thread (its newest write, for the sweep) and one row
-- per message in order.
CREATE TABLE checkpoint_threads (
  thread_id  TEXT PRIMARY KEY,
  updated_at INTEGER NOT NULL             -- epoch ms of the newest append
);
CREATE INDEX checkpoint_threads_updated ON checkpoint_threads(updated_at);

CREATE TABLE checkpoint_messages (
  thread_id  TEXT NOT NULL,
  seq        INTEGER NOT NULL,
  message    TEXT NOT NULL,               -- JSON CheckpointMessage
  updated_at INTEGER NOT NULL,            -- epoch ms of the append that wrote it
  PRIMARY KEY (thread_id, seq)
);
