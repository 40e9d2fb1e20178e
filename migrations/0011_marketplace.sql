-- Marketplace (issue 14; docs/marketplace.md): which plugins are installed, at which version, and
-- which declarations each one owns. The declarations themselves are ordinary rows of
-- tool_declarations, agent_declarations and presets (0002), written in the same D1 batch.

CREATE TABLE marketplace_installs (
  ref          TEXT PRIMARY KEY,          -- lowercase namespace/name
  namespace    TEXT NOT NULL,             -- as the registry spells it
  name         TEXT NOT NULL,
  version      TEXT NOT NULL,             -- the installed SemVer version, as the registry spells it
  installed_at TEXT NOT NULL,
  updated_at   TEXT NOT NULL
);

-- One row per declaration a plugin owns; a (kind, name) has at most one owner. `kind` is checked
-- in code (http_tool, agent, preset), so a later kind needs no table rebuild.
CREATE TABLE marketplace_owned (
  kind TEXT NOT NULL,
  name TEXT NOT NULL,
  ref  TEXT NOT NULL,
  PRIMARY KEY (kind, name)
);
CREATE INDEX marketplace_owned_by_ref ON marketplace_owned(ref);

-- Never holds a row. An install's batch starts by inserting 1 here when a declaration it would
-- write has appeared meanwhile without being the plugin's; the CHECK fails and D1 rolls the whole
-- batch back, so the collision check and the writes are one atomic step.
CREATE TABLE marketplace_guard (
  violation INTEGER CHECK (violation IS NULL)
);
