-- Identities (docs/access-control.md, "Identities"; src/auth/identity.ts): a user_id, once a key
-- held it, cannot pass to another holder's lineage. A revoke tombstones the user_id; only an admin
-- may mint it again, and that key starts a new lineage one generation further. What is keyed by
-- the user_id stays with the lineage that created it (matched by the key's created_at).

-- How many holders the user_id had before this key (0: the first). Read with the key, in the
-- same statement, so the doors that compose ids from it (api threads) need no extra read.
ALTER TABLE api_keys ADD COLUMN generation INTEGER NOT NULL DEFAULT 0;

-- Every user_id a revoked key held, with that key's generation. Kept for good (an id once used is
-- never free again); a re-issued key's revoke moves its row to the later generation.
CREATE TABLE user_id_tombstones (
  user_id    TEXT PRIMARY KEY,
  generation INTEGER NOT NULL,   -- the generation of the last key revoked under it
  revoked_at TEXT NOT NULL,      -- ISO-8601 UTC
  revoked_by TEXT                -- the revoking key's user_id (null: recorded by this migration)
);

-- Keys already minted again over a revoked user_id: each `revoke` version in the history ended an
-- earlier holder.
UPDATE api_keys SET generation = (SELECT COUNT(*) FROM api_key_versions v WHERE v.user_id = api_keys.user_id AND v.action = 'revoke');

-- Tombstones for what the history knows: every user_id with a revoke, and every user_id whose key
-- is gone without one.
INSERT INTO user_id_tombstones (user_id, generation, revoked_at, revoked_by)
  SELECT v.user_id, MAX(SUM(v.action = 'revoke') - 1, 0), COALESCE(MAX(CASE WHEN v.action = 'revoke' THEN v.created_at END), MAX(v.created_at)), NULL
  FROM api_key_versions v
  GROUP BY v.user_id
  HAVING SUM(v.action = 'revoke') > 0 OR NOT EXISTS (SELECT 1 FROM api_keys k WHERE k.user_id = v.user_id);

-- And for user_ids revoked before the history existed that still name data: connection owners,
-- tool run callers, hook, link and schedule creators, trace principals. Only strings of the
-- user_id grammar (a principal can also be `(public)`). One statement per table: D1 bounds how
-- many terms a compound SELECT may have.
INSERT OR IGNORE INTO user_id_tombstones (user_id, generation, revoked_at, revoked_by)
  SELECT DISTINCT owner_user_id, 0, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), NULL FROM connector_connections
  WHERE length(owner_user_id) BETWEEN 1 AND 128 AND owner_user_id NOT GLOB '*[^A-Za-z0-9_.@+:-]*'
    AND NOT EXISTS (SELECT 1 FROM api_keys k WHERE k.user_id = connector_connections.owner_user_id);
INSERT OR IGNORE INTO user_id_tombstones (user_id, generation, revoked_at, revoked_by)
  SELECT DISTINCT caller_user_id, 0, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), NULL FROM tool_runs
  WHERE length(caller_user_id) BETWEEN 1 AND 128 AND caller_user_id NOT GLOB '*[^A-Za-z0-9_.@+:-]*'
    AND NOT EXISTS (SELECT 1 FROM api_keys k WHERE k.user_id = tool_runs.caller_user_id);
INSERT OR IGNORE INTO user_id_tombstones (user_id, generation, revoked_at, revoked_by)
  SELECT DISTINCT created_by, 0, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), NULL FROM hooks
  WHERE length(created_by) BETWEEN 1 AND 128 AND created_by NOT GLOB '*[^A-Za-z0-9_.@+:-]*'
    AND NOT EXISTS (SELECT 1 FROM api_keys k WHERE k.user_id = hooks.created_by);
INSERT OR IGNORE INTO user_id_tombstones (user_id, generation, revoked_at, revoked_by)
  SELECT DISTINCT created_by, 0, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), NULL FROM hook_trigger_links
  WHERE length(created_by) BETWEEN 1 AND 128 AND created_by NOT GLOB '*[^A-Za-z0-9_.@+:-]*'
    AND NOT EXISTS (SELECT 1 FROM api_keys k WHERE k.user_id = hook_trigger_links.created_by);
INSERT OR IGNORE INTO user_id_tombstones (user_id, generation, revoked_at, revoked_by)
  SELECT DISTINCT created_by, 0, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), NULL FROM schedules
  WHERE length(created_by) BETWEEN 1 AND 128 AND created_by NOT GLOB '*[^A-Za-z0-9_.@+:-]*'
    AND NOT EXISTS (SELECT 1 FROM api_keys k WHERE k.user_id = schedules.created_by);
INSERT OR IGNORE INTO user_id_tombstones (user_id, generation, revoked_at, revoked_by)
  SELECT DISTINCT principal, 0, strftime('%Y-%m-%dT%H:%M:%fZ', 'now'), NULL FROM runs
  WHERE length(principal) BETWEEN 1 AND 128 AND principal NOT GLOB '*[^A-Za-z0-9_.@+:-]*' AND principal IS NOT NULL
    AND NOT EXISTS (SELECT 1 FROM api_keys k WHERE k.user_id = runs.principal);
