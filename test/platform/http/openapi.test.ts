import { describe, expect, it } from "vitest";
import { createApp } from "../../../src/app";
import { call } from "../../helpers/http";

describe("OpenAPI document", () => {
  it("lists every route the app registers, with version 14.0.2 and the x-api-key scheme", async () => {
    const r = await call("GET", "/api/openapi.json");
    expect(r.status).toBe(200);
    const doc = r.body;
    expect(doc.openapi).toBe("3.1.0");
    expect(doc.info.version).toBe("14.0.2");
    expect(doc.components.securitySchemes.apiKey).toEqual({ type: "apiKey", in: "header", name: "x-api-key" });
    const app = createApp();
    const missing: string[] = [];
    for (const route of app.routes) {
      if (route.method === "ALL") continue; // middleware
      const path = route.path.replace(/:([A-Za-z0-9_]+)/g, "{$1}");
      if (!doc.paths[path]?.[route.method.toLowerCase()]) missing.push(`${route.method} ${path}`);
    }
    expect(missing).toEqual([]);
  });

  it("marks public doors as needing no key and documents error statuses", async () => {
    const doc = (await call("GET", "/api/openapi.json")).body;
    expect(doc.paths["/api/health"].get.security).toEqual([]);
    const mint = doc.paths["/api/auth/api-keys"].post;
    expect(mint.requestBody.content["application/json"].schema.properties.user_id).toBeDefined();
    expect(Object.keys(mint.responses)).toEqual(expect.arrayContaining(["200", "400", "401", "403", "409"]));
  });
});
