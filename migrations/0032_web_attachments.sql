-- Visitor attachments on the web chat (docs/channels.md, "Attachments"): per web identity, whether
-- visitors may upload, the largest upload and the content types allowed. Kept on the identity's
-- site row, so a change bumps the identity's access epoch through the row's triggers
-- (migrations/0026_access_changes.sql) and reaches every isolate with the route's cached read.

-- JSON {enabled, max_bytes, allowed_types}; null: the defaults (src/web-chat/attachments.ts).
ALTER TABLE web_sites ADD COLUMN attachments TEXT NULL;
