import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { hmacSha256, toHex } from "../../src/access-control/crypto";
import { createRoute, echoKey, readRecord, send } from "../helpers/bridge";
import { fakeNetwork } from "../helpers/network";
import { admin, call, mintKey } from "../helpers/http";
import { listingCaughtUp } from "../helpers/listing";
import { eventually, makeDue, rawRows, runAlarm, stubFor } from "../helpers/threads";
import { must } from "../../src/platform/must";

const HOOK = "https://hooks.example.com/bridge";

async function callbackRoute() {
  const k = await echoKey();
  return createRoute({ door: "api", target_kind: "tool", target_name: "echo", execution_key: k.user_id, callback_url: HOOK });
}

async function verify(secret: string, body: string, header: string) {
  return header === `sha256=${toHex(await hmacSha256(secret, body))}`;
}

const rowOf = async (threadId: string, messageId: string) =>
  must(
    (await rawRows(threadId)).find((r) => r.message_id === messageId),
    "the item found",
  );

describe("signed callbacks (decisions §8)", () => {
  it("POSTs one signed callback per async answer and none for an inline one", async () => {
    const calls = fakeNetwork(() => new Response(null, { status: 204 }));
    const r = await callbackRoute();
    const a = await send(r.name, { external_user_id: "u", text: "async one" });
    expect(a.status).toBe(202);
    await eventually(
      () => readRecord(r.name, a.body.data.message_id),
      (x) => x.body.data?.status === "delivered",
    );
    const inline = await send(r.name, { external_user_id: "u", text: "inline one", wait_seconds: 10 });
    expect(inline.status).toBe(200);
    expect(inline.body.data.answer).toBe("inline one");
    const ir = await readRecord(r.name, inline.body.data.message_id);
    expect(ir.body.data).toMatchObject({ status: "delivered", attempts: 0 });
    expect(calls).toHaveLength(1);
    const c = calls[0];
    expect(c.url).toBe(HOOK);
    expect(c.method).toBe("POST");
    expect(c.headers["content-type"]).toBe("application/json");
    expect(JSON.parse(c.body)).toEqual({ message_id: a.body.data.message_id, thread_id: a.body.data.thread_id, status: "answered", answer: "async one" });
    expect(c.body).toBe(JSON.stringify(JSON.parse(c.body)));
    expect(await verify(must(r.callback_secret, "r.callback_secret"), c.body, c.headers["x-service-signature"])).toBe(true);
    expect(c.headers["x-service-signature"]).toMatch(/^sha256=[0-9a-f]{64}$/);
  });

  it("a silent answer is called back with status silent and no answer", async () => {
    const calls = fakeNetwork(() => new Response("ok"));
    const r = await callbackRoute();
    const a = await send(r.name, { external_user_id: "u", text: "  " });
    await eventually(
      () => readRecord(r.name, a.body.data.message_id),
      (x) => x.body.data?.status === "delivered",
    );
    expect(JSON.parse(calls[0].body)).toEqual({ message_id: a.body.data.message_id, thread_id: a.body.data.thread_id, status: "silent" });
  });

  it("does not follow redirects: a 3xx is a failed attempt", async () => {
    const calls = fakeNetwork(() => new Response(null, { status: 302, headers: { location: "https://elsewhere.example/" } }));
    const r = await callbackRoute();
    const a = await send(r.name, { external_user_id: "u", text: "x" });
    const rec = await eventually(
      () => readRecord(r.name, a.body.data.message_id),
      (x) => x.body.data?.attempts === 1,
    );
    expect(rec.body.data.status).toBe("pending_delivery");
    expect(calls.every((c) => c.url === HOOK)).toBe(true);
  });

  it("backs off 60, 120, 240, 480, 900, 900 … s and fails after delivery_max_attempts", async () => {
    fakeNetwork(() => new Response("nope", { status: 500 }));
    const r = await callbackRoute();
    const a = await send(r.name, { external_user_id: "u", text: "retry me" });
    const { message_id, thread_id } = a.body.data;
    await eventually(
      () => rowOf(thread_id, message_id),
      (x) => x.delivery_due_at !== null && x.delivery_lease_until === null && JSON.parse(x.record).attempts === 1,
    );
    const waits: number[] = [];
    for (let attempt = 1; attempt <= 7; attempt++) {
      const before = Date.now();
      const row = await rowOf(thread_id, message_id);
      expect(row.status).toBe("pending_delivery");
      waits.push(Math.round((must(row.delivery_due_at, "row.delivery_due_at") - before) / 1000));
      await makeDue(thread_id, "delivery_due_at");
      await runAlarm(thread_id);
    }
    expect(waits).toEqual([60, 120, 240, 480, 900, 900, 900]);
    const final = await readRecord(r.name, message_id);
    expect(final.body.data).toMatchObject({ status: "failed", attempts: 8 });
    expect(final.body.data.error).toContain("undelivered after 8 attempts");
    expect(final.body.data.expires_at).toBeTruthy();
    await listingCaughtUp(thread_id); // the failed listing trails the thread by design
    const failed = await call("GET", "/api/conversations/messages/failed?pageSize=200", { key: await admin() });
    expect(failed.status).toBe(200);
    expect(failed.body.data.items.some((x: any) => x.message_id === message_id && x.error)).toBe(true);
    const nonAdmin = await mintKey({ scopes: ["conversations"] });
    expect((await call("GET", "/api/conversations/messages/failed", { key: nonAdmin.key })).status).toBe(403);
  });

  it("a later success after failures is delivered exactly once", async () => {
    let fail = 2;
    const calls = fakeNetwork(() => (fail-- > 0 ? new Response("busy", { status: 503 }) : new Response("ok")));
    const r = await callbackRoute();
    const a = await send(r.name, { external_user_id: "u", text: "eventually" });
    const { message_id, thread_id } = a.body.data;
    for (let i = 0; i < 2; i++) {
      await eventually(
        () => rowOf(thread_id, message_id),
        (x) => JSON.parse(x.record).attempts === i + 1 && x.delivery_lease_until === null,
      );
      await makeDue(thread_id, "delivery_due_at");
      await runAlarm(thread_id);
    }
    const rec = await eventually(
      () => readRecord(r.name, message_id),
      (x) => x.body.data?.status === "delivered",
    );
    expect(rec.body.data.attempts).toBe(3);
    await runAlarm(thread_id);
    await runAlarm(thread_id);
    expect(calls).toHaveLength(3);
  });

  it("delivers a thread's answers in its order: a later answer waits while an earlier one backs off", async () => {
    let firstUp = false;
    const calls = fakeNetwork((_req, body) => {
      const answer = JSON.parse(body).answer as string;
      return new Response(null, { status: answer === "first" && !firstUp ? 503 : 204 });
    });
    const r = await callbackRoute();
    const a = await send(r.name, { external_user_id: "ordered", text: "first" });
    const { thread_id } = a.body.data;
    await eventually(
      () => rowOf(thread_id, a.body.data.message_id),
      (x) => JSON.parse(x.record).attempts === 1 && x.delivery_lease_until === null,
    );
    const b = await send(r.name, { external_user_id: "ordered", text: "second" });
    // The second answer settles, but waits behind the first, which backs off.
    const second = await eventually(
      () => rowOf(thread_id, b.body.data.message_id),
      (x) => x.turn_state === "done",
    );
    expect(second.status).toBe("pending_delivery");
    expect(JSON.parse(second.record).attempts).toBe(0);
    await runAlarm(thread_id); // nothing is due: the head's backoff has not run out
    expect(calls.map((c) => JSON.parse(c.body).answer)).toEqual(["first"]);
    // The receiver recovers and the head's retry is due: both go, in order.
    firstUp = true;
    await makeDue(thread_id, "delivery_due_at");
    await runAlarm(thread_id);
    await eventually(
      () => rowOf(thread_id, b.body.data.message_id),
      (x) => x.status === "delivered",
    );
    expect(calls.map((c) => [JSON.parse(c.body).answer, c.url])).toEqual([
      ["first", HOOK],
      ["first", HOOK],
      ["second", HOOK],
    ]);
    expect((await rowOf(thread_id, a.body.data.message_id)).status).toBe("delivered");
  });

  it("a route deleted meanwhile fails the delivery at once", async () => {
    fakeNetwork(() => new Response("down", { status: 500 }));
    const r = await callbackRoute();
    const a = await send(r.name, { external_user_id: "u", text: "orphan" });
    const { message_id, thread_id } = a.body.data;
    await eventually(
      () => rowOf(thread_id, message_id),
      (x) => JSON.parse(x.record).attempts === 1 && x.delivery_lease_until === null,
    );
    await call("DELETE", `/api/conversations/${r.name}`, { key: await admin() });
    await makeDue(thread_id, "delivery_due_at");
    await runAlarm(thread_id);
    const row = await rowOf(thread_id, message_id);
    expect(row.status).toBe("failed");
    expect(JSON.parse(row.record).error).toContain("route was deleted");
  });

  it("an eviction mid-delivery re-drives after the claim lease and never re-POSTs a recorded 2xx", async () => {
    let up = false;
    const calls = fakeNetwork(() => (up ? new Response("ok") : new Response("down", { status: 502 })));
    const r = await callbackRoute();
    const a = await send(r.name, { external_user_id: "u", text: "survive" });
    const { message_id, thread_id } = a.body.data;
    await eventually(
      () => rowOf(thread_id, message_id),
      (x) => JSON.parse(x.record).attempts === 1 && x.delivery_lease_until === null,
    );
    // Simulate a crash while the attempt was claimed: lease held, then the object is reset.
    await runInDurableObject(stubFor(thread_id), (_o, state) => {
      state.storage.sql.exec("UPDATE records SET delivery_due_at = 1, delivery_lease_until = ? WHERE message_id = ?", Date.now() + 3_600_000, message_id);
    });
    await runInDurableObject(stubFor(thread_id), (_o, state) => state.abort("simulated restart")).catch(() => undefined);
    up = true;
    await runAlarm(thread_id);
    expect((await rowOf(thread_id, message_id)).status).toBe("pending_delivery"); // lease still held
    await makeDue(thread_id, "delivery_lease_until");
    await runAlarm(thread_id);
    expect((await rowOf(thread_id, message_id)).status).toBe("delivered");
    const okCalls = calls.length;
    await runInDurableObject(stubFor(thread_id), (_o, state) => state.abort("second restart")).catch(() => undefined);
    await runAlarm(thread_id);
    expect(calls.length).toBe(okCalls);
  });

  it("a turn whose instance died is re-run once its intake lease lapses", async () => {
    const r = await callbackRoute();
    fakeNetwork(() => new Response("ok"));
    const seed = await send(r.name, { external_user_id: "lease", text: "seed", wait_seconds: 10 });
    const threadId = seed.body.data.thread_id;
    const id = crypto.randomUUID();
    await runInDurableObject(stubFor(threadId), (_o, state) => {
      const rec = state.storage.sql.exec("SELECT record, inbound FROM records LIMIT 1").one() as { record: string; inbound: string };
      const body = { ...JSON.parse(rec.record), message_id: id, status: "accepted", answer: null, answer_status: null, inbound_text: "orphaned" };
      const inbound = { ...JSON.parse(rec.inbound), message_id: id, inbound_id: id, text: "orphaned" };
      state.storage.sql.exec(
        "INSERT INTO records (message_id, record, inbound, status, turn_state, turn_lease_until) VALUES (?, ?, ?, 'accepted', 'running', ?)",
        id,
        JSON.stringify(body),
        JSON.stringify(inbound),
        Date.now() + 3_600_000,
      );
    });
    await runInDurableObject(stubFor(threadId), (_o, state) => state.abort("died mid-turn")).catch(() => undefined);
    await runAlarm(threadId);
    expect((await rowOf(threadId, id)).turn_state).toBe("running"); // lease not yet lapsed
    await makeDue(threadId, "turn_lease_until");
    await runAlarm(threadId);
    const row = await eventually(
      () => rowOf(threadId, id),
      (x) => x.status === "delivered",
    );
    expect(JSON.parse(row.record)).toMatchObject({ answer: "orphaned", answer_status: "answered" });
  });
});
