-- The rest of access control (issue 15; docs/access-control.md): roles, custom URL scopes,
-- public pins and the key policy history. Every table here is read by the caller's ONE key
-- statement (src/auth/key-store.ts: the role and the custom scopes' URLs are correlated
-- subqueries of that select), except public_routes, read only for requests without a key.

-- A key may name a role; the role bounds it (in addition to its scopes), re-read live.
ALTER TABLE api_keys ADD COLUMN role TEXT;
CREATE INDEX api_keys_role ON api_keys(role);

-- Roles: the current row; `grants` is a JSON object {tag: "none"|"read"|"write"}.
CREATE TABLE roles (
  name        TEXT PRIMARY KEY,
  description TEXT NOT NULL DEFAULT '',
  grants      TEXT NOT NULL,
  condition   TEXT,
  version     INTEGER NOT NULL,
  created_at  TEXT NOT NULL,
  updated_at  TEXT NOT NULL
);

-- Every role edit, append-only (kept after a delete, so a re-created name continues the count).
CREATE TABLE role_versions (
  name        TEXT NOT NULL,
  version     INTEGER NOT NULL,
  description TEXT NOT NULL,
  grants      TEXT NOT NULL,
  condition   TEXT,
  action      TEXT NOT NULL,           -- create | edit | grants | rollback | delete
  actor       TEXT,
  created_at  TEXT NOT NULL,
  PRIMARY KEY (name, version)
);

-- Custom URL scopes: a scope exists while it has at least one URL.
CREATE TABLE auth_scopes (
  scope_id   TEXT NOT NULL,
  url        TEXT NOT NULL,
  pattern    INTEGER NOT NULL DEFAULT 0,  -- 1: `*` is one segment, a final `**` any rest
  created_at TEXT NOT NULL,
  PRIMARY KEY (scope_id, url)
);
CREATE INDEX auth_scopes_url ON auth_scopes(url);

-- Doors pinned public: served without a credential. `path` is the route table's template.
CREATE TABLE public_routes (
  method     TEXT NOT NULL,            -- upper case
  path       TEXT NOT NULL,
  pinned_by  TEXT,
  created_at TEXT NOT NULL,
  PRIMARY KEY (method, path)
);

-- Every key policy change, append-only: mint, edit, scopes, revoke, rollback (a re-mint is a rollback with a new fingerprint).
CREATE TABLE api_key_versions (
  user_id         TEXT NOT NULL,
  version         INTEGER NOT NULL,
  description     TEXT NOT NULL,
  scopes          TEXT NOT NULL,
  condition       TEXT,
  role            TEXT,
  disabled        INTEGER NOT NULL,
  owner_user_id   TEXT,
  key_fingerprint TEXT NOT NULL,
  action          TEXT NOT NULL,
  actor           TEXT,
  created_at      TEXT NOT NULL,
  PRIMARY KEY (user_id, version)
);

-- Keys that predate the history get their current policy as version 1.
INSERT INTO api_key_versions (user_id, version, description, scopes, condition, role, disabled, owner_user_id, key_fingerprint, action, actor, created_at)
  SELECT user_id, 1, description, scopes, condition, NULL, disabled, owner_user_id, key_fingerprint, 'migrated', NULL, updated_at FROM api_keys;
