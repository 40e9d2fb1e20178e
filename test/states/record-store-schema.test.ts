import { describe, expect, it } from "vitest";
import { schemaVersion } from "../../src/platform/persistence/object-sql";
import { STATE_SCHEMA, createStateTables, liveRecord, putRecord, subjectKey } from "../../src/states/record-store";
import { inScratchObject } from "../helpers/object-schema";

describe("a StateStore written before versioned schemas", () => {
  it("adopts its tables and keeps its records", async () => {
    const skey = subjectKey({ target_kind: "agent", target_name: "helper", kind: "user", key: "u1" });
    const out = await inScratchObject((sql) => {
      sql.exec("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)");
      sql.exec(`CREATE TABLE IF NOT EXISTS records (skey TEXT PRIMARY KEY, target_kind TEXT NOT NULL, target_name TEXT NOT NULL, kind TEXT NOT NULL, key TEXT NOT NULL,
        data TEXT NOT NULL, seq INTEGER NOT NULL, created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, expires_at INTEGER)`);
      sql.exec("CREATE TABLE IF NOT EXISTS aliases (skey TEXT PRIMARY KEY, canonical TEXT NOT NULL, kind TEXT NOT NULL, key TEXT NOT NULL)");
      sql.exec(
        "CREATE TABLE IF NOT EXISTS writes (skey TEXT NOT NULL, seq INTEGER NOT NULL, at INTEGER NOT NULL, origin TEXT NOT NULL, paths TEXT NOT NULL, PRIMARY KEY (skey, seq))",
      );
      sql.exec("CREATE TABLE IF NOT EXISTS op_ids (skey TEXT NOT NULL, op_id TEXT NOT NULL, at INTEGER NOT NULL, PRIMARY KEY (skey, op_id))");
      putRecord(sql, skey, { plan: "pro" }, 4, 1, null);
      createStateTables(sql);
      return { record: liveRecord(sql, skey, 2), version: schemaVersion(sql, STATE_SCHEMA.name) };
    });
    expect(out.record).toMatchObject({ skey, data: { plan: "pro" }, seq: 4 });
    expect(out.version).toBe(STATE_SCHEMA.steps.length);
  });
});
