import { describe, expect, it } from "vitest";
import { schemaVersion } from "../../src/platform/persistence/object-sql";
import { HUB_RING_SCHEMA, lastEventId, migrateRing, trimmedThrough } from "../../src/interactions/hub-ring";
import { inScratchObject } from "../helpers/object-schema";

describe("interaction stores written before versioned schemas", () => {
  it("the InteractionHub's ring adopts its tables and keeps its positions", async () => {
    const out = await inScratchObject((sql) => {
      sql.exec("CREATE TABLE IF NOT EXISTS events (id INTEGER PRIMARY KEY, interaction_id TEXT NOT NULL, audience TEXT, event TEXT NOT NULL)");
      sql.exec("CREATE INDEX IF NOT EXISTS events_by_interaction ON events (interaction_id)");
      sql.exec("CREATE TABLE IF NOT EXISTS ring_meta (key TEXT PRIMARY KEY, value INTEGER NOT NULL)");
      sql.exec("INSERT INTO ring_meta (key, value) VALUES ('last_id', 7), ('trimmed_through', 3)");
      migrateRing(sql);
      return { last: lastEventId(sql), trimmed: trimmedThrough(sql), version: schemaVersion(sql, HUB_RING_SCHEMA.name) };
    });
    expect(out).toEqual({ last: 7, trimmed: 3, version: HUB_RING_SCHEMA.steps.length });
  });

});
