import { describe, expect, it } from "vitest";
import { schemaVersion } from "../../src/platform/persistence/object-sql";
import { LEDGER_SCHEMA, createLedger, findEntry, putEntry } from "../../src/shards/ledger";
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

});
