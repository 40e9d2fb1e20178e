import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createRoute, echoKey, echoRoute, send } from "../helpers/bridge";
import { admin, call, expectNotConfigured, mintKey, uniq } from "../helpers/http";
import { ledgerRows, listingCaughtUp } from "../helpers/listing";

const name = () => uniq("route").toLowerCase();

async function post(route: string, body: Record<string, unknown>, key?: string) {
  return call("POST", `/api/conversations/${route}`, { key: key ?? (await admin()), body });
}

describe("route create rules (spec §4.1, decisions §5)", () => {
  it("creates, returns the secret once, and withholds it from get and list", async () => {
    const k = await echoKey();
    const n = name();
    const r = await post(n, { door: "api", target_kind: "tool", target_name: "echo", execution_key: k.user_id, callback_url: "https://hooks.example.com/x" });
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ created: true, route_name: n, callback_secret: expect.stringMatching(/^[A-Za-z0-9_-]{43}$/) });
    expect(r.body.data.route).toMatchObject({ execution_key_fingerprint: k.fingerprint, initial_mode: "agent", target_kind: "tool" });
    expect(r.body.data.route).not.toHaveProperty("callback_secret");
    const got = await call("GET", `/api/conversations/${n}`, { key: await admin() });
    expect(got.status).toBe(200);
    expect(got.body.data).not.toHaveProperty("callback_secret");
    expect(JSON.stringify(got.body)).not.toContain(r.body.data.callback_secret);
    const list = await call("GET", "/api/conversations", { key: await admin() });
    expect(list.body.data.items.some((x: any) => x.route_name === n)).toBe(true);
    expect(JSON.stringify(list.body)).not.toContain(r.body.data.callback_secret);
    const again = await post(n, {
      door: "api",
      target_kind: "tool",
      target_name: "echo",
      execution_key: k.user_id,
      callback_url: "https://hooks.example.com/x",
    });
    expect(again.body.data.created).toBe(false);
    expect(again.body.data.callback_secret).not.toBe(r.body.data.callback_secret);
    const noCallback = await post(n, { door: "api", target_kind: "tool", target_name: "echo", execution_key: k.user_id });
    expect(noCallback.body.data.callback_secret).toBeNull();
  });

  it("defaults target_kind to agent and initial_mode to agent", async () => {
    const k = await echoKey();
    const n = name();
    // A tool target proves the mode default without depending on a built-in agent.
    const r = await post(n, { door: "api", target_kind: "tool", target_name: "echo", execution_key: k.user_id });
    expect(r.body.data.route.initial_mode).toBe("agent");
  });

  it.each([
    ["an invalid route name", "Bad_Name", {}],
    ["a reserved route name", "messages", {}],
  ])("refuses %s with 400", async (_what, routeName, extra) => {
    const k = await echoKey();
    const r = await post(routeName, { door: "api", target_kind: "tool", target_name: "echo", execution_key: k.user_id, ...extra });
    expect(r.status).toBe(400);
  });

  it.each([
    ["a body route_name that differs from the path", { route_name: "other" }, "route_name"],
    ["an unknown field", { colour: "blue" }, "colour"],
    ["an invalid target_kind", { target_kind: "robot" }, "target_kind"],
    ["a blank target_name", { target_name: "  " }, "target_name"],
    ["an http:// callback_url", { callback_url: "http://hooks.example.com" }, "callback_url"],
    ["a relative callback_url", { callback_url: "/hook" }, "callback_url"],
    ["a callback_url with userinfo", { callback_url: "https://u:p@hooks.example.com" }, "callback_url"],
    ["channel fields on an api route", { channel: "twilio" }, "channel"],
    ["an invalid initial_mode", { initial_mode: "auto" }, "initial_mode"],
    ["a non-positive turns_per_hour_override", { turns_per_hour_override: 0 }, "turns_per_hour_override"],
  ])("refuses %s with 400 naming the field", async (_what, extra, field) => {
    const k = await echoKey();
    const r = await post(name(), { door: "api", target_kind: "tool", target_name: "echo", execution_key: k.user_id, ...extra });
    expect(r.status).toBe(400);
    expect(r.body.error).toContain(field);
    expect(r.body.error).not.toContain("hooks.example.com");
  });

  it("refuses payload_expr/reply_expr on an agent target", async () => {
    const k = await echoKey();
    const r = await post(name(), { door: "api", target_kind: "agent", target_name: "echo", execution_key: k.user_id, payload_expr: "{message}" });
    expect(r.status).toBe(400);
    expect(r.body.error).toContain("payload_expr");
  });

  it("a channel route needs channel and our_identity and no callback_url", async () => {
    const k = await echoKey();
    const base = { door: "channel", target_kind: "tool", target_name: "echo", execution_key: k.user_id };
    expect((await post(name(), { ...base, channel: "twilio" })).status).toBe(400);
    expect((await post(name(), { ...base, our_identity: "+1555" })).status).toBe(400);
    expect((await post(name(), { ...base, channel: "twilio", our_identity: "+1555", callback_url: "https://x.example" })).status).toBe(400);
    expect((await post(name(), { ...base, channel: "tw:ilio", our_identity: "+1555" })).status).toBe(400);
    const ok = await post(name(), { ...base, channel: "twilio", identity: ` +1555${Date.now()} ` });
    expect(ok.status).toBe(200);
    expect(ok.body.data.route.our_identity).toBe(`+1555${ok.body.data.route.our_identity.slice(5)}`.trim());
    expect(ok.body.data.callback_secret).toBeNull();
  });

  it("404 for a target that does not exist", async () => {
    const k = await echoKey();
    const r = await post(name(), { door: "api", target_kind: "tool", target_name: "no-such-tool", execution_key: k.user_id });
    expect(r.status).toBe(404);
  });

  it("400 for jq that does not compile; TemplatedText exprs render then compile", async () => {
    const k = await echoKey();
    const bad = await post(name(), { door: "api", target_kind: "tool", target_name: "echo", execution_key: k.user_id, payload_expr: "{message: ." });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toContain("payload_expr");
    const badReply = await post(name(), { door: "api", target_kind: "tool", target_name: "echo", execution_key: k.user_id, reply_expr: "][" });
    expect(badReply.status).toBe(400);
    expect(badReply.body.error).toContain("reply_expr");
    const tt = await post(name(), {
      door: "api",
      target_kind: "tool",
      target_name: "echo",
      execution_key: k.user_id,
      payload_expr: { content: '{message: ("{{prefix}}" + .message)}', kwargs: { prefix: "> " } },
    });
    expect(tt.status).toBe(200);
    const answer = await send(tt.body.data.route_name, { external_user_id: "u", text: "hi", wait_seconds: 5 });
    expect(answer.body.data).toMatchObject({ status: "answered", answer: "> hi" });
    const missing = await post(name(), {
      door: "api",
      target_kind: "tool",
      target_name: "echo",
      execution_key: k.user_id,
      payload_expr: { id: "no-such-resource" },
    });
    expect(missing.status).toBe(400);
  });

  it("(channel, our_identity) must be unclaimed; a route may re-claim its own", async () => {
    const k = await echoKey();
    const identity = `+1999${Date.now()}`;
    const a = name();
    const body = { door: "channel", target_kind: "tool", target_name: "echo", execution_key: k.user_id, channel: "twilio", our_identity: identity };
    expect((await post(a, body)).status).toBe(200);
    expect((await post(a, body)).status).toBe(200);
    const b = await post(name(), body);
    expect(b.status).toBe(400);
    expect(b.body.error).toContain("claimed");
  });

  it("pass-role: a non-admin binding a foreign key gets 403 and the existing row is untouched", async () => {
    const writer = await mintKey({ scopes: ["conversations", "tools", "auth"] });
    const foreign = await echoKey();
    const n = name();
    const created = await post(n, { door: "api", target_kind: "tool", target_name: "echo", execution_key: writer.user_id }, writer.key);
    expect(created.status).toBe(200);
    const refused = await post(
      n,
      { door: "api", target_kind: "tool", target_name: "echo", execution_key: foreign.user_id, initial_mode: "manual" },
      writer.key,
    );
    expect(refused).toMatchObject({ status: 403, body: { error: "Forbidden" } });
    const absent = await post(n, { door: "api", target_kind: "tool", target_name: "echo", execution_key: "nobody-at-all" }, writer.key);
    expect(absent).toMatchObject({ status: 403, body: { error: "Forbidden" } });
    const row = await call("GET", `/api/conversations/${n}`, { key: writer.key });
    expect(row.body.data).toMatchObject({ execution_key: writer.user_id, initial_mode: "agent" });
    const owned = await mintKey({ scopes: ["tool:echo"] }, writer.key);
    expect((await post(n, { door: "api", target_kind: "tool", target_name: "echo", execution_key: owned.user_id }, writer.key)).status).toBe(200);
  });

  it("admin binding an absent key is 404; a request-bound condition is 400", async () => {
    expect((await post(name(), { door: "api", target_kind: "tool", target_name: "echo", execution_key: "absent-key-xyz" })).status).toBe(404);
    const k = await mintKey({ scopes: ["tool:echo"], condition: '.request.method == "POST"' });
    const r = await post(name(), { door: "api", target_kind: "tool", target_name: "echo", execution_key: k.user_id });
    expect(r.status).toBe(400);
    expect(r.body.error).toContain("execution_key");
  });

  it("a key without the conversations write grant cannot create (403)", async () => {
    const reader = await mintKey({ scopes: ["conversations:read"] });
    const r = await post(name(), { door: "api", target_kind: "tool", target_name: "echo", execution_key: reader.user_id }, reader.key);
    expect(r.status).toBe(403);
  });

  it("changing door on a route with threads is refused", async () => {
    const r = await echoRoute();
    await send(r.name, { external_user_id: "u", text: "x", wait_seconds: 5 });
    const change = await post(r.name, {
      door: "channel",
      target_kind: "tool",
      target_name: "echo",
      execution_key: r.key.user_id,
      channel: "twilio",
      our_identity: `+1777${Date.now()}`,
    });
    expect(change.status).toBe(400);
    expect(change.body.error).toContain("door");
  });

  it("GET/DELETE unknown route → 404; DELETE removes index rows and voids mode overrides", async () => {
    const key = await admin();
    expect((await call("GET", `/api/conversations/${name()}`, { key })).status).toBe(404);
    expect((await call("DELETE", `/api/conversations/${name()}`, { key })).status).toBe(404);
    const r = await echoRoute();
    const sent = await send(r.name, { external_user_id: "u", text: "x", wait_seconds: 5 });
    const threadId = sent.body.data.thread_id;
    const put = await call("PUT", `/api/conversations/${r.name}/thread/mode`, { key, body: { thread_id: threadId, mode: "manual" } });
    expect(put.status).toBe(200);
    await listingCaughtUp(threadId);
    expect(await env.DB.prepare("SELECT COUNT(*) AS n FROM threads WHERE route_name = ?").bind(r.name).first("n")).toBe(1);
    const del = await call("DELETE", `/api/conversations/${r.name}`, { key });
    expect(del.body).toEqual({ data: { removed: true, route_name: r.name } });
    expect(await env.DB.prepare("SELECT COUNT(*) AS n FROM threads WHERE route_name = ?").bind(r.name).first("n")).toBe(0);
    // A route re-created under the same name starts from its own default: the old override is void.
    await createRoute({ door: "api", target_kind: "tool", target_name: "echo", execution_key: r.key.user_id }, r.name);
    const mode = await call("GET", `/api/conversations/${r.name}/thread/mode?thread_id=${encodeURIComponent(threadId)}`, { key });
    expect(mode.body.data).toEqual({ mode: "agent", source: "route" });
    expect((await send(r.name, { external_user_id: "u", text: "back", wait_seconds: 5 })).body.data).toMatchObject({ status: "answered", answer: "back" });
    // The record keeps its own TTL: its directory entry stays until the thread prunes it.
    expect((await ledgerRows("message")).filter((e) => e.key === sent.body.data.message_id)).toHaveLength(1);
  });

  it("every routing op answers 501 conversations-not-configured without a store", async () => {
    const key = await admin();
    const paths: Array<[string, string, unknown?]> = [
      ["GET", "/api/conversations"],
      ["GET", "/api/conversations/some-route"],
      ["DELETE", "/api/conversations/some-route"],
      ["POST", "/api/conversations/some-route", { door: "api", target_kind: "tool", target_name: "echo", execution_key: "root" }],
      ["POST", "/api/conversations/some-route/messages", { external_user_id: "u", text: "x" }],
      ["GET", "/api/conversations/some-route/messages/abc"],
      ["GET", "/api/conversations/messages/failed"],
    ];
    await expectNotConfigured(paths, key, expect);
  });
});

describe("createRoute helper sanity", () => {
  it("builds routes with unique names", async () => {
    const k = await echoKey();
    const a = await createRoute({ door: "api", target_kind: "tool", target_name: "echo", execution_key: k.user_id });
    const b = await createRoute({ door: "api", target_kind: "tool", target_name: "echo", execution_key: k.user_id });
    expect(a.name).not.toBe(b.name);
  });
});
