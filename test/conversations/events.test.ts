import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createRoute, readRecord, send } from "../helpers/bridge";
import { call, mintKey } from "../helpers/http";
import { ledgerRows } from "../helpers/listing";
import { eventually, rawRows, stubFor } from "../helpers/threads";
import { HOOK, address, apiAgentRoute, channelRoute, declareTool, gate, network, operatorSend, postEvent, setMode } from "../operator/helpers";
import { must } from "../../src/platform/must";

/** An api route to an HTTP tool that answers with its kwargs as JSON text (optionally held). */
async function mirrorRoute(extra: Record<string, unknown> = {}, opts: { hold?: boolean } = {}) {
  const host = `mirror-${crypto.randomUUID().slice(0, 8)}.example`;
  const title = host.split(".")[0];
  await declareTool(title, `https://${host}/run`);
  const g = gate();
  if (!opts.hold) g.open();
  const net = network({ [host]: async (kwargs) => (await g.wait(), JSON.stringify(kwargs)) });
  const k = await mintKey({ scopes: [`tool:${title}`] });
  const route = await createRoute({ door: "api", target_kind: "tool", target_name: title, execution_key: k.user_id, ...extra });
  return { route, net, host, gate: g };
}

const ev = (event_id: string, extra: Record<string, unknown> = {}) => ({ event_id, kind: "order.paid", payload: { order: 42 }, ...extra });

/** The route's live event dedupe claims (IndexShard ledgers). */
async function dedupeRows(route: string) {
  return (await ledgerRows(`event:${route}`)).map((r) => ({ dedupe_key: r.key, message_id: r.message_id }));
}

describe("event door body and refusals (spec §4.4, §7)", () => {
  it.each([
    ["both address and thread_id", { address: "u", thread_id: "bridge:x:y", event: ev("e") }, "address"],
    ["neither address nor thread_id", { event: ev("e") }, "thread_id"],
    ["a blank address", { address: "  ", event: ev("e") }, "address"],
    ["a blank thread_id", { thread_id: "", event: ev("e") }, "thread_id"],
    ["no event", { address: "u" }, "event"],
    ["no event_id", { address: "u", event: { kind: "k", payload: {} } }, "event_id"],
    ["a blank event_id", { address: "u", event: ev("   ") }, "event_id"],
    ["an event_id over 256 characters", { address: "u", event: ev("e".repeat(257)) }, "event_id"],
    ["a malformed kind", { address: "u", event: ev("e", { kind: "order paid!" }) }, "kind"],
    ["an empty kind", { address: "u", event: ev("e", { kind: "" }) }, "kind"],
    ["a kind over 128 characters", { address: "u", event: ev("e", { kind: "k".repeat(129) }) }, "kind"],
    ["no payload", { address: "u", event: { event_id: "e", kind: "k" } }, "payload"],
    ["a non-object payload", { address: "u", event: ev("e", { payload: [1] }) }, "payload"],
    ["an over-bound payload", { address: "u", event: ev("e", { payload: { big: "SECRETVALUE".repeat(4000) } }) }, "payload"],
    ["an unknown body key", { address: "u", event: ev("e"), callback_url: "https://x.example" }, "callback_url"],
    ["an unknown event key", { address: "u", event: ev("e", { source: "x" }) }, "source"],
    ["a negative wait_seconds", { address: "u", event: ev("e"), wait_seconds: -1 }, "wait_seconds"],
  ])("400 for %s, never echoing values", async (_what, body, field) => {
    const { route } = await mirrorRoute();
    const res = await postEvent(route.name, body);
    expect(res.status).toBe(400);
    expect(res.body.error).toContain(field);
    expect(res.body.error).not.toContain("SECRETVALUE");
  });

  it("a 256-character event_id (after trimming) is admitted", async () => {
    const { route } = await mirrorRoute();
    await send(route.name, { external_user_id: "u", text: "seed", wait_seconds: 10 });
    const res = await postEvent(route.name, { address: "u", event: ev(` ${"e".repeat(256)} `) });
    expect(res.status).toBe(202);
    await eventually(
      () => readRecord(route.name, res.body.data.message_id),
      (x) => x.body.data?.status === "delivered",
    );
  });

  it("401, 403 without the write grant, 404 unknown route, 409 an agent target, 404 a thread the route does not hold", async () => {
    const { route } = await mirrorRoute();
    const seeded = await send(route.name, { external_user_id: "known", text: "seed", wait_seconds: 10 });
    expect((await call("POST", `/api/conversations/${route.name}/events`, { body: { address: "known", event: ev("a") } })).status).toBe(401);
    const reader = await mintKey({ scopes: ["conversations:read"] });
    expect((await postEvent(route.name, { address: "known", event: ev("a") }, reader.key)).status).toBe(403);
    expect((await postEvent("no-such-route-e", { address: "known", event: ev("a") })).status).toBe(404);
    const agent = await apiAgentRoute();
    const agentThread = (await send(agent.name, { external_user_id: "known", text: "hi", wait_seconds: 10 })).body.data.thread_id;
    expect((await postEvent(agent.name, { thread_id: agentThread, event: ev("a") })).status).toBe(409);
    expect((await postEvent(route.name, { address: "stranger", event: ev("a") })).status).toBe(404);
    expect((await postEvent(route.name, { thread_id: `bridge:${route.name}:root/stranger`, event: ev("a") })).status).toBe(404);
    expect((await postEvent(route.name, { thread_id: "bridge:other-route:known", event: ev("a") })).status).toBe(400);
    expect((await postEvent(route.name, { thread_id: `bridge:@person:${crypto.randomUUID()}`, event: ev("a") })).status).toBe(404);
    // By address, an api route qualifies the address by the caller: another caller does not reach it.
    const other = await mintKey({ scopes: ["conversations"] });
    expect((await postEvent(route.name, { address: "known", event: ev("b") }, other.key)).status).toBe(404);
    // By thread_id any writer of the route reaches it.
    const byId = await postEvent(route.name, { thread_id: seeded.body.data.thread_id, event: ev("b") }, other.key);
    expect(byId.status).toBe(202);
    await eventually(
      () => readRecord(route.name, byId.body.data.message_id),
      (x) => x.body.data?.status === "delivered",
    );
    // Refusals wrote nothing.
    expect((await dedupeRows(route.name)).map((r: any) => r.dedupe_key)).toEqual(["b"]);
  });
});

describe("event turns (spec §4.2, §4.4, §6)", () => {
  it("the tool sees the event payload: message and sender null, event, inbound.source event:<kind>; the record is an event record", async () => {
    const { route } = await mirrorRoute();
    const caller = await mintKey({ scopes: ["conversations"] });
    await send(route.name, { external_user_id: "buyer", text: "seed", wait_seconds: 10 }, caller.key);
    const res = await postEvent(route.name, { address: " buyer ", event: ev(" evt-1 "), wait_seconds: 10 }, caller.key);
    expect(res.status).toBe(200);
    expect(res.body.data.status).toBe("answered");
    const kwargs = JSON.parse(res.body.data.answer);
    expect(kwargs).toEqual({
      message: null,
      sender: null,
      turn: {
        id: res.body.data.message_id,
        inbound: { kind: "event", id: "evt-1", source: "event:order.paid" },
        subject: expect.objectContaining({ target_kind: "tool", person: null, locale: null }),
      },
      event: { id: "evt-1", kind: "order.paid", payload: { order: 42 } },
    });
    const rec = await readRecord(route.name, res.body.data.message_id);
    expect(rec.body.data).toMatchObject({
      inbound_kind: "event",
      inbound_text: "",
      inbound_event: { id: "evt-1", kind: "order.paid", payload: { order: 42 } },
      submitted_by: caller.user_id,
      origin: "client",
      client_address: "buyer",
      status: "delivered",
    });
  });

  it("payload_expr sees the whole spec §4.2 payload of an event turn", async () => {
    const k = await mintKey({ scopes: ["tool:echo"] });
    const route = await createRoute({ door: "api", target_kind: "tool", target_name: "echo", execution_key: k.user_id, payload_expr: "{message: tojson}" });
    const seed = await send(route.name, { external_user_id: "p", text: "seed", wait_seconds: 10 });
    const res = await postEvent(route.name, { thread_id: seed.body.data.thread_id, event: ev("p-1", { kind: "ticket:closed" }), wait_seconds: 10 });
    expect(JSON.parse(res.body.data.answer)).toEqual({
      message: null,
      sender: null,
      our_identity: null,
      channel: null,
      thread_id: seed.body.data.thread_id,
      turn: {
        id: res.body.data.message_id,
        inbound: { kind: "event", id: "p-1", source: "event:ticket:closed" },
        subject: expect.objectContaining({ thread: seed.body.data.thread_id }),
      },
      event: { id: "p-1", kind: "ticket:closed", payload: { order: 42 } },
    });
  });

  it("is idempotent per route on event_id: same message_id, one turn, one signed callback", async () => {
    const { route, net, host } = await mirrorRoute({ callback_url: HOOK });
    const seed = await send(route.name, { external_user_id: "u", text: "seed", wait_seconds: 10 });
    const body = { thread_id: seed.body.data.thread_id, event: ev("pay-77") };
    const one = await postEvent(route.name, body);
    const two = await postEvent(route.name, body);
    expect(one.status).toBe(202);
    expect(two).toMatchObject({ status: 202, body: { data: { message_id: one.body.data.message_id, thread_id: seed.body.data.thread_id } } });
    await eventually(
      () => readRecord(route.name, one.body.data.message_id),
      (x) => x.body.data?.status === "delivered",
    );
    const three = await postEvent(route.name, { ...body, wait_seconds: 5 }, (await mintKey({ scopes: ["conversations"] })).key);
    expect(three).toMatchObject({ status: 202, body: { data: { message_id: one.body.data.message_id } } });
    expect(net.to(host)).toHaveLength(2); // the seed message and one event turn
    const hooks = net.to("hooks.example.com").map((c) => JSON.parse(c.body));
    expect(hooks.filter((h) => h.message_id === one.body.data.message_id)).toHaveLength(1);
    expect((await rawRows(seed.body.data.thread_id)).length).toBe(2);
    // Another route keeps its own namespace.
    const other = await mirrorRoute();
    const seed2 = await send(other.route.name, { external_user_id: "u", text: "seed", wait_seconds: 10 });
    const elsewhere = await postEvent(other.route.name, { thread_id: seed2.body.data.thread_id, event: ev("pay-77") });
    expect(elsewhere.status).toBe(202);
    expect(elsewhere.body.data.message_id).not.toBe(one.body.data.message_id);
    await eventually(
      () => readRecord(other.route.name, elsewhere.body.data.message_id),
      (x) => x.body.data?.status === "delivered",
    );
  });

  it("is ordered behind a turn already in flight on the thread", async () => {
    const { route, net, host, gate: g } = await mirrorRoute({}, { hold: true });
    const first = await send(route.name, { external_user_id: "o", text: "first in line" });
    await eventually(
      async () => net.to(host).length,
      (n) => n === 1,
    );
    const e = await postEvent(route.name, { thread_id: first.body.data.thread_id, event: ev("late") });
    expect(e.status).toBe(202);
    const waiting = must(
      (await rawRows(first.body.data.thread_id)).find((r) => r.message_id === e.body.data.message_id),
      "the item found",
    );
    expect(waiting.turn_state).toBe("queued");
    expect(net.to(host)).toHaveLength(1);
    g.open();
    await eventually(
      () => readRecord(route.name, e.body.data.message_id),
      (x) => x.body.data?.status === "delivered",
    );
    const seen = net.to(host).map((c) => JSON.parse(c.body));
    expect(seen.map((k) => (k.event ? `event:${k.event.id}` : k.message))).toEqual(["first in line", "event:late"]);
  });

  it("a refused admission never burns the key: 429 over the rate cap, 503 on a full queue", async () => {
    const { route } = await mirrorRoute({ turns_per_hour_override: 1 });
    const caller = await mintKey({ scopes: ["conversations"] });
    const seed = await send(route.name, { external_user_id: "r", text: "seed", wait_seconds: 10 }, caller.key);
    const threadId = seed.body.data.thread_id;
    const capped = await postEvent(route.name, { thread_id: threadId, event: ev("retry-me") }, caller.key);
    expect(capped.status).toBe(429);
    expect(capped.headers.get("retry-after")).toBeTruthy();
    expect(await dedupeRows(route.name)).toEqual([]);
    expect((await rawRows(threadId)).length).toBe(1);

    // Fill the thread's queue to its depth behind a live running turn.
    await runInDurableObject(stubFor(threadId), (_obj, state) => {
      const row = state.storage.sql.exec("SELECT record, inbound FROM records LIMIT 1").one() as { record: string; inbound: string };
      for (let i = 0; i < 21; i++) {
        const id = `filler-${i}`;
        state.storage.sql.exec(
          "INSERT INTO records (message_id, record, inbound, status, turn_state, turn_lease_until) VALUES (?, ?, ?, 'accepted', ?, ?)",
          id,
          JSON.stringify({ ...JSON.parse(row.record), message_id: id, status: "accepted" }),
          row.inbound,
          i === 0 ? "running" : "queued",
          i === 0 ? Date.now() + 3_600_000 : null,
        );
      }
    });
    const full = await postEvent(route.name, { thread_id: threadId, event: ev("retry-me") });
    expect(full.status).toBe(503);
    expect(await dedupeRows(route.name)).toEqual([]);
    await runInDurableObject(stubFor(threadId), (_obj, state) => {
      state.storage.sql.exec("DELETE FROM records WHERE message_id LIKE 'filler-%'");
    });
    // (Each refused attempt above spent its caller's token; a fresh caller retries.)
    const later = await postEvent(
      route.name,
      { thread_id: threadId, event: ev("retry-me"), wait_seconds: 10 },
      (await mintKey({ scopes: ["conversations"] })).key,
    );
    expect(later.status).toBe(200);
    expect(JSON.parse(later.body.data.answer).event.id).toBe("retry-me");
    expect((await dedupeRows(route.name)).map((r: any) => r.message_id)).toEqual([later.body.data.message_id]);
  });

  it("a manual thread runs no event turn (silence)", async () => {
    const { route, net, host } = await mirrorRoute();
    const seed = await send(route.name, { external_user_id: "m", text: "seed", wait_seconds: 10 });
    await setMode(route.name, seed.body.data.thread_id, "manual");
    const res = await postEvent(route.name, { thread_id: seed.body.data.thread_id, event: ev("quiet"), wait_seconds: 10 });
    expect(res.body.data.status).toBe("silent");
    expect(net.to(host)).toHaveLength(1);
  });

  it("on a channel route: composed like the channel door, answered by a channel send to the thread's address", async () => {
    const net = network();
    const r = await channelRoute("twilio", { payload_expr: '{message: ("event " + .event.kind + " for " + (.event.payload.order | tostring))}' });
    const them = address();
    const threadId = `bridge:${r.name}:${them}`;
    expect((await postEvent(r.name, { address: them, event: ev("c-1") })).status).toBe(404); // never creates a thread
    const op = await operatorSend(r.name, { thread_id: threadId, text: "Welcome" });
    await eventually(
      () => rawRows(threadId),
      (x) => x[0]?.status === "provisional",
    );
    const res = await postEvent(r.name, { address: ` ${them} `, event: ev("c-1"), wait_seconds: 10 });
    expect(res.status).toBe(202);
    expect(res.body.data.thread_id).toBe(threadId);
    await eventually(
      () => rawRows(threadId),
      (x) => x.find((row) => row.message_id === res.body.data.message_id)?.status === "provisional",
    );
    const bodies = net.to("twilio.fake").map((c) => Object.fromEntries(new URLSearchParams(c.body)));
    expect(bodies).toEqual([
      { To: them, From: r.identity, Body: "Welcome" },
      { To: them, From: r.identity, Body: "event order.paid for 42" },
    ]);
    expect(op.status).toBe(200);
  });
});
