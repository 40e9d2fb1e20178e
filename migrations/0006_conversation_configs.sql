-- Target conversation configs (spec §2.5, §4.8; decisions §12): per (target_kind, target_name),
-- operator-written, read when a route's target opts into persons (multichannel), its greeting or
-- its state binding. `config` is the whole frozen TargetConversationConfig as JSON.
CREATE TABLE conversation_configs (
  target_kind TEXT NOT NULL CHECK (target_kind IN ('agent', 'tool')),
  target_name TEXT NOT NULL,
  config      TEXT NOT NULL,
  updated_at  TEXT NOT NULL,
  PRIMARY KEY (target_kind, target_name)
);
