import { describe, expect, it } from "vitest";
import { schemaVersion } from "../../src/platform/persistence/object-sql";
import { LEDGER_SCHEMA, createLedger, findEntry, putEntry } from "../../src/shards/ledger";
import { RUN_LOG_SCHEMA, createRunLog, nextTraceExpiry } from "../../src/shards/run-log";
import { LISTING_BUFFER_SCHEMA, ListingBuffer, createListingBuffer } from "../../src/shards/listing-buffer";
import { inScratchObject } from "../helpers/object-schema";

describe("IndexShard stores written before versioned schemas", () => {
  it("the ledger adopts its table and keeps its entries", async () => {
    const out = await inScratchObject((sql) => {
      sql.exec(`CREATE TABLE IF NOT EXISTS ledger (namespace TEXT NOT NULL, key TEXT NOT NULL, message_id TEXT NOT NULL, thread_id TEXT NOT NULL,
        route_name TEXT, expires_at INTEGER, PRIMARY KEY (namespace, key))`);
      sql.exec("CREATE INDEX IF NOT EXISTS ledger_thread ON ledger(thread_id)");
      sql.exec("CREATE INDEX IF NOT EXISTS ledger_expiry ON ledger(expires_at) WHERE expires_at IS NOT NULL");
      putEntry(sql, { namespace: "dedupe", key: "k1" }, { message_id: "m1", thread_id: "t1", route_name: "r" }, null);
      createLedger(sql);
      createLedger(sql);
      return { entry: findEntry(sql, { namespace: "dedupe", key: "k1" }, Date.now()), version: schemaVersion(sql, LEDGER_SCHEMA.name) };
    });
    expect(out).toEqual({ entry: { message_id: "m1", thread_id: "t1", route_name: "r" }, version: LEDGER_SCHEMA.steps.length });
  });

  it("the run log adopts its table and keeps its traces", async () => {
    const out = await inScratchObject((sql) => {
      sql.exec(`CREATE TABLE IF NOT EXISTS run_traces (trace_id TEXT PRIMARY KEY, user_id TEXT, thread_id TEXT, started_at INTEGER NOT NULL,
        expires_at INTEGER NOT NULL, trace TEXT NOT NULL)`);
      sql.exec("CREATE INDEX IF NOT EXISTS run_traces_expiry ON run_traces(expires_at)");
      sql.exec("INSERT INTO run_traces (trace_id, user_id, thread_id, started_at, expires_at, trace) VALUES ('tr1', 'u', NULL, 1, 5000, '{}')");
      createRunLog(sql);
      return { expiry: nextTraceExpiry(sql), version: schemaVersion(sql, RUN_LOG_SCHEMA.name) };
    });
    expect(out).toEqual({ expiry: 5000, version: RUN_LOG_SCHEMA.steps.length });
  });

  it("the listing buffer adopts its tables and keeps what it buffered", async () => {
    const out = await inScratchObject((sql) => {
      sql.exec("CREATE TABLE IF NOT EXISTS pending_threads (thread_id TEXT PRIMARY KEY, row TEXT, version INTEGER NOT NULL, received_at INTEGER NOT NULL)");
      sql.exec(
        "CREATE TABLE IF NOT EXISTS pending_failed (message_id TEXT PRIMARY KEY, thread_id TEXT NOT NULL, row TEXT NOT NULL, version INTEGER NOT NULL, received_at INTEGER NOT NULL)",
      );
      sql.exec(`CREATE TABLE IF NOT EXISTS pending_runs (trace_id TEXT PRIMARY KEY, thread_id TEXT, user_id TEXT, started_at INTEGER NOT NULL,
        row TEXT NOT NULL, version INTEGER NOT NULL, received_at INTEGER NOT NULL)`);
      sql.exec("CREATE TABLE IF NOT EXISTS pending_run_drops (trace_id TEXT PRIMARY KEY, version INTEGER NOT NULL, received_at INTEGER NOT NULL)");
      sql.exec(`CREATE TABLE IF NOT EXISTS pending_counters (minute INTEGER NOT NULL, name TEXT NOT NULL, label TEXT NOT NULL, value INTEGER NOT NULL,
        received_at INTEGER NOT NULL, PRIMARY KEY (minute, name, label))`);
      sql.exec("INSERT INTO pending_threads (thread_id, row, version, received_at) VALUES ('t1', NULL, 1, 1)");
      createListingBuffer(sql);
      const buffer = new ListingBuffer({
        sql,
        db: () => {
          throw new Error("no flush in this test");
        },
        now: () => 2,
        policy: () => ({ batch: 100, lagMs: 60_000 }),
      });
      return { pending: buffer.pending(), version: schemaVersion(sql, LISTING_BUFFER_SCHEMA.name) };
    });
    expect(out).toEqual({ pending: 1, version: LISTING_BUFFER_SCHEMA.steps.length });
  });
});
