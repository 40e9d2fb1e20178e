-- Verified visitors (docs/channels.md, "Verified visitors"): per web identity, a secret the site's
-- own backend signs its logged-in user's id with, and whether anonymous visitors are refused. Kept
-- on the identity's site row, so switching `require_verified` bumps the identity's access epoch
-- through the row's triggers (migrations/0026_access_changes.sql) like the other site settings.

-- 1: a session needs a verified user; anonymous ones are refused, existing ones at their next use.
ALTER TABLE web_sites ADD COLUMN require_verified INTEGER NOT NULL DEFAULT 0;
-- The secret, sealed under SETTINGS_ENCRYPTION_KEY (AAD names the identity); null: none minted.
-- Shown once, when minted; never read back by any door.
ALTER TABLE web_sites ADD COLUMN verify_secret_sealed TEXT NULL;
-- ISO-8601 UTC of the secret's minting (a rotation mints a new one); null with no secret.
ALTER TABLE web_sites ADD COLUMN verify_secret_at TEXT NULL;
