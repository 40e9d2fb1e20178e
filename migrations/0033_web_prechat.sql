-- The pre-chat form (docs/channels.md, "Pre-chat form"): per web identity, the fields a visitor
-- fills in before their first message. Kept on the identity's site row, so writing it bumps the
-- identity's access epoch through the row's triggers (migrations/0026_access_changes.sql) and it
-- reaches every isolate with the other site settings.

-- JSON `{fields: [{name, label, type, required, options?, max_length?}]}`; null: no form.
ALTER TABLE web_sites ADD COLUMN prechat TEXT NULL;
