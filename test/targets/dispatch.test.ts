import { describe, expect, it } from "vitest";
import { dispatchTool, toolExists } from "../../src/targets/dispatch";
import { admin, call, mintKey, uniq } from "../helpers/http";
import { testContext } from "./helpers";
import { fakeFetch, hangingFetch, json } from "../helpers/network";

const SECRET = "s3cr3t-token-value";

async function declareTool(extra: Record<string, unknown> = {}): Promise<string> {
  const title = uniq("tool");
  const r = await call("POST", "/api/tools-config/entries", {
    key: await admin(),
    body: { title, kind: "http", description: "test tool", url: "https://tools.example/run", ...extra },
  });
  if (r.status !== 200) throw new Error(`declare failed: ${r.status} ${JSON.stringify(r.body)}`);
  return title;
}

const greetSchema = {
  type: "object",
  properties: { name: { type: "string" }, times: { type: "integer", minimum: 1 } },
  required: ["name"],
};

describe("dispatching an HTTP tool", () => {
  it("POSTs the kwargs as JSON with env-resolved headers and answers the parsed JSON", async () => {
    const name = await declareTool({ headers: { authorization: { env: "TOOL_SECRET" }, "x-static": "static-value" }, input_schema: greetSchema });
    const edge = fakeFetch((_req, body) => json({ greeting: `hi ${JSON.parse(body).name}` }));
    const ctx = testContext({ fetch: edge.fetch, vars: { TOOL_SECRET: SECRET } });
    const r = await dispatchTool(ctx, name, { name: "ada", times: 2 }, {});
    expect(r).toEqual({ ok: true, value: { greeting: "hi ada" } });
    expect(edge.calls).toHaveLength(1);
    expect(edge.calls[0]).toMatchObject({
      url: "https://tools.example/run",
      method: "POST",
      json: { name: "ada", times: 2 },
      headers: { authorization: SECRET, "x-static": "static-value", "content-type": "application/json" },
    });
  });

  it("refuses kwargs that fail the input schema, naming the location and never the value", async () => {
    const name = await declareTool({ input_schema: greetSchema });
    const edge = fakeFetch(() => json({}));
    const ctx = testContext({ fetch: edge.fetch });
    const r = await dispatchTool(ctx, name, { name: 42, times: "SECRET-VALUE" }, {});
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.kind).toBe("invalid_kwargs");
    expect(r.message).toContain("/name: type");
    expect(r.message).toContain("/times: type");
    expect(r.message).not.toContain("SECRET-VALUE");
    expect(edge.calls).toHaveLength(0);

    const missing = await dispatchTool(ctx, name, {}, {});
    expect(missing).toMatchObject({ ok: false, kind: "invalid_kwargs" });
    expect(!missing.ok && missing.message).toContain('required property "name"');

    expect(await dispatchTool(ctx, name, ["not", "an", "object"], {})).toMatchObject({ ok: false, kind: "invalid_kwargs" });
  });

  it("times out at the tool's timeout_seconds, or at the caller's timeoutMs", async () => {
    const name = await declareTool({ timeout_seconds: 0.05 });
    const ctx = testContext({ fetch: hangingFetch().fetch });
    const r = await dispatchTool(ctx, name, {}, {});
    expect(r).toMatchObject({ ok: false, kind: "timeout" });
    expect(!r.ok && r.message).toContain("0.05s");

    const slowDefault = await declareTool();
    expect(await dispatchTool(ctx, slowDefault, {}, { timeoutMs: 20 })).toMatchObject({ ok: false, kind: "timeout" });
  });

  it("classifies a non-2xx answer without quoting the body or the secret", async () => {
    const name = await declareTool({ headers: { authorization: { env: "TOOL_SECRET" } } });
    const edge = fakeFetch((req) => json({ error: `bad token ${req.headers.get("authorization")}` }, 503));
    const r = await dispatchTool(testContext({ fetch: edge.fetch, vars: { TOOL_SECRET: SECRET } }), name, {}, {});
    expect(r).toEqual({ ok: false, kind: "http_status", message: "tool endpoint answered HTTP 503" });
  });

  it("does not follow redirects (a 3xx is a failed dispatch)", async () => {
    const name = await declareTool();
    const edge = fakeFetch(() => new Response(null, { status: 302, headers: { location: "https://elsewhere.example/" } }));
    const r = await dispatchTool(testContext({ fetch: edge.fetch }), name, {}, {});
    expect(r).toMatchObject({ ok: false, kind: "http_status" });
    expect(edge.calls).toHaveLength(1);
  });

  it("classifies a non-JSON answer", async () => {
    const name = await declareTool();
    const edge = fakeFetch(() => new Response("<html>oops</html>", { status: 200 }));
    const r = await dispatchTool(testContext({ fetch: edge.fetch }), name, {}, {});
    expect(r).toEqual({ ok: false, kind: "non_json", message: "tool endpoint answered a body that is not JSON" });
  });

  it("classifies a transport failure without the platform's error text", async () => {
    const name = await declareTool({ headers: { authorization: { env: "TOOL_SECRET" } } });
    const edge = fakeFetch(() => {
      throw new TypeError(`connect failed to https://tools.example/run with ${SECRET}`);
    });
    const r = await dispatchTool(testContext({ fetch: edge.fetch, vars: { TOOL_SECRET: SECRET } }), name, {}, {});
    expect(r).toEqual({ ok: false, kind: "transport", message: "tool endpoint could not be reached" });
  });

  it("fails with tool_error naming the env var when a referenced secret is unset", async () => {
    const name = await declareTool({ headers: { authorization: { env: "TOOL_SECRET_UNSET_IN_TESTS" } } });
    const edge = fakeFetch(() => json({}));
    const r = await dispatchTool(testContext({ fetch: edge.fetch }), name, {}, {});
    expect(r).toMatchObject({ ok: false, kind: "tool_error" });
    expect(!r.ok && r.message).toContain("TOOL_SECRET_UNSET_IN_TESTS");
    expect(edge.calls).toHaveLength(0);
  });

  it("answers unknown_tool for a name nobody registered", async () => {
    const ctx = testContext();
    expect(await dispatchTool(ctx, uniq("nope"), {}, {})).toEqual({ ok: false, kind: "unknown_tool", message: "tool is not registered" });
    expect(await toolExists(ctx, uniq("nope"))).toBe(false);
    expect(await toolExists(ctx, "echo")).toBe(true);
  });
});

describe("built-in tools", () => {
  it("echo returns its message argument and requires it", async () => {
    const ctx = testContext();
    expect(await dispatchTool(ctx, "echo", { message: "hello", sender: "x" }, {})).toEqual({ ok: true, value: "hello" });
    expect(await dispatchTool(ctx, "echo", { sender: "x" }, {})).toMatchObject({ ok: false, kind: "invalid_kwargs" });
  });

  it("set_conversation_mode acts on the calling turn's thread and fails outside a turn", async () => {
    const outside = await dispatchTool(testContext(), "set_conversation_mode", { mode: "manual" }, {});
    expect(outside).toMatchObject({ ok: false, kind: "tool_error" });

    const modes: string[] = [];
    const ctx = testContext({ turn: { thread_id: "bridge:r:x", route_name: "r", setMode: async (m) => void modes.push(m) } });
    expect(await dispatchTool(ctx, "set_conversation_mode", { mode: "manual" }, {})).toEqual({ ok: true, value: { mode: "manual" } });
    expect(modes).toEqual(["manual"]);
    expect(await dispatchTool(ctx, "set_conversation_mode", { mode: "sideways" }, {})).toMatchObject({ ok: false, kind: "invalid_kwargs" });
    expect(modes).toEqual(["manual"]);
  });
});

describe("dispatch as an execution key (re-read live at each call)", () => {
  const asKey = (k: { user_id: string; fingerprint: string }) => ({ asKey: { user_id: k.user_id, fingerprint: k.fingerprint } });

  it("runs when the key grants tool:<name>, tools:write or *", async () => {
    const ctx = testContext();
    for (const scopes of [["tool:echo"], ["tools:write"], ["tools"]]) {
      const k = await mintKey({ scopes });
      expect(await dispatchTool(ctx, "echo", { message: "m" }, asKey(k))).toEqual({ ok: true, value: "m" });
    }
  });

  it("denies a key lacking the grant (tools:read is not a run grant)", async () => {
    const ctx = testContext();
    for (const scopes of [["tool:other"], ["tools:read"], []]) {
      const k = await mintKey({ scopes });
      const r = await dispatchTool(ctx, "echo", { message: "m" }, asKey(k));
      expect(r).toMatchObject({ ok: false, kind: "denied" });
    }
  });

  it("denies a missing (revoked) key", async () => {
    const k = await mintKey({ scopes: ["tool:echo"] });
    await call("DELETE", `/api/auth/api-keys/${k.user_id}`, { key: await admin() });
    const r = await dispatchTool(testContext(), "echo", { message: "m" }, asKey(k));
    expect(r).toEqual({ ok: false, kind: "denied", message: "execution key no longer exists" });
  });

  it("denies a disabled key, then runs again once re-enabled", async () => {
    const ctx = testContext();
    const k = await mintKey({ scopes: ["tool:echo"] });
    await call("PUT", `/api/auth/api-keys/${k.user_id}`, { key: await admin(), body: { disabled: true } });
    expect(await dispatchTool(ctx, "echo", { message: "m" }, asKey(k))).toEqual({ ok: false, kind: "denied", message: "execution key is disabled" });
    await call("PUT", `/api/auth/api-keys/${k.user_id}`, { key: await admin(), body: { disabled: false } });
    expect(await dispatchTool(ctx, "echo", { message: "m" }, asKey(k))).toMatchObject({ ok: true });
  });

  it("denies a re-minted key (fingerprint mismatch)", async () => {
    const k = await mintKey({ scopes: ["tool:echo"] });
    await call("DELETE", `/api/auth/api-keys/${k.user_id}`, { key: await admin() });
    const again = await mintKey({ user_id: k.user_id, scopes: ["tool:echo"] });
    const ctx = testContext();
    const r = await dispatchTool(ctx, "echo", { message: "m" }, asKey(k));
    expect(r).toMatchObject({ ok: false, kind: "denied" });
    expect(!r.ok && r.message).toMatch(/re-minted/);
    expect(await dispatchTool(ctx, "echo", { message: "m" }, asKey(again))).toMatchObject({ ok: true });
  });

  it("denies an owned key whose owner is disabled or lacks the grant", async () => {
    const ctx = testContext();
    const owner = await mintKey({ scopes: ["tools"] });
    const owned = await mintKey({ scopes: ["tool:echo"], owner_user_id: owner.user_id });
    expect(await dispatchTool(ctx, "echo", { message: "m" }, asKey(owned))).toMatchObject({ ok: true });

    await call("PUT", `/api/auth/api-keys/${owner.user_id}`, { key: await admin(), body: { disabled: true } });
    expect(await dispatchTool(ctx, "echo", { message: "m" }, asKey(owned))).toEqual({
      ok: false,
      kind: "denied",
      message: "execution key's owner is missing or disabled",
    });

    await call("PUT", `/api/auth/api-keys/${owner.user_id}`, { key: await admin(), body: { disabled: false, scopes: ["tools:read"] } });
    expect(await dispatchTool(ctx, "echo", { message: "m" }, asKey(owned))).toMatchObject({ ok: false, kind: "denied" });
  });

  it("denies when the key's condition is not true at fire time", async () => {
    const k = await mintKey({ scopes: ["tool:echo"], condition: '.sub == "someone-else"' });
    expect(await dispatchTool(testContext(), "echo", { message: "m" }, asKey(k))).toEqual({
      ok: false,
      kind: "denied",
      message: "execution key's condition denied the turn",
    });
  });

  it("never reaches the endpoint when denied", async () => {
    const name = await declareTool();
    const edge = fakeFetch(() => json({}));
    const k = await mintKey({ scopes: ["tool:something-else"] });
    expect(await dispatchTool(testContext({ fetch: edge.fetch }), name, {}, asKey(k))).toMatchObject({ ok: false, kind: "denied" });
    expect(edge.calls).toHaveLength(0);
  });
});
