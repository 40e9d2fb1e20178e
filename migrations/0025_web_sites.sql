-- Web sites and entry gates (docs/channels.md, "Web sites and entry gates"): what an operator sets
-- per web identity (the `our_identity` of a route on the `web` channel), apart from the route
-- itself, so a route can be replaced without losing its site's settings and the page door reads
-- both in one batch.

-- One row per identity an operator has configured; an identity without a row has no allowed
-- origins (only the service's own page may talk to it) and no gate.
CREATE TABLE web_sites (
  identity        TEXT PRIMARY KEY,
  allowed_origins TEXT NOT NULL,              -- JSON array of normalized origins (https://host[:port])
  gate_enabled    INTEGER NOT NULL DEFAULT 0, -- 1: a new session needs a live entry code
  updated_at      TEXT NOT NULL,              -- ISO-8601 UTC
  updated_by      TEXT NOT NULL               -- the writing key's user_id
);

-- Entry codes of a gated identity. The code itself is shown once, when created; only its SHA-256
-- (hex) is kept, and a presented code is found by its hash. A revoked code stays listed.
CREATE TABLE web_gate_codes (
  code_id    TEXT PRIMARY KEY,
  identity   TEXT NOT NULL,
  label      TEXT NOT NULL,
  code_hash  TEXT NOT NULL UNIQUE,
  expires_at TEXT NULL,   -- ISO-8601 UTC; null: until revoked
  revoked_at TEXT NULL,   -- ISO-8601 UTC; null: not revoked
  created_at TEXT NOT NULL,
  created_by TEXT NOT NULL
);
CREATE INDEX web_gate_codes_by_identity ON web_gate_codes (identity, created_at);
