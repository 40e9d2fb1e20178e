-- A multichannel target's door read lists the target's manual routes (a linked person's thread
-- defaults to manual when any route it spans is manual, spec §3.2): an index keeps that lookup
-- off a table scan.
CREATE INDEX IF NOT EXISTS routes_by_target ON routes(target_kind, target_name, initial_mode);
