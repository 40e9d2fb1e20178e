/**
 * The token endpoint receives the client secret (every code exchange and refresh) and the refresh
 * tokens, so it is deployment configuration: `CONNECTORS_PROVIDERS` is env only (docs/connectors.md
 * "Providers"). An admin cannot point it elsewhere through the runtime overlay, and a row written there
 * behind the doors is ignored: the secrets still go to the env's endpoint only.
 */
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { admin, call as plainCall, uniq } from "../helpers/http";
import { CLIENT_SECRET, PROVIDERS, VARS, call, connect, declareTool, fakeProvider, runTool } from "./helpers";

const COLLECTOR_TOKEN_URL = "https://collector.example/token";
const redirected = JSON.stringify(PROVIDERS.map((p) => (p.oauth ? { ...p, oauth: { ...p.oauth, token_endpoint: COLLECTOR_TOKEN_URL } } : p)));

afterEach(async () => {
  await env.DB.prepare("DELETE FROM settings_overlay").run();
  expect((await plainCall("POST", "/api/config/reload", { key: await admin() })).status).toBe(200);
});

describe("the connector token endpoint cannot be moved at runtime", () => {
  it("the overlay refuses CONNECTORS_PROVIDERS (400, nothing written)", async () => {
    const r = await call("POST", "/api/config/env", { key: await admin(), body: { set: { CONNECTORS_PROVIDERS: redirected } } });
    expect(r.status).toBe(400);
    expect(r.body.error).not.toContain("collector");
    expect(await env.DB.prepare("SELECT COUNT(*) AS n FROM settings_overlay").first("n")).toBe(0);
  });

  it("a stored overlay row naming another token endpoint is ignored: the refresh token and the client secret go to the env's endpoint only", async () => {
    const fake = fakeProvider();
    // 30 s left, under the default 60 s skew: the first use refreshes.
    fake.next.code = { expires_in: 30 };
    const { id } = await connect(fake);
    const title = uniq("conn-tool");
    expect((await declareTool(title, { authorization: { connection: id } })).status).toBe(200);

    await env.DB.prepare("INSERT INTO settings_overlay (name, value, secret, updated_at) VALUES ('CONNECTORS_PROVIDERS', ?, 0, ?)")
      .bind(redirected, new Date().toISOString())
      .run();
    expect((await plainCall("POST", "/api/config/reload", { key: await admin() })).status).toBe(200);

    const r = await runTool(title);
    expect(r.status, r.text).toBe(200);
    // A new connection's code exchange too.
    await connect(fake);
    expect(fake.tokenCalls.map((t) => t.grant_type)).toEqual(["authorization_code", "refresh_token", "authorization_code"]);
    const hosts = fake.edge.map((c) => new URL(c.url).host);
    expect(hosts).not.toContain("collector.example");
    expect(
      fake.edge
        .filter((c) => c.body.includes("rt-") || (c.headers.authorization ?? "").includes(btoa(`acme-client-id:${CLIENT_SECRET}`)))
        .every((c) => c.url === "https://oauth.fake/token"),
    ).toBe(true);
  });

  it("a declaration cannot send the client secret elsewhere by reference: its env var is never referenceable, even named SECRET_* or allowlisted", async () => {
    fakeProvider();
    // A provider whose client secret lives in a SECRET_* variable.
    const providers = JSON.stringify(PROVIDERS.map((p) => (p.oauth ? { ...p, oauth: { ...p.oauth, client_secret_env: "SECRET_ACME_CLIENT" } } : p)));
    const vars = { ...VARS, CONNECTORS_PROVIDERS: providers, SECRET_ACME_CLIENT: CLIENT_SECRET };
    const r = await declareTool(uniq("steal"), { authorization: { env: "SECRET_ACME_CLIENT" } }, vars);
    expect(r.status).toBe(400);
    expect(r.text).toContain("headers.authorization");
    expect(r.text).not.toContain(CLIENT_SECRET);
    // Listing the credential's variable in the allowlist (env only) makes the settings invalid, naming the rule.
    const listed = await call("GET", "/api/tools", { key: await admin() }, { ...VARS, SECRET_REFERENCE_ALLOWLIST: "ACME_CLIENT_SECRET" });
    expect(listed.status).toBe(500);
    expect(listed.text).toContain("SECRET_REFERENCE_ALLOWLIST names a variable that is never referenceable");
    // And the allowlist cannot be widened at runtime.
    expect((await call("POST", "/api/config/env", { key: await admin(), body: { set: { SECRET_REFERENCE_ALLOWLIST: "ACME_CLIENT_SECRET" } } })).status).toBe(
      400,
    );
  });
});
