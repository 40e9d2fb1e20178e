/**
 * The connection header (docs/connectors.md "The tool header"): an HTTP tool's or HTTP agent's
 * header `{"connection": "<id>", "format"?}` is sent as a fresh access token, refreshed at the
 * token endpoint when it expires (or is about to), one refresh at a time per connection, with
 * failures as tool errors naming no secret, and no D1 statement on the token path. Declarations
 * check the reference; reads show it, never a token.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { connectionAccessToken } from "../../src/connectors/token-resolution";
import type { Env } from "../../src/platform/env";
import { edgeFetch } from "../../src/platform/net/edge-fetch";
import { dispatchTool } from "../../src/targets/dispatch";
import { admin, uniq } from "../helpers/http";
import { settingsOf, testContext } from "../targets/helpers";
import { AGENT_URL, CLIENT_SECRET, TOOL_URL, VARS, call, connect, declareTool, expectNoSecrets, fakeProvider, runTool } from "./helpers";

const HOUR_MS = 3_600_000;

/** Dispatches `tool` with the clock moved `aheadMs` into the future (the token's expiry judged then). */
function dispatchLater(tool: string, aheadMs: number) {
  const ctx = testContext({ vars: VARS, fetch: edgeFetch, now: () => new Date(Date.now() + aheadMs) });
  return dispatchTool(ctx, tool, {});
}

async function connectedTool(fake: ReturnType<typeof fakeProvider>, headers?: (id: string) => Record<string, unknown>) {
  const { id } = await connect(fake);
  const title = uniq("conn-tool");
  const declared = await declareTool(title, headers ? headers(id) : { authorization: { connection: id } });
  expect(declared.status, declared.text).toBe(200);
  return { id, title, declared };
}

describe("an HTTP tool with a connection header", () => {
  it("sends the connection's access token as a bearer token; the declaration shows only the reference", async () => {
    const fake = fakeProvider();
    const { id, title, declared } = await connectedTool(fake);
    expect(declared.body.data.tool.headers).toEqual({ authorization: { connection: id } });
    expectNoSecrets(declared.text, fake);

    const r = await runTool(title, { q: 1 });
    expect(r.status, r.text).toBe(200);
    expect(r.body.data).toEqual({ ok: true, authorization: "seen" });
    expect(fake.toolCalls).toHaveLength(1);
    expect(fake.toolCalls[0].headers.authorization).toBe(`Bearer ${fake.lastAccess()}`);
    expect(JSON.parse(fake.toolCalls[0].body)).toEqual({ q: 1 });
    // No refresh was needed: the code exchange is the only token request.
    expect(fake.tokenCalls.map((t) => t.grant_type)).toEqual(["authorization_code"]);
    expectNoSecrets(r.text, fake);
  });

  it("renders an optional format and keeps literal and env headers working beside it", async () => {
    const fake = fakeProvider();
    const { title, declared } = await connectedTool(fake, (id) => ({
      "x-token": { connection: id, format: "token {access_token}" },
      "x-static": "literal-value",
      "x-env": { env: "TOOL_SECRET" },
    }));
    expect(declared.body.data.tool.headers).toMatchObject({
      "x-token": { format: "token {access_token}" },
      "x-static": "<redacted>",
      "x-env": { env: "TOOL_SECRET" },
    });
    const r = await runTool(title, {}, { ...VARS, TOOL_SECRET: "env-secret-value" });
    expect(r.status, r.text).toBe(200);
    expect(fake.toolCalls[0].headers).toMatchObject({ "x-token": `token ${fake.lastAccess()}`, "x-static": "literal-value", "x-env": "env-secret-value" });
    expect(fake.toolCalls[0].headers.authorization).toBeUndefined();
  });

  it("refreshes a token that expires within the skew before sending it, then reuses the fresh one", async () => {
    const fake = fakeProvider();
    // 30 s left, under the default 60 s skew: the first use refreshes.
    fake.next.code = { expires_in: 30 };
    const { id, title } = await connectedTool(fake);
    const firstAccess = fake.lastAccess();
    const r = await runTool(title);
    expect(r.status, r.text).toBe(200);
    expect(fake.tokenCalls.map((t) => t.grant_type)).toEqual(["authorization_code", "refresh_token"]);
    const refresh = fake.tokenCalls[1].params;
    expect(refresh.get("refresh_token")).toMatch(/^rt-/);
    expect(fake.lastAccess()).not.toBe(firstAccess);
    expect(fake.toolCalls[0].headers.authorization).toBe(`Bearer ${fake.lastAccess()}`);

    const again = await runTool(title);
    expect(again.status).toBe(200);
    expect(fake.tokenCalls).toHaveLength(2);
    expect(fake.toolCalls[1].headers.authorization).toBe(`Bearer ${fake.lastAccess()}`);

    const view = await call("GET", `/api/connectors/connections/${id}`, { key: await admin() });
    expect(view.body.data.health).toMatchObject({ status: "connected", refreshable: true, last_error: null });
    expect(view.body.data.health.last_refreshed_at).not.toBeNull();
    expectNoSecrets(view.text, fake);
  });

  it("refreshes when the clock passes the expiry, and uses the provider's rotated refresh token next", async () => {
    const fake = fakeProvider();
    const { title } = await connectedTool(fake);
    expect((await dispatchLater(title, 0)).ok).toBe(true);
    expect(fake.tokenCalls).toHaveLength(1);

    const later = await dispatchLater(title, 2 * HOUR_MS);
    expect(later).toMatchObject({ ok: true });
    expect(fake.tokenCalls.map((t) => t.grant_type)).toEqual(["authorization_code", "refresh_token"]);
    expect(fake.toolCalls[1].headers.authorization).toBe(`Bearer ${fake.lastAccess()}`);
    const usedRefresh = fake.tokenCalls[1].params.get("refresh_token");

    // The refreshed token expires an hour after that refresh: four hours on, refresh again with the rotated refresh token.
    expect((await dispatchLater(title, 4 * HOUR_MS)).ok).toBe(true);
    expect(fake.tokenCalls).toHaveLength(3);
    expect(fake.tokenCalls[2].params.get("refresh_token")).not.toBe(usedRefresh);
    expect(fake.tokenCalls[2].params.get("refresh_token")).toMatch(/^rt-2-/);
  });

  it("serializes concurrent refreshes of one connection: one token request, every caller gets its token", async () => {
    const fake = fakeProvider();
    fake.next.code = { expires_in: 10 };
    const { title } = await connectedTool(fake);
    let release!: () => void;
    fake.next.refresh = { hold: new Promise<void>((r) => (release = r)) };
    const runs = [runTool(title), runTool(title), runTool(title)];
    // Wait until the first refresh is at the provider, give the others time to queue behind it, then let it answer.
    for (let i = 0; i < 200 && fake.tokenCalls.length < 2; i++) await new Promise((r) => setTimeout(r, 10));
    await new Promise((r) => setTimeout(r, 100));
    release();
    const answers = await Promise.all(runs);
    for (const a of answers) expect(a.status, a.text).toBe(200);
    expect(fake.tokenCalls.map((t) => t.grant_type)).toEqual(["authorization_code", "refresh_token"]);
    expect(fake.toolCalls.map((c) => c.headers.authorization)).toEqual(Array(3).fill(`Bearer ${fake.lastAccess()}`));
  });

  it("a refresh the provider refuses is a tool error naming no secret, and the connection asks to reconnect until it is", async () => {
    const fake = fakeProvider();
    fake.next.code = { expires_in: 5 };
    const { id, title } = await connectedTool(fake);
    fake.next.refresh = { fail: { status: 400, error: "invalid_grant" } };
    const r = await runTool(title);
    expect(r.status).toBe(500);
    expect(r.body.code).toBe("tool-error");
    expect(r.body.error).toContain("invalid_grant");
    expect(r.body.error).toContain("reconnect");
    expectNoSecrets(r.text, fake);
    expect(fake.toolCalls).toHaveLength(0);

    const view = await call("GET", `/api/connectors/connections/${id}`, { key: await admin() });
    expect(view.body.data.health).toMatchObject({
      status: "reconnect_required",
      last_error: "refresh failed: token endpoint answered HTTP 400 (invalid_grant)",
    });
    expect(view.text).not.toContain(CLIENT_SECRET);

    // No more token requests until a reconnect.
    const again = await runTool(title);
    expect(again.status).toBe(500);
    expect(fake.tokenCalls).toHaveLength(2);

    fake.next.refresh = {};
    const rec = await call("POST", `/api/connectors/connections/${id}/reconnect`, { key: await admin() });
    const { code, state } = fake.consent(rec.body.data.authorization_url);
    fake.next.code = {};
    expect((await call("POST", "/api/connectors/oauth/complete", { key: await admin(), body: { state, code } })).status).toBe(200);
    const ok = await runTool(title);
    expect(ok.status, ok.text).toBe(200);
    expect(fake.toolCalls[0].headers.authorization).toBe(`Bearer ${fake.lastAccess()}`);
  });

  it("a transient refresh failure fails this call and is retried on the next", async () => {
    const fake = fakeProvider();
    fake.next.code = { expires_in: 5 };
    const { id, title } = await connectedTool(fake);
    fake.next.refresh = { fail: { status: 503, error: "temporarily_unavailable" } };
    const r = await runTool(title);
    expect(r.status).toBe(500);
    expect(r.body.error).toBe("the connection's token could not be refreshed: token endpoint answered HTTP 503 (temporarily_unavailable)");
    expect((await call("GET", `/api/connectors/connections/${id}`, { key: await admin() })).body.data.health.status).toBe("connected");
    fake.next.refresh = {};
    expect((await runTool(title)).status).toBe(200);
    expect(fake.tokenCalls.map((t) => t.grant_type)).toEqual(["authorization_code", "refresh_token", "refresh_token"]);
  });

  it("an expired token without a refresh token asks to reconnect", async () => {
    const fake = fakeProvider();
    fake.next.code = { refresh: false };
    const { title } = await connectedTool(fake);
    expect((await dispatchLater(title, 0)).ok).toBe(true);
    const r = await dispatchLater(title, 2 * HOUR_MS);
    expect(r).toEqual({
      ok: false,
      kind: "tool_error",
      message:
        "the connection's access token expired and it has no refresh token; reconnect the connection (POST /api/connectors/connections/{connection_id}/reconnect)",
    });
    expect(fake.tokenCalls).toHaveLength(1);
  });

  it("a deleted connection fails the tool; an unset client secret fails the refresh naming the env var", async () => {
    const fake = fakeProvider();
    fake.next.code = { expires_in: 5 };
    const { id, title } = await connectedTool(fake);
    const noSecret = await runTool(title, {}, { ...VARS, ACME_CLIENT_SECRET: "" });
    expect(noSecret.status).toBe(500);
    expect(noSecret.body.error).toBe("the connection's token needs a refresh, but env var ACME_CLIENT_SECRET of its provider is not set");

    expect((await call("DELETE", `/api/connectors/connections/${id}`, { key: await admin() })).status).toBe(200);
    const r = await runTool(title);
    expect(r.status).toBe(500);
    expect(r.body).toEqual({ error: "connection not found", code: "tool-error" });
    expect(fake.toolCalls).toHaveLength(0);
  });

  it("resolving a token (and refreshing it) costs no D1 statement", async () => {
    const fake = fakeProvider();
    fake.next.code = { expires_in: 5 };
    const { id } = await connect(fake);
    const noD1 = new Proxy(
      {},
      {
        get() {
          throw new Error("D1 touched on the token path");
        },
      },
    );
    const ctx = { env: { ...env, ...VARS, DB: noD1 } as unknown as Env, settings: settingsOf(VARS), now: () => new Date() };
    const token = await connectionAccessToken(ctx, id, TOOL_URL);
    expect(fake.tokenCalls.map((t) => t.grant_type)).toEqual(["authorization_code", "refresh_token"]);
    expect(token).toBe(fake.lastAccess());
    expect(await connectionAccessToken(ctx, id, TOOL_URL)).toBe(token);
  });
});

describe("declaring a connection header", () => {
  it("refuses a connection that does not exist, naming the field", async () => {
    const r = await declareTool(uniq("conn-tool"), { authorization: { connection: crypto.randomUUID() } });
    expect(r.status).toBe(400);
    expect(r.body.error).toBe("invalid body: headers.authorization: no such connection");
  });

  it("refuses any connection reference without the connector store", async () => {
    const r = await declareTool(uniq("conn-tool"), { authorization: { connection: crypto.randomUUID() } }, { ...VARS, CONNECTORS_STORE_URL: "" });
    expect(r.status).toBe(400);
    expect(r.body.error).toContain("headers.authorization");
    expect(r.body.error).toContain("CONNECTORS_STORE_URL");
  });

  it.each([
    ["a connection id that is not one", { connection: "PLANTED_VALUE_x" }],
    ["a format without the placeholder", { connection: "00000000-0000-4000-8000-000000000000", format: "Bearer PLANTED_VALUE_x" }],
    ["a format with a line break", { connection: "00000000-0000-4000-8000-000000000000", format: "PLANTED_VALUE_x\r\n{access_token}" }],
    ["a connection and an env reference at once", { connection: "00000000-0000-4000-8000-000000000000", env: "TOOL_SECRET" }],
    ["an unknown field", { connection: "00000000-0000-4000-8000-000000000000", scheme: "PLANTED_VALUE_x" }],
  ])("refuses %s with a 400 naming the header", async (_what, value) => {
    const r = await declareTool(uniq("conn-tool"), { authorization: value });
    expect(r.status, r.text).toBe(400);
    expect(r.body.error).toContain("headers");
    expect(r.text).not.toContain("PLANTED_VALUE_x");
  });

  it("an HTTP agent's connection header is checked at declaration and sends the token at each run", async () => {
    const fake = fakeProvider();
    const key = await admin();
    const missing = await call("POST", "/api/agents-config/entries", {
      key,
      body: {
        title: uniq("conn-agent"),
        kind: "http",
        description: "x",
        config: { url: AGENT_URL, headers: { authorization: { connection: crypto.randomUUID() } } },
      },
    });
    expect(missing.status).toBe(400);
    expect(missing.body.error).toBe("invalid body: config.headers.authorization: no such connection");

    const { id } = await connect(fake);
    const title = uniq("conn-agent");
    const declared = await call("POST", "/api/agents-config/entries", {
      key,
      body: { title, kind: "http", description: "x", config: { url: AGENT_URL, headers: { authorization: { connection: id } } } },
    });
    expect(declared.status, declared.text).toBe(200);
    expect(declared.body.data.agent.config.headers).toEqual({ authorization: { connection: id } });
    const run = await call("POST", `/api/agents/${title}/runs`, { key, body: { user_message: "hello" } });
    expect(run.status).toBe(200);
    expect(run.text).toContain("the agent answered");
    expect(fake.toolCalls).toHaveLength(1);
    expect(fake.toolCalls[0].headers.authorization).toBe(`Bearer ${fake.lastAccess()}`);
    expectNoSecrets(run.text, fake);

    // A failed resolution is the run's error, naming no secret.
    await call("DELETE", `/api/connectors/connections/${id}`, { key });
    const failed = await call("POST", `/api/agents/${title}/runs`, { key, body: { user_message: "again" } });
    expect(failed.text).toContain("stream.error");
    expect(failed.text).toContain("connection not found");
    expect(fake.toolCalls).toHaveLength(1);
  });
});
