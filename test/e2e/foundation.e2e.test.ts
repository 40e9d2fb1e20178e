import { spawnSync } from "node:child_process";
import { mkdtempSync, readdirSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Validator } from "@seriousme/openapi-schema-validator";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BOOTSTRAP_TOKEN, type DevServer, ROOT, http, startDev } from "./harness";

let dev: DevServer;
let base: string;

beforeAll(async () => {
  dev = await startDev();
  base = dev.baseUrl;
});
afterAll(async () => {
  await dev?.close();
});

describe("foundation against a real wrangler dev", () => {
  let adminKey: string;

  it("serves health and a valid OpenAPI 3.1 document", async () => {
    expect(await http(base, "GET", "/api/health")).toMatchObject({ status: 200, body: { data: { status: "ok" } } });
    const doc = await http(base, "GET", "/api/openapi.json");
    expect(doc.status).toBe(200);
    expect(doc.body.openapi).toBe("3.1.0");
    expect(doc.body.info.version).toBe("14.0.2");
    expect(doc.body.components.securitySchemes.apiKey).toMatchObject({ type: "apiKey", in: "header", name: "x-api-key" });
    const result = await new Validator().validate(doc.body);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
  });

  it("bootstraps the first admin once, then 409; wrong tokens 403 then back off", async () => {
    const first = await http(base, "POST", "/api/keys/bootstrap", { body: { user_id: "root", bootstrap_token: BOOTSTRAP_TOKEN } });
    expect(first.status).toBe(200);
    adminKey = first.body.data.token;
    expect(adminKey).toMatch(/^sk-/);
    expect((await http(base, "POST", "/api/keys/bootstrap", { body: { user_id: "again", bootstrap_token: BOOTSTRAP_TOKEN } })).status).toBe(409);
    const wrong = await http(base, "POST", "/api/keys/bootstrap", { body: { user_id: "x", bootstrap_token: "wrong" } });
    expect(wrong).toMatchObject({ status: 403, body: { error: "Forbidden" } });
    const backoff = await http(base, "POST", "/api/keys/bootstrap", { body: { user_id: "x", bootstrap_token: "wrong" } });
    expect(backoff.status).toBe(429);
    expect(backoff.headers.get("retry-after")).toBeTruthy();
  });

  it("proves the 401/403 matrix with scoped and owned keys", async () => {
    const mint = async (body: Record<string, unknown>, key = adminKey) => http(base, "POST", "/api/auth/api-keys", { key, body });
    const scoped = await mint({ user_id: "svc-reader", scopes: ["resources:read", "auth"] });
    expect(scoped.status).toBe(200);
    const scopedKey = scoped.body.data.api_key;
    const owned = await mint({ user_id: "svc-child", scopes: ["resources:read"] }, scopedKey);
    expect(owned.status).toBe(200);
    const ownedKey = owned.body.data.api_key;
    const me = await http(base, "GET", "/api/auth/me", { key: ownedKey });
    expect(me.body.data).toMatchObject({ user_id: "svc-child", owner_user_id: "svc-reader", admin: false });

    // missing key, bad key
    expect(await http(base, "GET", "/api/resources/get?id=x")).toMatchObject({ status: 401, body: { error: "Authentication required" } });
    expect(await http(base, "GET", "/api/resources/get?id=x", { key: "sk-bogus" })).toMatchObject({ status: 401, body: { error: "Unauthorized" } });
    // scope too narrow
    expect((await http(base, "POST", "/api/storage/resources", { key: scopedKey, body: { content: "x" } })).status).toBe(403);
    // allowed read reaches the handler (404: no such resource)
    expect((await http(base, "GET", "/api/resources/get?id=x", { key: ownedKey })).status).toBe(404);
    // condition false and condition erroring
    const condFalse = (await mint({ user_id: "cond-false", scopes: ["resources"], condition: '.request.method == "POST"' })).body.data.api_key;
    const condError = (await mint({ user_id: "cond-error", scopes: ["resources"], condition: ".x.y.z | error" })).body.data.api_key;
    expect((await http(base, "GET", "/api/resources/get?id=x", { key: condFalse })).status).toBe(403);
    expect((await http(base, "GET", "/api/resources/get?id=x", { key: condError })).status).toBe(403);
    // admin-only door with a non-admin key: minting for another owner
    expect((await mint({ user_id: "foreign-child", scopes: [], owner_user_id: "cond-false" }, scopedKey)).status).toBe(403);
    // disabled owner → owned key 401
    expect((await http(base, "PUT", "/api/auth/api-keys/svc-reader", { key: adminKey, body: { disabled: true } })).status).toBe(200);
    expect((await http(base, "GET", "/api/resources/get?id=x", { key: ownedKey })).status).toBe(401);
    // revoked key → 401
    expect((await http(base, "DELETE", "/api/auth/api-keys/cond-false", { key: adminKey })).body).toEqual({ data: { user_id: "cond-false", revoked: true } });
    expect((await http(base, "GET", "/api/auth/me", { key: condFalse })).status).toBe(401);
  });

  it("answers the error contract for unknown paths and methods", async () => {
    expect(await http(base, "GET", "/api/nope")).toMatchObject({ status: 404, body: { error: "not found" } });
    expect((await http(base, "PATCH", "/api/health")).status).toBe(405);
  });
});

describe("deploy bundle", () => {
  it("wrangler deploy --dry-run bundles the Worker with jq's wasm as a module", () => {
    const out = mkdtempSync(join(tmpdir(), "bridge-dry-run-"));
    const r = spawnSync(process.execPath, [join(ROOT, "node_modules/wrangler/bin/wrangler.js"), "deploy", "--dry-run", "--outdir", out], {
      cwd: ROOT,
      env: { ...process.env, CI: "true", WRANGLER_SEND_METRICS: "false" },
      encoding: "utf8",
      timeout: 120_000,
    });
    expect(r.status, r.stderr).toBe(0);
    const files = readdirSync(out);
    rmSync(out, { recursive: true, force: true });
    expect(files).toContain("index.js");
    expect(files.some((f) => f.endsWith(".wasm"))).toBe(true);
  });
});
