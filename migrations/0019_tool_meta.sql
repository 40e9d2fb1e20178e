-- Tool metadata (issue 19; docs/tool-metadata.md): an overlay for people browsing tools. Folders
-- form a tree (parent_id null at the top); sibling names are unique. A tool row holds what was set
-- for one tool name (tags and badges as JSON arrays, hidden as 1/0/NULL = default, its folder);
-- a tool without a row shows the defaults. Rows are keyed by name, so a row can outlive its tool
-- (listed as not registered) until it is deleted.

CREATE TABLE tool_meta_folders (
  folder_id  TEXT PRIMARY KEY,
  name       TEXT NOT NULL,
  parent_id  TEXT,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
-- Sibling names are unique; the top level is the empty parent.
CREATE UNIQUE INDEX tool_meta_folders_sibling_name ON tool_meta_folders(COALESCE(parent_id, ''), name);
CREATE INDEX tool_meta_folders_by_parent ON tool_meta_folders(parent_id);

CREATE TABLE tool_meta_tools (
  tool_name  TEXT PRIMARY KEY,
  tags       TEXT NOT NULL DEFAULT '[]',
  badges     TEXT NOT NULL DEFAULT '[]',
  hidden     INTEGER,
  folder_id  TEXT,
  updated_at TEXT NOT NULL
);
CREATE INDEX tool_meta_tools_by_folder ON tool_meta_tools(folder_id);
