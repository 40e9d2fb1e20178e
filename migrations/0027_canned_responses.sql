-- Canned responses (docs/inbox.md, "Canned responses"): saved replies an operator inserts with
-- `/shortcode` in the console's reply box, rendered with mustache against the thread's context.
-- Keyed by the shortcode itself (lowercase [a-z0-9_-], 1 to 32 characters), so listing by
-- shortcode and a prefix filter read the primary key in order. updated_by is the user_id of the
-- key that wrote the current version. The doors cap the table at 500 rows.

CREATE TABLE canned_responses (
  shortcode  TEXT PRIMARY KEY,
  title      TEXT NOT NULL,
  template   TEXT NOT NULL,
  created_at TEXT NOT NULL,
  updated_at TEXT NOT NULL,
  updated_by TEXT
);
