import { describe, expect, it } from "vitest";
import { schemaVersion } from "../../src/platform/persistence/object-sql";
import { HUB_STORE_SCHEMA, createHubStore, keepTicketRow, spendTicketRow } from "../../src/console/hub-store";
import { inScratchObject } from "../helpers/object-schema";

describe("a ConsoleHub written before versioned schemas", () => {
  it("adopts its tickets table and keeps its tickets", async () => {
    const out = await inScratchObject((sql) => {
      sql.exec("CREATE TABLE IF NOT EXISTS tickets (hash TEXT PRIMARY KEY, user_id TEXT NOT NULL, expires_at INTEGER NOT NULL)");
      keepTicketRow(sql, "h1", "root", 10_000, 1);
      createHubStore(sql);
      return { user: spendTicketRow(sql, "h1", 2), version: schemaVersion(sql, HUB_STORE_SCHEMA.name) };
    });
    expect(out).toEqual({ user: "root", version: HUB_STORE_SCHEMA.steps.length });
  });
});
