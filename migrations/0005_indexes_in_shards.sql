-- Issue 11: D1 leaves the per-message path. The message directory (message_id → thread), the
-- inbound dedupe claims and the outbound chunk ids now live in the IndexShard objects' ledgers;
-- the thread listing and the failed listing stay here, written in batches by those shards.
-- A thread's listing row says until when any of its records lives (NULL: some record has no end
-- yet), so route search skips threads whose records all expired without visiting them.
ALTER TABLE threads ADD COLUMN live_until INTEGER;
DROP INDEX IF EXISTS message_index_thread;
DROP TABLE IF EXISTS message_index;
DROP TABLE IF EXISTS inbound_dedupe;
DROP TABLE IF EXISTS outbound_messages;
CREATE INDEX IF NOT EXISTS failed_records_thread ON failed_records(thread_id);
