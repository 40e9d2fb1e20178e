import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { MARKETPLACE_LOCK_SCHEMA } from "../../durable-objects/marketplace-lock";
import { migrateSchema, schemaVersion } from "../../src/platform/persistence/object-sql";
import { uniq } from "../helpers/http";

describe("a MarketplaceLock written before versioned schemas", () => {
  it("adopts its lease table and keeps a held lease", async () => {
    const stub = env.MARKETPLACE_LOCK.get(env.MARKETPLACE_LOCK.idFromName(uniq("lock-schema")));
    const until = Date.now() + 60_000;
    const out = await runInDurableObject(stub, async (lock, state) => {
      const sql = state.storage.sql;
      // Back to what the object held before versions: the lease table, no version row.
      sql.exec("DROP TABLE lease");
      sql.exec("DROP TABLE _schema");
      sql.exec(
        "CREATE TABLE IF NOT EXISTS lease (id INTEGER PRIMARY KEY CHECK (id = 1), holder TEXT NOT NULL, operation TEXT NOT NULL, acquired_at INTEGER NOT NULL, expires_at INTEGER NOT NULL)",
      );
      sql.exec("INSERT INTO lease (id, holder, operation, acquired_at, expires_at) VALUES (1, 'h1', 'upgrade-all', 1, ?)", until);
      migrateSchema(sql, MARKETPLACE_LOCK_SCHEMA);
      return { lease: await lock.current(), version: schemaVersion(sql, MARKETPLACE_LOCK_SCHEMA.name) };
    });
    expect(out).toEqual({
      lease: { holder: "h1", operation: "upgrade-all", acquired_at: 1, expires_at: until },
      version: MARKETPLACE_LOCK_SCHEMA.steps.length,
    });
  });
});
