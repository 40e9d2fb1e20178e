-- Conversation bridge (spec §2.1, §4; decisions §5–§9). Threads' records live in their
-- ThreadObject; D1 holds routes and the indexes the admin read doors need.

CREATE TABLE routes (
  route_name                TEXT PRIMARY KEY,
  door                      TEXT NOT NULL CHECK (door IN ('api', 'channel')),
  target_kind               TEXT NOT NULL CHECK (target_kind IN ('agent', 'tool')),
  target_name               TEXT NOT NULL,
  execution_key             TEXT NOT NULL,
  execution_key_fingerprint TEXT NOT NULL,
  payload_expr              TEXT,          -- JSON of what the operator sent (string or TemplatedText)
  payload_program           TEXT,          -- the rendered, compiled-once jq program
  reply_expr                TEXT,
  reply_program             TEXT,
  initial_mode              TEXT NOT NULL CHECK (initial_mode IN ('agent', 'manual')),
  channel                   TEXT,
  our_identity              TEXT,
  callback_url              TEXT,
  -- Kept recoverable because every callback is HMAC-signed with it; never returned by reads.
  callback_secret           TEXT,
  turns_per_hour_override   INTEGER,
  created_at                TEXT NOT NULL,
  updated_at                TEXT NOT NULL
);
CREATE UNIQUE INDEX routes_channel_identity ON routes(channel, our_identity) WHERE channel IS NOT NULL;

-- One row per thread per route: the thread listing (newest activity first).
CREATE TABLE threads (
  route_name       TEXT NOT NULL,
  thread_id        TEXT NOT NULL,
  client_address   TEXT,
  last_activity_at TEXT NOT NULL,
  message_count    INTEGER NOT NULL,
  last_status      TEXT NOT NULL,
  PRIMARY KEY (route_name, thread_id)
);
CREATE INDEX threads_by_activity ON threads(route_name, last_activity_at DESC);

-- message_id → thread, for the single-record read door. Expires with its record.
CREATE TABLE message_index (
  message_id TEXT PRIMARY KEY,
  route_name TEXT NOT NULL,
  thread_id  TEXT NOT NULL,
  expires_at INTEGER                      -- epoch ms; NULL until the terminal transition
);
CREATE INDEX message_index_thread ON message_index(thread_id);

-- Failed deliveries across every route, for the admin failed listing.
CREATE TABLE failed_records (
  message_id TEXT PRIMARY KEY,
  route_name TEXT NOT NULL,
  thread_id  TEXT NOT NULL,
  failed_at  TEXT NOT NULL,
  expires_at INTEGER NOT NULL
);
CREATE INDEX failed_records_by_time ON failed_records(failed_at DESC);

-- Per-thread control-mode overrides (spec §3.2), reclaimed with their route or thread.
CREATE TABLE mode_overrides (
  thread_id  TEXT PRIMARY KEY,
  route_name TEXT NOT NULL,
  mode       TEXT NOT NULL CHECK (mode IN ('agent', 'manual')),
  expires_at INTEGER NOT NULL
);
CREATE INDEX mode_overrides_route ON mode_overrides(route_name);

-- Inbound dedupe: (namespace, key) → the original record, for inbound_dedupe_ttl_seconds.
-- namespace is `channel:<name>` for provider message ids, `event:<route>` for event ids.
CREATE TABLE inbound_dedupe (
  namespace  TEXT NOT NULL,
  dedupe_key TEXT NOT NULL,
  message_id TEXT NOT NULL,
  thread_id  TEXT NOT NULL,
  expires_at INTEGER NOT NULL,
  PRIMARY KEY (namespace, dedupe_key)
);

-- Provider ids of the chunks we sent, so a receipt finds its record's thread.
CREATE TABLE outbound_messages (
  channel             TEXT NOT NULL,
  provider_message_id TEXT NOT NULL,
  thread_id           TEXT NOT NULL,
  message_id          TEXT NOT NULL,
  expires_at          INTEGER NOT NULL,
  PRIMARY KEY (channel, provider_message_id)
);
