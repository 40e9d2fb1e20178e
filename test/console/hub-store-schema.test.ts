import { describe, expect, it } from "vitest";
import { schemaVersion } from "../../src/platform/persistence/object-sql";
import { HUB_STORE_SCHEMA, createHubStore, keepTicketRow, spendTicketRow } from "../../src/console/hub-store";
import { inScratchObject } from "../helpers/object-schema";

describe("a ConsoleHub written before versioned schemas", () => {
  it("adopts its tickets table; a ticket kept without its key's hash is refused", async () => {
    const out = await inScratchObject((sql) => {
      sql.exec("CREATE TABLE IF NOT EXISTS tickets (hash TEXT PRIMARY KEY, user_id TEXT NOT NULL, expires_at INTEGER NOT NULL)");
      sql.exec("INSERT INTO tickets (hash, user_id, expires_at) VALUES ('h1', 'root', 10000)");
      createHubStore(sql);
      const legacy = spendTicketRow(sql, "h1", 2);
      keepTicketRow(sql, "h2", { user_id: "root", key_hash: "k".repeat(64), route_name: "r" }, 10_000, 1);
      return { legacy, fresh: spendTicketRow(sql, "h2", 2), version: schemaVersion(sql, HUB_STORE_SCHEMA.name) };
    });
    expect(out).toEqual({ legacy: null, fresh: { user_id: "root", key_hash: "k".repeat(64), route_name: "r" }, version: HUB_STORE_SCHEMA.steps.length });
  });
});
