import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { BUCKET_DIRECTORY_SCHEMA } from "../../durable-objects/bucket-directory";
import { migrateSchema, schemaVersion } from "../../src/platform/persistence/object-sql";
import { uniq } from "../helpers/http";

describe("a BucketDirectory written before versioned schemas", () => {
  it("adopts its buckets table and keeps the live buckets", async () => {
    const stub = env.BUCKET_DIRECTORY.get(env.BUCKET_DIRECTORY.idFromName(uniq("dir-schema")));
    const out = await runInDurableObject(stub, async (dir, state) => {
      const sql = state.storage.sql;
      // Back to what the object held before versions: its table and index, no version row.
      sql.exec("DROP TABLE buckets");
      sql.exec("DROP TABLE _schema");
      sql.exec("CREATE TABLE IF NOT EXISTS buckets (key TEXT PRIMARY KEY, seq INTEGER NOT NULL)");
      sql.exec("CREATE INDEX IF NOT EXISTS buckets_seq ON buckets(seq)");
      sql.exec("INSERT INTO buckets (key, seq) VALUES ('a', 1), ('b', 2)");
      migrateSchema(sql, BUCKET_DIRECTORY_SCHEMA);
      return { size: await dir.size(), version: schemaVersion(sql, BUCKET_DIRECTORY_SCHEMA.name) };
    });
    expect(out).toEqual({ size: 2, version: BUCKET_DIRECTORY_SCHEMA.steps.length });
  });
});
