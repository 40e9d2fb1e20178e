-- Runtime settings (issue 15; docs/runtime-settings.md): an overlay of env settings stored in D1,
-- its generation, and named, versioned profiles of the overlay.

-- One row per overlaid setting. The Worker's effective env is its own env with these values on top
-- (a name without a row falls back to the env). `value` is the text the env would carry; for a
-- secret (secret = 1) it is the AES-256-GCM sealed form {"kid","iv","ct"} (JSON), never the text.
CREATE TABLE settings_overlay (
  name       TEXT PRIMARY KEY,
  value      TEXT NOT NULL,
  secret     INTEGER NOT NULL DEFAULT 0 CHECK (secret IN (0, 1)),
  updated_at TEXT NOT NULL
);

-- The overlay's generation: bumped in the same batch as every overlay write, profile apply and
-- reload. An isolate re-reads the overlay only when the generation it holds is not this one.
CREATE TABLE settings_generation (
  id         INTEGER PRIMARY KEY CHECK (id = 1),
  generation INTEGER NOT NULL,
  updated_at TEXT NOT NULL
);
INSERT INTO settings_generation (id, generation, updated_at) VALUES (1, 0, '1970-01-01T00:00:00.000Z');

-- Never holds a row. A write batch starts by inserting 1 here when the generation moved since the
-- writer validated its candidate overlay; the CHECK fails and D1 rolls the whole batch back, so
-- validation and write are one atomic step (two concurrent writers never combine into an overlay
-- nobody validated).
CREATE TABLE settings_write_guard (
  violation INTEGER CHECK (violation IS NULL)
);

-- Profiles: append-only versions of a named snapshot {description, env, secret_keys}. The newest
-- version is the profile; a rollback appends a copy of an older one. `env` holds the non-secret
-- values as a JSON object of name to text; `sealed` the secret ones, name to {"kid","iv","ct"}.
CREATE TABLE config_profiles (
  name        TEXT NOT NULL,
  version     INTEGER NOT NULL,
  description TEXT NOT NULL,
  env         TEXT NOT NULL,
  sealed      TEXT NOT NULL,
  secret_keys TEXT NOT NULL,
  created_at  TEXT NOT NULL,
  PRIMARY KEY (name, version)
);
