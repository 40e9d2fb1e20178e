-- Access control (decisions §2): api keys, stored only as SHA-256 of the raw key.
CREATE TABLE api_keys (
  user_id         TEXT PRIMARY KEY,
  key_hash        TEXT NOT NULL UNIQUE,
  description     TEXT NOT NULL DEFAULT '',
  scopes          TEXT NOT NULL,          -- JSON array of scope strings
  condition       TEXT,                   -- jq program or NULL
  owner_user_id   TEXT,
  disabled        INTEGER NOT NULL DEFAULT 0,
  key_fingerprint TEXT NOT NULL,
  created_at      TEXT NOT NULL,
  updated_at      TEXT NOT NULL
);
CREATE INDEX api_keys_owner ON api_keys(owner_user_id);

-- Failed bootstrap attempts per client IP, for the exponential backoff.
CREATE TABLE auth_throttle (
  client_ip     TEXT PRIMARY KEY,
  failures      INTEGER NOT NULL,
  blocked_until INTEGER NOT NULL          -- epoch ms
);

-- Stored text resources that TemplatedText `id` resolves.
CREATE TABLE text_resources (
  id         TEXT PRIMARY KEY,
  content    TEXT NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
