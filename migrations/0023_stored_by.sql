-- Stored references and who stored them (docs/security.md, "Confused deputy"). What one key
-- stores that later runs under another identity or another key's grants is bounded by the storing
-- key's own grants, checked when stored and again when it runs; the run-time check needs to know
-- whose grants. `stored_by` is the storing key's user_id.
--
-- - presets: who made the active version active (create, new version, rollback, rename); the
--   active version's base tool and state binding run bounded by that key.
-- - conversation_configs: who wrote the config; its state binding runs bounded by that key.
-- - sub_mcp_apps: who declared the app; each of its tools is served only while that key may run it.
-- - tool_extensions: who last set the tool's combos; they wrap the tool only while that key may run it.
--
-- Hooks, schedules and trigger links already record their writer (`created_by`).
--
-- Rows written before this migration get '(migrated)', which no key can have (the user_id grammar
-- has no parentheses). The run-time check lets such a row run as it did before the upgrade (no
-- writer can be known, and refusing them all would stop every existing deployment); saving the row
-- again records its writer. docs/security.md tells the operator how to find and re-save them.
ALTER TABLE presets ADD COLUMN stored_by TEXT NOT NULL DEFAULT '(migrated)';
ALTER TABLE conversation_configs ADD COLUMN stored_by TEXT NOT NULL DEFAULT '(migrated)';
ALTER TABLE sub_mcp_apps ADD COLUMN stored_by TEXT NOT NULL DEFAULT '(migrated)';
ALTER TABLE tool_extensions ADD COLUMN stored_by TEXT NOT NULL DEFAULT '(migrated)';
