/** The exported row schemas of the access-control tables read back every row the doors write. */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { ACCESS_CONTROL_TABLES } from "../../src/access-control/tables";
import { admin, call, mintKey } from "../helpers/http";

describe("access-control tables (for backup)", () => {
  it("every table named exists and each of its rows parses with the exported schema", async () => {
    const key = await admin();
    await call("POST", "/api/auth/roles", { key, body: { name: "tbl-role", grants: { tools: "read" }, condition: "true" } });
    await call("POST", "/api/auth/scopes", { key, body: { scope_id: "tbl-scope", url: "/api/tools/**", pattern: true } });
    await call("POST", "/api/auth/public-routes", { key, body: { method: "GET", path: "/api/tools" } });
    const k = await mintKey({ scopes: ["tbl-scope"] });
    await call("PUT", `/api/auth/api-keys/${k.user_id}`, { key, body: { role: "tbl-role" } });
    for (const [table, schema] of Object.entries(ACCESS_CONTROL_TABLES)) {
      const { results } = await env.DB.prepare(`SELECT * FROM ${table}`).all();
      expect(results.length, table).toBeGreaterThan(0);
      for (const row of results) expect(schema.safeParse(row).success, `${table}: ${JSON.stringify(row)}`).toBe(true);
    }
  });
});
