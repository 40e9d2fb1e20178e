/**
 * `Idempotency-Key` on the doors that start a turn or a send (docs/api-notes.md, "Retrying a
 * request"): a retry answers the first request's answer and runs nothing twice, through a restart
 * of the thread object too; the key on another request is 422; keys belong to the calling key.
 */
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { apiThreadId } from "../../src/shared/thread-id";
import { createRoute, echoKey, readRecord } from "../helpers/bridge";
import { fakeNetwork } from "../helpers/network";
import { admin, call, mintKey, uniq } from "../helpers/http";
import { eventually, makeDue, rawRows, runAlarm, stubFor } from "../helpers/threads";

const HOOK = "https://hooks.example.com/idempotency";

async function callbackRoute() {
  const k = await echoKey();
  return createRoute({ door: "api", target_kind: "tool", target_name: "echo", execution_key: k.user_id, callback_url: HOOK });
}

/** POSTs `body` as `key` with an Idempotency-Key (null: none). */
async function post(path: string, body: unknown, idem: string | null, key?: string) {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (idem !== null) headers["idempotency-key"] = idem;
  return call("POST", path, { key: key ?? (await admin()), headers, rawBody: JSON.stringify(body) });
}

const hooked = (calls: Array<{ url: string }>) => calls.filter((c) => c.url === HOOK).length;

async function delivered(routeName: string, messageId: string): Promise<void> {
  const r = await eventually(
    () => readRecord(routeName, messageId),
    (x) => x.body.data?.status === "delivered",
  );
  expect(r.body.data.status).toBe("delivered");
}

/** Ends the thread's object as a restart would: its memory goes, its storage stays. */
async function restart(threadId: string): Promise<void> {
  await runInDurableObject(stubFor(threadId), (_o, state) => state.abort("simulated restart")).catch(() => undefined);
}

describe("Idempotency-Key on the api message door", () => {
  it("a retry with the same key answers the same message_id, runs one turn and calls back once", async () => {
    const calls = fakeNetwork(() => new Response(null, { status: 204 }));
    const r = await callbackRoute();
    const path = `/api/conversations/${r.name}/messages`;
    const body = { external_user_id: "u1", text: "pay once" };
    const first = await post(path, body, "order-1");
    expect(first.status).toBe(202);
    expect(first.headers.get("idempotent-replayed")).toBeNull();
    await delivered(r.name, first.body.data.message_id);
    const again = await post(path, body, "order-1");
    expect(again.status).toBe(202);
    expect(again.body).toEqual(first.body);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(await rawRows(apiThreadId(r.name, "root", "u1"))).toHaveLength(1);
    expect(hooked(calls)).toBe(1);
  });

  it("holds through a restart of the thread object between the two requests", async () => {
    const calls = fakeNetwork(() => new Response(null, { status: 204 }));
    const r = await callbackRoute();
    const path = `/api/conversations/${r.name}/messages`;
    const body = { external_user_id: "u2", text: "once, across a restart" };
    const first = await post(path, body, "restart-1");
    expect(first.status).toBe(202);
    await delivered(r.name, first.body.data.message_id);
    const threadId = apiThreadId(r.name, "root", "u2");
    await restart(threadId);
    const again = await post(path, body, "restart-1");
    expect(again.status).toBe(202);
    expect(again.body.data.message_id).toBe(first.body.data.message_id);
    expect(await rawRows(threadId)).toHaveLength(1);
    expect(hooked(calls)).toBe(1);
  });

  it("the same key with another body is 422, and writes nothing", async () => {
    fakeNetwork(() => new Response(null, { status: 204 }));
    const r = await callbackRoute();
    const path = `/api/conversations/${r.name}/messages`;
    const first = await post(path, { external_user_id: "u3", text: "one" }, "k-3");
    expect(first.status).toBe(202);
    const other = await post(path, { external_user_id: "u3", text: "two" }, "k-3");
    expect(other.status).toBe(422);
    expect(other.body).toMatchObject({ code: "idempotency-key-reused" });
    expect(other.body.error).toContain("Idempotency-Key");
    expect(await rawRows(apiThreadId(r.name, "root", "u3"))).toHaveLength(1);
  });

  it("concurrent requests with one key run one turn; each answer is the first's or 409", async () => {
    const calls = fakeNetwork(() => new Response(null, { status: 204 }));
    const r = await callbackRoute();
    const path = `/api/conversations/${r.name}/messages`;
    const body = { external_user_id: "u4", text: "racing", wait_seconds: 5 };
    const answers = await Promise.all([1, 2, 3, 4].map(() => post(path, body, "race-4")));
    const ok = answers.filter((a) => a.status === 200 || a.status === 202);
    expect(ok.length).toBeGreaterThanOrEqual(1);
    for (const a of answers) expect([200, 202, 409]).toContain(a.status);
    expect(new Set(ok.map((a) => a.body.data.message_id)).size).toBe(1);
    const threadId = apiThreadId(r.name, "root", "u4");
    expect(await rawRows(threadId)).toHaveLength(1);
    // Answered inline, the message is never called back; its retry answers inline too.
    const again = await post(path, body, "race-4");
    expect(again.status).toBe(200);
    expect(again.body.data.message_id).toBe(ok[0].body.data.message_id);
    expect(hooked(calls)).toBe(0);
  });

  it("a retry of an inline answer answers it inline again, with the same body", async () => {
    fakeNetwork(() => new Response(null, { status: 204 }));
    const r = await callbackRoute();
    const path = `/api/conversations/${r.name}/messages`;
    const body = { external_user_id: "u5", text: "inline", wait_seconds: 10 };
    const first = await post(path, body, "inline-5");
    expect(first.status).toBe(200);
    const again = await post(path, body, "inline-5");
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
  });

  it("keys belong to the calling key: two keys with one key value run two turns", async () => {
    const calls = fakeNetwork(() => new Response(null, { status: 204 }));
    const r = await callbackRoute();
    const path = `/api/conversations/${r.name}/messages`;
    const body = { external_user_id: "u6", text: "same words" };
    const a = await mintKey({ scopes: ["conversations:write", "conversations:read"] });
    const b = await mintKey({ scopes: ["conversations:write", "conversations:read"] });
    const fromA = await post(path, body, "shared-6", a.key);
    const fromB = await post(path, body, "shared-6", b.key);
    expect(fromA.status, JSON.stringify(fromA.body)).toBe(202);
    expect(fromB.status).toBe(202);
    expect(fromB.body.data.message_id).not.toBe(fromA.body.data.message_id);
    await delivered(r.name, fromA.body.data.message_id);
    await delivered(r.name, fromB.body.data.message_id);
    expect(hooked(calls)).toBe(2);
  });

  it("without the header, two sends are two turns, as before", async () => {
    fakeNetwork(() => new Response(null, { status: 204 }));
    const r = await callbackRoute();
    const path = `/api/conversations/${r.name}/messages`;
    const body = { external_user_id: "u7", text: "no key" };
    const one = await post(path, body, null);
    const two = await post(path, body, null);
    expect(two.body.data.message_id).not.toBe(one.body.data.message_id);
    expect(await rawRows(apiThreadId(r.name, "root", "u7"))).toHaveLength(2);
  });

  it("a malformed or too long key is 400 naming the header, and writes nothing", async () => {
    fakeNetwork(() => new Response(null, { status: 204 }));
    const r = await callbackRoute();
    const path = `/api/conversations/${r.name}/messages`;
    const body = { external_user_id: "u8", text: "bad key" };
    for (const bad of ["", "a b", "x".repeat(256), "k, k", '"unterminated', "k;x"]) {
      const a = await call("POST", path, {
        key: await admin(),
        headers: { "content-type": "application/json", "idempotency-key": bad },
        rawBody: JSON.stringify(body),
      });
      expect(a.status, bad).toBe(400);
      expect(a.body.error).toContain("Idempotency-Key");
    }
    // The draft's structured-field string: the quotes are not part of the key.
    const quoted = await post(path, body, `"${uniq("q")}"`);
    expect(quoted.status).toBe(202);
    expect(await rawRows(apiThreadId(r.name, "root", "u8"))).toHaveLength(1);
  });
});

/** The thread's key rows, read from its SQLite. */
async function keyRows(threadId: string): Promise<number> {
  return runInDurableObject(stubFor(threadId), (_o, state) => (state.storage.sql.exec("SELECT COUNT(*) AS n FROM idempotency_keys").one() as { n: number }).n);
}

describe("a key goes with its record", () => {
  it("when the record's retention ends, the prune pass drops its key, and the key starts a new turn", async () => {
    fakeNetwork(() => new Response(null, { status: 204 }));
    const r = await callbackRoute();
    const path = `/api/conversations/${r.name}/messages`;
    const body = { external_user_id: "p1", text: "kept, then pruned" };
    const first = await post(path, body, "prune-1");
    await delivered(r.name, first.body.data.message_id);
    const threadId = apiThreadId(r.name, "root", "p1");
    expect(await keyRows(threadId)).toBe(1);
    await makeDue(threadId, "expires_at");
    await runAlarm(threadId);
    expect(await rawRows(threadId)).toHaveLength(0);
    expect(await keyRows(threadId)).toBe(0);
    const again = await post(path, body, "prune-1");
    expect(again.status).toBe(202);
    expect(again.body.data.message_id).not.toBe(first.body.data.message_id);
  });

  it("forgetting the thread drops its keys", async () => {
    fakeNetwork(() => new Response(null, { status: 204 }));
    const r = await callbackRoute();
    const first = await post(`/api/conversations/${r.name}/messages`, { external_user_id: "p2", text: "forget me" }, "forget-2");
    await delivered(r.name, first.body.data.message_id);
    const threadId = first.body.data.thread_id;
    const forgot = await call("DELETE", `/api/conversations/${r.name}/thread?thread_id=${encodeURIComponent(threadId)}`, { key: await admin() });
    expect(forgot.status, JSON.stringify(forgot.body)).toBe(200);
    expect(await keyRows(threadId)).toBe(0);
  });
});

describe("Idempotency-Key on the event door", () => {
  it("the same event and key with another payload is 422; the same request answers the first", async () => {
    fakeNetwork(() => new Response(null, { status: 204 }));
    const r = await callbackRoute();
    const seed = await post(`/api/conversations/${r.name}/messages`, { external_user_id: "e1", text: "a thread" }, null);
    expect(seed.status).toBe(202);
    const path = `/api/conversations/${r.name}/events`;
    const event = { event_id: uniq("evt"), kind: "order.paid", payload: { amount: 1 } };
    const first = await post(path, { address: "e1", event }, "evt-key");
    expect(first.status, JSON.stringify(first.body)).toBe(202);
    const again = await post(path, { address: "e1", event }, "evt-key");
    expect(again.body).toEqual(first.body);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    const other = await post(path, { address: "e1", event: { ...event, payload: { amount: 2 } } }, "evt-key");
    expect(other.status).toBe(422);
    const events = (await rawRows(seed.body.data.thread_id)).filter((row) => JSON.parse(row.record).inbound_kind === "event");
    expect(events).toHaveLength(1);
  });
});

describe("Idempotency-Key on operator send", () => {
  it("a retried send answers the same message_id and writes one record; another text with the key is 422", async () => {
    fakeNetwork(() => new Response(null, { status: 204 }));
    const r = await callbackRoute();
    const seed = await post(`/api/conversations/${r.name}/messages`, { external_user_id: "o1", text: "a thread" }, null);
    const threadId = seed.body.data.thread_id;
    const path = `/api/conversations/${r.name}/thread/messages`;
    const first = await post(path, { thread_id: threadId, text: "from a human" }, "op-1");
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    await restart(threadId);
    const again = await post(path, { thread_id: threadId, text: "from a human" }, "op-1");
    expect(again.status).toBe(200);
    expect(again.body).toEqual(first.body);
    expect((await post(path, { thread_id: threadId, text: "something else" }, "op-1")).status).toBe(422);
    const operator = (await rawRows(threadId)).filter((row) => JSON.parse(row.record).origin === "operator");
    expect(operator).toHaveLength(1);
  });
});

describe("Idempotency-Key on tool runs", () => {
  it("a retry answers the same run_id; another calling key with the same key value gets its own run", async () => {
    const a = await mintKey({ scopes: ["tools:read", "tool:echo"] });
    const b = await mintKey({ scopes: ["tools:read", "tool:echo"] });
    const body = { tool_name: "echo", arguments: { message: "once" } };
    const first = await post("/api/tool-runs", body, "run-1", a.key);
    expect(first.status, JSON.stringify(first.body)).toBe(202);
    const again = await post("/api/tool-runs", body, "run-1", a.key);
    expect(again.status).toBe(202);
    expect(again.body).toEqual(first.body);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    const other = await post("/api/tool-runs", body, "run-1", b.key);
    expect(other.status).toBe(202);
    expect(other.body.data.run_id).not.toBe(first.body.data.run_id);
    expect((await post("/api/tool-runs", { ...body, arguments: { message: "twice" } }, "run-1", a.key)).status).toBe(422);
  });
});

describe("Idempotency-Key on notification sends", () => {
  it("a retried channel send goes out once; a send that failed releases its key, so its retry sends", async () => {
    let fail = true;
    const calls = fakeNetwork((req) => {
      if (new URL(req.url).host !== "telegram.fake") throw new Error(`unexpected outbound request: ${req.url}`);
      if (fail) return Response.json({ ok: false, error_code: 400, description: "Bad Request" }, { status: 400 });
      return Response.json({ ok: true, result: { message_id: 7 } });
    });
    const body = { message: uniq("notice"), channel: "telegram", recipient: "42" };
    const failed = await post("/api/notifications", body, "note-1");
    expect(failed.status).toBe(502);
    fail = false;
    const sent = await post("/api/notifications", body, "note-1");
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    const again = await post("/api/notifications", body, "note-1");
    expect(again.status).toBe(200);
    expect(again.body).toEqual(sent.body);
    expect(again.headers.get("idempotent-replayed")).toBe("true");
    expect(calls.filter((c) => c.url.includes("telegram.fake"))).toHaveLength(2);
    expect((await post("/api/notifications", { ...body, recipient: "43" }, "note-1")).status).toBe(422);
    expect(calls.filter((c) => c.url.includes("telegram.fake"))).toHaveLength(2);
  });
});
