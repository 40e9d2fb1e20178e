import { describe, expect, it } from "vitest";
import { schemaVersion } from "../../src/platform/persistence/object-sql";
import { TOKEN_SCHEMA, createTokenTables, readTokens } from "../../src/connectors/token-store";
import { inScratchObject } from "../helpers/object-schema";

describe("a ConnectorConnection written before versioned schemas", () => {
  it("adopts its tokens table and keeps the sealed tokens", async () => {
    const out = await inScratchObject((sql) => {
      sql.exec(`CREATE TABLE IF NOT EXISTS tokens (one INTEGER PRIMARY KEY CHECK (one = 1), connection_id TEXT NOT NULL, provider_id TEXT NOT NULL,
        sealed TEXT NOT NULL, expires_at INTEGER, refreshable INTEGER NOT NULL, granted_scope TEXT, status TEXT NOT NULL, last_error TEXT,
        last_refreshed_at INTEGER, generation INTEGER NOT NULL, updated_at INTEGER NOT NULL)`);
      sql.exec(
        `INSERT INTO tokens (one, connection_id, provider_id, sealed, expires_at, refreshable, granted_scope, status, last_error, last_refreshed_at, generation, updated_at)
         VALUES (1, 'c1', 'p1', ?, NULL, 1, 'read', 'ok', NULL, NULL, 3, 1)`,
        JSON.stringify({ kid: "k", iv: "i", ct: "c" }),
      );
      createTokenTables(sql);
      return { row: readTokens(sql), version: schemaVersion(sql, TOKEN_SCHEMA.name) };
    });
    expect(out.row).toMatchObject({ connection_id: "c1", provider_id: "p1", sealed: { kid: "k", iv: "i", ct: "c" }, generation: 3, status: "ok" });
    expect(out.version).toBe(TOKEN_SCHEMA.steps.length);
  });
});
