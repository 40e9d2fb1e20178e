import { describe, expect, it } from "vitest";
import { schemaVersion } from "../../src/platform/persistence/object-sql";
import { FEED_RING_SCHEMA, createRing, insertTrimmed, newestAsJsonArray } from "../../src/notifications/feed-ring";
import { inScratchObject } from "../helpers/object-schema";

describe("a NotificationFeed written before versioned schemas", () => {
  it("adopts its ring and keeps its entries", async () => {
    const out = await inScratchObject((sql) => {
      sql.exec("CREATE TABLE IF NOT EXISTS entries (seq INTEGER PRIMARY KEY, body TEXT NOT NULL)");
      sql.exec("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)");
      insertTrimmed(sql, JSON.stringify({ id: "n1" }), 10);
      createRing(sql);
      return { feed: newestAsJsonArray(sql, 10), version: schemaVersion(sql, FEED_RING_SCHEMA.name) };
    });
    expect(JSON.parse(out.feed)).toEqual([{ id: "n1" }]);
    expect(out.version).toBe(FEED_RING_SCHEMA.steps.length);
  });
});
