/**
 * The bridge end to end: a real `wrangler dev` started through `npm start`,
 * an HTTP tool served by this test, and an HTTPS callback receiver on 127.0.0.1 whose certificate
 * comes from a CA made at test time and trusted by workerd through SSL_CERT_FILE.
 *
 * Backoff settings are shortened with `--var`; no assertion is about timing: every wait is a
 * bounded poll for an outcome.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BOOTSTRAP_TOKEN, type DevServer, http, startDev } from "./harness";
import { pollUntil } from "./support/poll";
import { type CallbackReceiver, type ReceivedRequest, startReceiver } from "./support/receiver";
import { signatureValid } from "./support/signature";
import { type TestPki, makeTestPki, trustEnv } from "./support/tls";
import { type ToolServer, startToolServer } from "./support/tool-server";
import { must } from "../../src/platform/must";

const MAX_ATTEMPTS = 6;
const VARS = {
  CONVERSATIONS_DELIVERY_BACKOFF_BASE_SECONDS: "0.5",
  CONVERSATIONS_DELIVERY_BACKOFF_MAX_SECONDS: "2",
  CONVERSATIONS_DELIVERY_CLAIM_LEASE_SECONDS: "5",
  CONVERSATIONS_DELIVERY_CALLBACK_TIMEOUT_SECONDS: "2",
  CONVERSATIONS_DELIVERY_SEND_TIMEOUT_SECONDS: "3",
  CONVERSATIONS_DELIVERY_MAX_ATTEMPTS: String(MAX_ATTEMPTS),
};

let pki: TestPki;
let strangerPki: TestPki;
let rx: CallbackReceiver;
let stranger: CallbackReceiver;
let tool: ToolServer;
let dev: DevServer;
let base: string;
let admin: string;
let caller: string;
/** Callback secrets by route name, as the create answer returned them (once). */
const secrets: Record<string, string> = {};
/** Every message id that went through the callback route, for the final exactly-once check. */
const calledBack = new Set<string>();

const parsed = (r: ReceivedRequest): any => JSON.parse(r.rawBody);
const callbacksFor = (receiver: CallbackReceiver, id: string) => receiver.requests.filter((r) => parsed(r).message_id === id);

async function send(route: string, body: Record<string, unknown>, key = caller) {
  return http(base, "POST", `/api/conversations/${route}/messages`, { key, body });
}

async function record(route: string, id: string, key = admin): Promise<any> {
  const r = await http(base, "GET", `/api/conversations/${route}/messages/${id}`, { key });
  expect(r.status).toBe(200);
  return r.body.data;
}

/** Polls the admin read door; a 404 counts as "not yet" (the D1 message index is written after the turn settles). */
async function recordUntil(route: string, id: string, what: string, done: (rec: any) => boolean): Promise<any> {
  const probe = async () => {
    const r = await http(base, "GET", `/api/conversations/${route}/messages/${id}`, { key: admin });
    if (r.status === 404) return null;
    expect(r.status).toBe(200);
    return r.body.data;
  };
  return pollUntil(`record ${id} ${what}`, probe, (rec) => rec !== null && done(rec), { timeoutMs: 90_000 });
}

async function createRoute(name: string, body: Record<string, unknown>) {
  const r = await http(base, "POST", `/api/conversations/${name}`, { key: admin, body: { door: "api", target_kind: "tool", execution_key: "root", ...body } });
  expect(r.status).toBe(200);
  return r.body.data;
}

beforeAll(async () => {
  pki = makeTestPki();
  strangerPki = makeTestPki(); // a CA workerd is never told about
  rx = await startReceiver(pki);
  stranger = await startReceiver(strangerPki);
  tool = await startToolServer((kwargs) => (kwargs.message === "say nothing" ? null : `tool:${String(kwargs.message).toUpperCase()}`));
  dev = await startDev({ vars: VARS, env: trustEnv(pki) });
  base = dev.baseUrl;
});

afterAll(async () => {
  await dev?.close();
  await rx?.stop();
  await stranger?.stop();
  await tool?.stop();
  pki?.cleanup();
  strangerPki?.cleanup();
});

describe("bridge end to end: HTTP tool, signed HTTPS callbacks, retries and restarts", () => {
  it("bootstraps, declares an HTTP tool served by the test and creates an api route with an HTTPS callback", async () => {
    const boot = await http(base, "POST", "/api/keys/bootstrap", { body: { user_id: "root", description: "e2e admin", bootstrap_token: BOOTSTRAP_TOKEN } });
    expect(boot.status).toBe(200);
    admin = boot.body.data.token;
    // The sender's key may talk to conversations only; the turn runs as the route's key ("root").
    const minted = await http(base, "POST", "/api/auth/api-keys", {
      key: admin,
      body: { user_id: "caller", description: "e2e caller", scopes: ["conversations"] },
    });
    expect(minted.status).toBe(200);
    caller = minted.body.data.api_key;

    const declared = await http(base, "POST", "/api/tools-config/entries", {
      key: admin,
      body: {
        title: "shout",
        kind: "http",
        description: "upper-cases the message (served by the e2e test)",
        url: tool.url,
        input_schema: { type: "object", properties: { message: { type: ["string", "null"] } } },
        timeout_seconds: 5,
      },
    });
    expect(declared.status).toBeLessThan(300);
    expect((await http(base, "GET", "/api/tools", { key: admin })).body.data).toContain("shout");

    const created = await createRoute("cb", { target_name: "shout", callback_url: `${rx.origin}/hooks/cb`, turns_per_hour_override: 1000 });
    expect(created).toMatchObject({ created: true, route_name: "cb", route: { door: "api", target_name: "shout", callback_url: `${rx.origin}/hooks/cb` } });
    expect(typeof created.callback_secret).toBe("string");
    expect(created.callback_secret.length).toBeGreaterThanOrEqual(43);
    expect(created.route).not.toHaveProperty("callback_secret");
    secrets.cb = created.callback_secret;

    const view = await http(base, "GET", "/api/conversations/cb", { key: admin });
    expect(view.status).toBe(200);
    expect(view.body.data).not.toHaveProperty("callback_secret");
    expect(JSON.stringify(view.body)).not.toContain(secrets.cb);
  });

  it("answers async messages with exactly one signed callback each, produced by the tool", async () => {
    const msgs = [
      { external_user_id: "alice", text: "hello" },
      { external_user_id: "bob", text: "second thread" },
      { external_user_id: "alice", text: "again on alice's thread" },
      { external_user_id: "carol", text: "say nothing" },
    ];
    const accepted: Array<{ message_id: string; thread_id: string }> = [];
    for (const m of msgs) {
      const r = await send("cb", m);
      expect(r.status).toBe(202);
      expect(Object.keys(r.body.data).sort()).toEqual(["message_id", "thread_id"]);
      expect(r.body.data.thread_id).toBe(`bridge:cb:caller/${m.external_user_id}`);
      accepted.push(r.body.data);
      calledBack.add(r.body.data.message_id);
    }

    const ids = accepted.map((a) => a.message_id);
    await pollUntil(
      "one callback per async message",
      () => ids.map((id) => callbacksFor(rx, id).length),
      (counts) => counts.every((n) => n >= 1),
    );
    for (const [i, a] of accepted.entries()) {
      // Terminal state first: a delivered record is never sent again, so the count below is final.
      const rec = await recordUntil("cb", a.message_id, "delivered", (r) => r.status === "delivered");
      expect(rec.attempts).toBe(1);
      const got = callbacksFor(rx, a.message_id);
      expect(got).toHaveLength(1);
      const cb = got[0];
      expect(cb.method).toBe("POST");
      expect(cb.path).toBe("/hooks/cb");
      expect(cb.answered).toBe(200);
      expect(cb.headers["content-type"]).toMatch(/^application\/json/);
      expect(signatureValid(secrets.cb, cb.rawBody, cb.headers["x-service-signature"])).toBe(true);
      expect(signatureValid("not-the-secret", cb.rawBody, cb.headers["x-service-signature"])).toBe(false);
      const body = parsed(cb);
      expect(cb.rawBody).toBe(JSON.stringify(body)); // compact JSON
      if (msgs[i].text === "say nothing") {
        // A silent turn is delivered as silence: status "silent", no answer key.
        expect(body).toEqual({ message_id: a.message_id, thread_id: a.thread_id, status: "silent" });
        expect(rec).toMatchObject({ answer_status: "silent", answer: null });
      } else {
        expect(body).toEqual({ message_id: a.message_id, thread_id: a.thread_id, status: "answered", answer: `tool:${msgs[i].text.toUpperCase()}` });
        expect(rec).toMatchObject({ answer_status: "answered", answer: `tool:${msgs[i].text.toUpperCase()}`, caller_principal: "caller" });
      }
    }

    // The tool got the default kwargs {message, sender, turn} of each turn.
    const call = tool.calls.find((c) => c.kwargs?.turn?.id === ids[0]);
    expect(call?.kwargs).toEqual({
      message: "hello",
      sender: "alice",
      turn: {
        id: ids[0],
        inbound: { kind: "message", id: ids[0], source: "api" },
        subject: expect.objectContaining({ target_kind: "tool", person: null, locale: null }),
      },
    });
    // Per-thread FIFO: alice's two turns reached the tool in the order they were sent.
    const aliceOrder = tool.calls.filter((c) => c.kwargs?.sender === "alice").map((c) => c.kwargs.turn.id);
    expect(aliceOrder.indexOf(ids[0])).toBeLessThan(aliceOrder.indexOf(ids[2]));
  });

  it("answers inline with wait_seconds and never also calls back", async () => {
    const inline = await send("cb", { external_user_id: "dave", text: "right now", wait_seconds: 60 });
    expect(inline.status).toBe(200);
    expect(inline.body.data).toMatchObject({ thread_id: "bridge:cb:caller/dave", status: "answered", answer: "tool:RIGHT NOW" });
    const id = inline.body.data.message_id;
    calledBack.add(id);
    const rec = await recordUntil("cb", id, "readable", () => true);
    expect(rec).toMatchObject({ status: "delivered", answer_status: "answered", attempts: 0 });

    // A later async message on the same thread is called back; the thread is FIFO, so by the time
    // its callback arrives anything owed for the inline one would have been sent first.
    const after = await send("cb", { external_user_id: "dave", text: "later" });
    expect(after.status).toBe(202);
    calledBack.add(after.body.data.message_id);
    await pollUntil(
      "the follow-up's callback",
      () => callbacksFor(rx, after.body.data.message_id).length,
      (n) => n === 1,
    );
    await recordUntil("cb", after.body.data.message_id, "delivered", (r) => r.status === "delivered");
    expect(callbacksFor(rx, id)).toHaveLength(0);
    expect((await record("cb", id)).attempts).toBe(0);
  });

  it("retries a failing receiver with backoff and ends delivered with attempts = N + 1", async () => {
    const N = 3;
    rx.failNext(N);
    const r = await send("cb", { external_user_id: "erin", text: "flaky receiver" });
    expect(r.status).toBe(202);
    const id = r.body.data.message_id;
    calledBack.add(id);

    const rec = await recordUntil("cb", id, "delivered", (x) => x.status === "delivered");
    expect(rec.attempts).toBe(N + 1);
    expect(rec.error).toBeNull();
    const got = callbacksFor(rx, id);
    expect(got.map((g) => g.answered)).toEqual([500, 500, 500, 200]);
    // Every attempt carries the same body and a valid signature.
    expect(new Set(got.map((g) => g.rawBody)).size).toBe(1);
    for (const g of got) expect(signatureValid(secrets.cb, g.rawBody, g.headers["x-service-signature"])).toBe(true);
  });

  it("treats an unreachable receiver as a failed attempt and delivers once it is back on the same port", async () => {
    await rx.stop();
    const r = await send("cb", { external_user_id: "frank", text: "receiver down" });
    expect(r.status).toBe(202);
    const id = r.body.data.message_id;
    calledBack.add(id);
    const failing = await recordUntil("cb", id, "a failed attempt", (x) => x.attempts >= 1);
    expect(failing.status).toBe("pending_delivery");
    expect(failing.error).toBe("callback connection failed");
    await rx.start();

    const rec = await recordUntil("cb", id, "delivered", (x) => x.status === "delivered");
    expect(rec.attempts).toBeGreaterThanOrEqual(2);
    const got = callbacksFor(rx, id);
    expect(got).toHaveLength(1);
    expect(got[0].answered).toBe(200);
  });

  it("refuses a receiver whose certificate workerd does not trust, and lists the record as failed after the last attempt", async () => {
    const created = await createRoute("cb-untrusted", { target_name: "shout", callback_url: `${stranger.origin}/hooks/x`, turns_per_hour_override: 1000 });
    expect(created.callback_secret).toBeTruthy();
    const r = await send("cb-untrusted", { external_user_id: "gina", text: "nobody trusts you" });
    expect(r.status).toBe(202);
    const id = r.body.data.message_id;

    const rec = await recordUntil("cb-untrusted", id, "failed", (x) => x.status === "failed");
    expect(rec.attempts).toBe(MAX_ATTEMPTS);
    expect(rec.error).toContain(`undelivered after ${MAX_ATTEMPTS} attempts`);
    // The TLS handshake failed every time, so no HTTP request ever reached the stranger.
    expect(stranger.requests).toHaveLength(0);

    // The failed listing trails the record by at most the shards' flush lag (docs/performance.md).
    const failed = await pollUntil(
      "the failed listing to show the record",
      () => http(base, "GET", "/api/conversations/messages/failed", { key: admin }),
      (r) => r.status !== 200 || r.body.data.items.some((x: any) => x.message_id === id),
    );
    expect(failed.status).toBe(200);
    expect(failed.body.data.items.map((x: any) => x.message_id)).toContain(id);
    expect((await http(base, "GET", "/api/conversations/messages/failed", { key: caller })).status).toBe(403);
  });

  it("delivers a poll-only route's answer on store, without any callback", async () => {
    const created = await createRoute("poll", { target_name: "shout" });
    expect(created.callback_secret).toBeNull();
    const before = rx.requests.length;
    const r = await send("poll", { external_user_id: "hank", text: "poll me" });
    expect(r.status).toBe(202);
    const id = r.body.data.message_id;

    const rec = await recordUntil("poll", id, "delivered", (x) => x.status === "delivered");
    expect(rec).toMatchObject({ answer_status: "answered", answer: "tool:POLL ME", attempts: 0, callback_url: null });
    // The caller reads the caller-safe projection: the answer, without delivery bookkeeping.
    const mine = await record("poll", id, caller);
    expect(mine).toMatchObject({ message_id: id, status: "delivered", answer: "tool:POLL ME" });
    for (const k of ["error", "attempts", "outbound_message_ids", "callback_url", "provider_message_id", "expires_at"]) expect(mine).not.toHaveProperty(k);
    // Another route's door does not show it.
    expect((await http(base, "GET", `/api/conversations/cb/messages/${id}`, { key: admin })).status).toBe(404);
    expect(rx.requests.slice(before).filter((q) => parsed(q).message_id === id)).toHaveLength(0);
  });

  it("survives a restart of wrangler dev while a delivery backs off and delivers it exactly once", async () => {
    rx.failNext(Number.POSITIVE_INFINITY);
    const r = await send("cb", { external_user_id: "ivan", text: "across a restart" });
    expect(r.status).toBe(202);
    const id = r.body.data.message_id;
    calledBack.add(id);
    const backingOff = await recordUntil("cb", id, "a failed attempt", (x) => x.attempts >= 1 && x.status === "pending_delivery");
    expect(backingOff.error).toBe("callback answered HTTP 500");

    await dev.stop();
    const failedBefore = callbacksFor(rx, id);
    expect(failedBefore.length).toBeGreaterThanOrEqual(1);
    expect(failedBefore.every((g) => g.answered === 500)).toBe(true);
    rx.succeed();
    await dev.restart(); // same port, same persistence directory

    // Watch the receiver, not the record: nothing but the thread object's own alarm may re-drive it.
    await pollUntil(
      "the re-driven callback",
      () => callbacksFor(rx, id).filter((g) => g.answered === 200).length,
      (n) => n >= 1,
      { timeoutMs: 90_000 },
    );
    const rec = await recordUntil("cb", id, "delivered", (x) => x.status === "delivered");
    const got = callbacksFor(rx, id);
    expect(got.filter((g) => g.answered === 200)).toHaveLength(1);
    expect(must(got.at(-1), "got.at(-1)").answered).toBe(200);
    // An attempt cut off by the stop may have reached the receiver without being counted.
    expect(rec.attempts).toBeGreaterThanOrEqual(2);
    expect(rec.attempts).toBeLessThanOrEqual(got.length);
    for (const g of got) expect(signatureValid(secrets.cb, g.rawBody, g.headers["x-service-signature"])).toBe(true);

    // State persisted: records from before the restart are still readable and delivered.
    const earlier = [...calledBack].filter((m) => m !== id);
    for (const m of earlier) expect((await record("cb", m)).status).toBe("delivered");
  });

  it("never POSTed any answer twice after a 2xx", async () => {
    // A last async message proves the service is live and delivering, so anything still owed has had its chance.
    const r = await send("cb", { external_user_id: "judy", text: "last one" });
    expect(r.status).toBe(202);
    calledBack.add(r.body.data.message_id);
    await recordUntil("cb", r.body.data.message_id, "delivered", (x) => x.status === "delivered");
    for (const id of calledBack) {
      const ok = callbacksFor(rx, id).filter((g) => g.answered >= 200 && g.answered < 300);
      expect(ok.length, `2xx callbacks for ${id}`).toBeLessThanOrEqual(1);
    }
    // Every record id that got a 2xx appears in exactly one 2xx-answered callback overall.
    const okIds = rx.requests.filter((g) => g.answered === 200).map((g) => parsed(g).message_id);
    expect(new Set(okIds).size).toBe(okIds.length);
  });
});
