import { describe, expect, it } from "vitest";
import { admin, call, fetchWithEnv } from "../../helpers/http";

describe("HTTP contract (decisions §1)", () => {
  it("serves a public health check", async () => {
    const r = await call("GET", "/api/health");
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ data: { status: "ok" } });
  });

  it("answers 404 {error} for an unknown /api path", async () => {
    const r = await call("GET", "/api/no-such-thing");
    expect(r.status).toBe(404);
    expect(r.body).toEqual({ error: "not found" });
  });

  it("answers 405 with Allow for a known path and wrong method", async () => {
    const r = await call("DELETE", "/api/health");
    expect(r.status).toBe(405);
    expect(r.headers.get("allow")).toContain("GET");
    expect(r.body).toEqual({ error: "method not allowed" });
  });

  it("answers 400 for malformed JSON without echoing it", async () => {
    const key = await admin();
    const r = await call("POST", "/api/auth/api-keys", { key, rawBody: '{"user_id": "secret-value', headers: { "content-type": "application/json" } });
    expect(r.status).toBe(400);
    expect(r.body.error).toBe("malformed JSON body");
    expect(JSON.stringify(r.body)).not.toContain("secret-value");
  });

  it("names the invalid field and never echoes the value", async () => {
    const key = await admin();
    const r = await call("POST", "/api/auth/api-keys", { key, body: { user_id: "bad id with spaces SECRET", scopes: ["nope:nope"] } });
    expect(r.status).toBe(400);
    expect(r.body.error).toMatch(/user_id/);
    expect(r.body.error).toMatch(/scopes\.0/);
    expect(r.body.error).not.toContain("SECRET");
    expect(r.body.error).not.toContain("nope:nope");
    expect(Object.keys(r.body)).toEqual(["error"]);
  });

  it("answers 413 past 1 MiB", async () => {
    const key = await admin();
    const big = JSON.stringify({ content: "x".repeat(1024 * 1024 + 10) });
    const r = await call("POST", "/api/storage/resources", { key, rawBody: big, headers: { "content-type": "application/json" } });
    expect(r.status).toBe(413);
    expect(typeof r.body.error).toBe("string");
  });
});

describe("error rendering and settings gate", () => {
  it("renders an unexpected fault as 500 with an error_id and no detail", async () => {
    const { env } = await import("cloudflare:workers");
    const brokenDb = {
      prepare() {
        throw new Error("SECRET internal detail");
      },
    };
    const res = await fetchWithEnv({ ...env, DB: brokenDb }, new Request("https://bridge.test/api/auth/me", { headers: { "x-api-key": "sk-whatever" } }));
    expect(res.status).toBe(500);
    const body = (await res.json()) as Record<string, string>;
    expect(body.error).toBe("Internal Server Error");
    expect(body.error_id).toMatch(/^[0-9a-f]{32}$/);
    expect(JSON.stringify(body)).not.toContain("SECRET");
  });

  it("answers 500 naming the env vars on every request when settings are invalid", async () => {
    const { env } = await import("cloudflare:workers");
    const res = await fetchWithEnv({ ...env, CONVERSATIONS_INTAKE_CLAIM_REFRESH_SECONDS: "500" }, new Request("https://bridge.test/api/health"));
    expect(res.status).toBe(500);
    const body = (await res.json()) as Record<string, string>;
    expect(body.error).toContain("CONVERSATIONS_INTAKE_CLAIM_REFRESH_SECONDS");
    expect(body.error).not.toContain("500");
  });
});
