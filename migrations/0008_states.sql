-- The states area (issue 13). Declarations live in each state's StateStore object, which is their
-- truth (a re-declare's additive-only check and the records it guards are in the same object);
-- `states` is the listing the doors page through and the erasure and retention passes walk.
CREATE TABLE IF NOT EXISTS states (
  name TEXT PRIMARY KEY,
  view TEXT NOT NULL,
  updated_at TEXT NOT NULL
);

-- State templates are operator documents in their own right: D1 is their truth.
CREATE TABLE IF NOT EXISTS state_templates (
  name TEXT PRIMARY KEY,
  document TEXT NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL
);
