import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { TURN_ERROR_TEXT } from "../../src/conversations/model/record";
import { createRoute, echoKey, echoRoute, readRecord, send } from "../helpers/bridge";
import { fakeNetwork } from "../helpers/network";
import { admin, call, mintKey } from "../helpers/http";
import { eventually, rawRows, stubFor } from "../helpers/threads";
import { ledgerRows, listingCaughtUp } from "../helpers/listing";

async function toolRoute(extra: Record<string, unknown>) {
  const k = await echoKey();
  return createRoute({ door: "api", target_kind: "tool", target_name: "echo", execution_key: k.user_id, ...extra });
}

async function declareHttpTool(title: string, url: string) {
  const r = await call("POST", "/api/tools-config/entries", { key: await admin(), body: { title, kind: "http", description: "test tool", url } });
  if (r.status !== 200) throw new Error(`tool declare failed ${r.status} ${JSON.stringify(r.body)}`);
}

describe("message door body and refusals (spec §4.3)", () => {
  it.each([
    ["missing external_user_id", { text: "x" }, "external_user_id"],
    ["blank external_user_id", { external_user_id: "  ", text: "x" }, "external_user_id"],
    ["missing text", { external_user_id: "u" }, "text"],
    ["negative wait_seconds", { external_user_id: "u", text: "x", wait_seconds: -1 }, "wait_seconds"],
    ["too many params", { external_user_id: "u", text: "x", params: Object.fromEntries(Array.from({ length: 17 }, (_, i) => [`k${i}`, "v"])) }, "params"],
    ["an over-long param value", { external_user_id: "u", text: "x", params: { k: "SECRETVALUE".repeat(60) } }, "params"],
    ["a bad param key", { external_user_id: "u", text: "x", params: { "bad key": "v" } }, "params"],
    ["a non-object form", { external_user_id: "u", text: "x", form: [1, 2] }, "form"],
    ["an over-size form", { external_user_id: "u", text: "x", form: { big: "SECRETVALUE".repeat(4000) } }, "form"],
    ["too many attachments", { external_user_id: "u", text: "x", attachments: Array.from({ length: 51 }, () => ({ url: "https://x/a.png" })) }, "attachments"],
    ["a bad attachment kind", { external_user_id: "u", text: "x", attachments: [{ kind: "hologram", url: "https://x" }] }, "attachments"],
    ["a location without longitude", { external_user_id: "u", text: "x", location: { latitude: 1 } }, "location"],
    ["an unknown field", { external_user_id: "u", text: "x", extra: true }, "extra"],
  ])("400 for %s, naming the bound and never the value", async (_what, body, field) => {
    const r = await toolRoute({});
    const res = await send(r.name, body);
    expect(res.status).toBe(400);
    expect(res.body.error).toContain(field);
    expect(res.body.error).not.toContain("SECRETVALUE");
  });

  it("404 for an unknown route; 401 without a key; 403 without the write grant", async () => {
    expect((await send("no-such-route-here", { external_user_id: "u", text: "x" })).status).toBe(404);
    const r = await toolRoute({});
    expect((await call("POST", `/api/conversations/${r.name}/messages`, { body: { external_user_id: "u", text: "x" } })).status).toBe(401);
    const reader = await mintKey({ scopes: ["conversations:read"] });
    expect((await send(r.name, { external_user_id: "u", text: "x" }, reader.key)).status).toBe(403);
  });
});

describe("turns and answers", () => {
  it("202 then a poll read; the thread id carries the percent-encoded principal", async () => {
    const caller = await mintKey({ user_id: `svc:caller-${Date.now()}`, scopes: ["conversations"] });
    const r = await toolRoute({});
    const res = await send(r.name, { external_user_id: " alice ", text: "hello" }, caller.key);
    expect(res.status).toBe(202);
    expect(res.body.data.thread_id).toBe(`bridge:${r.name}:${encodeURIComponent(caller.user_id).replace(/%3A/g, "%3A")}/alice`);
    const rec = await eventually(
      () => readRecord(r.name, res.body.data.message_id),
      (x) => x.body.data?.status === "delivered",
    );
    expect(rec.body.data).toMatchObject({
      status: "delivered",
      answer_status: "answered",
      answer: "hello",
      origin: "client",
      inbound_text: "hello",
      caller_principal: caller.user_id,
      client_address: "alice",
    });
    expect(rec.body.data.expires_at).toBeTruthy();
  });

  it("wait_seconds answers inline; silence answers 200 status silent without answer", async () => {
    const r = await toolRoute({});
    const inline = await send(r.name, { external_user_id: "u", text: "hi there", wait_seconds: 10 });
    expect(inline).toMatchObject({ status: 200, body: { data: { status: "answered", answer: "hi there" } } });
    const silent = await send(r.name, { external_user_id: "u", text: "   ", wait_seconds: 10 });
    expect(silent.status).toBe(200);
    expect(silent.body.data.status).toBe("silent");
    expect(silent.body.data).not.toHaveProperty("answer");
    const rec = await readRecord(r.name, silent.body.data.message_id);
    expect(rec.body.data).toMatchObject({ status: "delivered", answer_status: "silent", answer: null });
  });

  it("exposes the whole payload of spec §4.2 to payload_expr", async () => {
    const r = await toolRoute({ payload_expr: "{message: tojson}" });
    const res = await send(r.name, {
      external_user_id: "u9",
      text: "hey",
      wait_seconds: 10,
      params: { reply_id: "r1" },
      form: { rating: 5 },
      attachments: [{ url: "https://cdn.example/p.png" }],
      location: { latitude: 1.5, longitude: 2.5, name: "HQ" },
    });
    const payload = JSON.parse(res.body.data.answer);
    expect(payload).toEqual({
      message: "hey",
      sender: "u9",
      our_identity: null,
      channel: null,
      thread_id: res.body.data.thread_id,
      turn: {
        id: res.body.data.message_id,
        inbound: { kind: "message", id: res.body.data.message_id, source: "api" },
        subject: { target_kind: "tool", target_name: "echo", person: null, thread: res.body.data.thread_id, locale: null },
      },
      params: { reply_id: "r1" },
      form: { rating: 5 },
      attachments: [{ kind: "image", url: "https://cdn.example/p.png" }],
      location: { latitude: 1.5, longitude: 2.5, name: "HQ" },
    });
    const bare = JSON.parse((await send(r.name, { external_user_id: "u9", text: "plain", wait_seconds: 10 })).body.data.answer);
    expect(Object.keys(bare).sort()).toEqual(["channel", "message", "our_identity", "sender", "thread_id", "turn"]);
    const rec = await readRecord(r.name, res.body.data.message_id);
    expect(rec.body.data).toMatchObject({ inbound_form: { rating: 5 }, inbound_location: { latitude: 1.5 } });
  });

  it("default kwargs are {message, sender, turn} (no form)", async () => {
    await declareHttpTool("kwargs-mirror", "https://tools.example/mirror");
    fakeNetwork(async (_req, body) => new Response(JSON.stringify(JSON.stringify(JSON.parse(body))), { headers: { "content-type": "application/json" } }));
    const k = await mintKey({ scopes: ["tool:kwargs-mirror"] });
    const r = await createRoute({ door: "api", target_kind: "tool", target_name: "kwargs-mirror", execution_key: k.user_id });
    const res = await send(r.name, { external_user_id: "u", text: "t", form: { a: 1 }, wait_seconds: 10 });
    expect(res.body.data.status).toBe("answered");
    expect(Object.keys(JSON.parse(res.body.data.answer)).sort()).toEqual(["message", "sender", "turn"]);
  });

  it.each([
    ["payload_expr emitting two values", { payload_expr: "{message: .message}, {message: .message}" }, "payload_expr must emit exactly one value"],
    ["payload_expr emitting no value", { payload_expr: "empty" }, "payload_expr must emit exactly one value"],
    ["payload_expr emitting a non-object", { payload_expr: ".message" }, "payload_expr must emit an object"],
    ["payload_expr raising at run time", { payload_expr: 'error("SECRET " + .message)' }, "payload_expr failed with a jq runtime error"],
    ["reply_expr emitting a non-string", { reply_expr: "{a: .}" }, "reply_expr must be a string or null"],
    ["reply_expr emitting two values", { reply_expr: ". , ." }, "reply_expr must emit exactly one value"],
    ["kwargs the tool refuses", { payload_expr: "{message: 42}" }, "tool dispatch invalid_kwargs"],
  ])("%s → the fixed error text, detail kept for admins only", async (_what, extra, detail) => {
    const r = await toolRoute(extra);
    const res = await send(r.name, { external_user_id: "u", text: "PRIVATE", wait_seconds: 10 });
    expect(res.body.data).toMatchObject({ status: "error", answer: TURN_ERROR_TEXT });
    const full = await readRecord(r.name, res.body.data.message_id);
    expect(full.body.data.error).toContain(detail);
    expect(full.body.data.error).not.toContain("PRIVATE");
    expect(full.body.data.error).not.toContain("SECRET");
    const reader = await mintKey({ scopes: ["conversations:read"] });
    const safe = await readRecord(r.name, res.body.data.message_id, reader.key);
    expect(safe.status).toBe(200);
    expect(safe.body.data).not.toHaveProperty("error");
    expect(safe.body.data).not.toHaveProperty("attempts");
    expect(safe.body.data).toMatchObject({ answer_status: "error", answer: TURN_ERROR_TEXT });
  });

  it("a wrong-typed tool result (object without reply_expr) is an error outcome", async () => {
    await declareHttpTool("object-tool", "https://tools.example/object");
    fakeNetwork(async () => new Response(JSON.stringify({ not: "a string" }), { headers: { "content-type": "application/json" } }));
    const k = await mintKey({ scopes: ["tool:object-tool"] });
    const r = await createRoute({ door: "api", target_kind: "tool", target_name: "object-tool", execution_key: k.user_id });
    const res = await send(r.name, { external_user_id: "u", text: "x", wait_seconds: 10 });
    expect(res.body.data.status).toBe("error");
    expect((await readRecord(r.name, res.body.data.message_id)).body.data.error).toContain("tool result must be a string or null; it was object");
    const mapped = await createRoute({ door: "api", target_kind: "tool", target_name: "object-tool", execution_key: k.user_id, reply_expr: ".not" });
    expect((await send(mapped.name, { external_user_id: "u", text: "x", wait_seconds: 10 })).body.data).toMatchObject({
      status: "answered",
      answer: "a string",
    });
  });

  it("a revoked then re-minted execution key denies the next turn with no route-side step", async () => {
    const k = await echoKey();
    const r = await createRoute({ door: "api", target_kind: "tool", target_name: "echo", execution_key: k.user_id });
    expect((await send(r.name, { external_user_id: "u", text: "one", wait_seconds: 10 })).body.data.status).toBe("answered");
    const adminKey = await admin();
    await call("DELETE", `/api/auth/api-keys/${k.user_id}`, { key: adminKey });
    await mintKey({ user_id: k.user_id, scopes: ["tool:echo"] });
    const denied = await send(r.name, { external_user_id: "u", text: "two", wait_seconds: 10 });
    expect(denied.body.data).toMatchObject({ status: "error", answer: TURN_ERROR_TEXT });
    expect((await readRecord(r.name, denied.body.data.message_id)).body.data.error).toMatch(/denied/);
    // Re-binding restores service.
    await createRoute({ door: "api", target_kind: "tool", target_name: "echo", execution_key: k.user_id }, r.name);
    expect((await send(r.name, { external_user_id: "u", text: "three", wait_seconds: 10 })).body.data.status).toBe("answered");
  });

  it("dropping the key's grant denies the next turn", async () => {
    const k = await echoKey();
    const r = await createRoute({ door: "api", target_kind: "tool", target_name: "echo", execution_key: k.user_id });
    await call("POST", `/api/auth/api-keys/${k.user_id}/scopes`, { key: await admin(), body: { remove: ["tool:echo"] } });
    expect((await send(r.name, { external_user_id: "u", text: "x", wait_seconds: 10 })).body.data.status).toBe("error");
  });

  it("a record on another route reads 404", async () => {
    const a = await toolRoute({});
    const b = await toolRoute({});
    const res = await send(a.name, { external_user_id: "u", text: "x", wait_seconds: 10 });
    expect((await readRecord(b.name, res.body.data.message_id)).status).toBe(404);
    expect((await readRecord(a.name, "00000000-0000-4000-8000-000000000000")).status).toBe(404);
  });
});

describe("admission bounds", () => {
  it("the queue depth bound answers 503 and writes nothing", async () => {
    const r = await toolRoute({});
    const first = await send(r.name, { external_user_id: "q", text: "seed", wait_seconds: 10 });
    const threadId = first.body.data.thread_id;
    await listingCaughtUp(threadId); // the seed's listing row, before the raw fillers below
    // Fill the queue to its depth (20 waiting) behind a running turn whose lease is still live.
    await runInDurableObject(stubFor(threadId), (_obj, state) => {
      const rec = state.storage.sql.exec("SELECT record, inbound FROM records LIMIT 1").one() as { record: string; inbound: string };
      for (let i = 0; i < 21; i++) {
        const id = crypto.randomUUID();
        const body = { ...JSON.parse(rec.record), message_id: id, status: "accepted" };
        state.storage.sql.exec(
          "INSERT INTO records (message_id, record, inbound, status, turn_state, turn_lease_until) VALUES (?, ?, ?, 'accepted', ?, ?)",
          id,
          JSON.stringify(body),
          rec.inbound,
          i === 0 ? "running" : "queued",
          i === 0 ? Date.now() + 3_600_000 : null,
        );
      }
    });
    const before = (await rawRows(threadId)).length;
    const directory = async () => (await ledgerRows("message")).filter((e) => e.thread_id === threadId).length;
    const entriesBefore = await directory();
    const refused = await send(r.name, { external_user_id: "q", text: "one too many" });
    expect(refused.status).toBe(503);
    expect((await rawRows(threadId)).length).toBe(before);
    // Its message directory entry, written beside the accept, was released again.
    expect(await directory()).toBe(entriesBefore);
    await listingCaughtUp(threadId); // the refusal noted nothing, so the row still says one record
    const count = await env.DB.prepare("SELECT message_count FROM threads WHERE thread_id = ?").bind(threadId).first("message_count");
    expect(count).toBe(1);
  });

  it("the rate cap answers 429 with Retry-After keyed on (route, caller), writing nothing", async () => {
    const r = await toolRoute({ turns_per_hour_override: 2 });
    const caller = await mintKey({ scopes: ["conversations"] });
    expect((await send(r.name, { external_user_id: "a", text: "1" }, caller.key)).status).toBe(202);
    expect((await send(r.name, { external_user_id: "b", text: "2" }, caller.key)).status).toBe(202);
    const over = await send(r.name, { external_user_id: "c", text: "3" }, caller.key);
    expect(over.status).toBe(429);
    expect(Number(over.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(await env.DB.prepare("SELECT COUNT(*) AS n FROM threads WHERE route_name = ? AND client_address = 'c'").bind(r.name).first("n")).toBe(0);
    // Another caller has its own bucket.
    const other = await mintKey({ scopes: ["conversations"] });
    expect((await send(r.name, { external_user_id: "c", text: "3" }, other.key)).status).toBe(202);
  });

  it("wait_seconds is clamped to sync_wait_max_seconds (a huge wait still answers)", async () => {
    const r = await toolRoute({});
    const res = await send(r.name, { external_user_id: "u", text: "x", wait_seconds: 1e9 });
    expect(res.status).toBe(200);
  });
});
