-- Extensions (issue 19; docs/extensions.md): per-tool extension combos and the preset rename guard.
--
-- A declared tool's combos (a JSON list of combos, each a list of extension names or
-- {name, config}) are kept by tool name. Built-in tools take none (they are wrapped in a preset
-- instead) and a preset keeps its combos in its version body (`extensions`), so neither has a row.
-- Rows are keyed by name, so a row outlives its tool until it is cleared (POST .../extensions
-- {"combos": []}); a tool declared again under that name gets the combos back.
CREATE TABLE tool_extensions (
  tool_name  TEXT PRIMARY KEY,
  combos     TEXT NOT NULL,
  updated_at TEXT NOT NULL
);

-- Never holds a row. A preset rename's batch starts by inserting 1 here when a reference it may not
-- move (or must not find) has appeared since the door checked; the CHECK fails and D1 rolls the
-- whole batch back, so the check and the rename are one atomic step.
CREATE TABLE preset_rename_guard (
  violation INTEGER CHECK (violation IS NULL)
);
