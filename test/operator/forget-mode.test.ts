import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createRoute, readRecord, send } from "../helpers/bridge";
import { postTwilio } from "../helpers/webhooks";
import { admin, call, mintKey } from "../helpers/http";
import { eventually, rawRows, stubFor } from "../helpers/threads";
import { ledgerRows, listingCaughtUp } from "../helpers/listing";
import {
  HOOK,
  address,
  apiAgentRoute,
  apiToolRoute,
  channelRoute,
  declareTool,
  enc,
  gate,
  getMode,
  modeRow,
  setOverrideExpiry,
  network,
  operatorSend,
  setMode,
  threadRow,
  transcript,
} from "./helpers";
import { must } from "../../src/platform/must";

const TTL_MS = 2_592_000 * 1000;

async function memory(threadId: string): Promise<Array<{ role: string; content: string }>> {
  return (stubFor(threadId) as any).checkpointRead(threadId);
}

async function forget(route: string, threadId: string, key?: string) {
  return call("DELETE", `/api/conversations/${route}/thread?thread_id=${enc(threadId)}`, { key: key ?? (await admin()) });
}

/** A tool route whose tool holds each call until the test releases it. */
async function heldToolRoute(extra: Record<string, unknown> = {}) {
  const host = `hold-${crypto.randomUUID().slice(0, 8)}.example`;
  const title = host.split(".")[0];
  await declareTool(title, `https://${host}/run`);
  const g = gate();
  const net = network({ [host]: async (kwargs) => (await g.wait(), kwargs.message ?? JSON.stringify(kwargs.event)) });
  const k = await mintKey({ scopes: [`tool:${title}`] });
  const route = await createRoute({ door: "api", target_kind: "tool", target_name: title, execution_key: k.user_id, ...extra });
  return { route, gate: g, net, host };
}

describe("thread forget (spec §4.6, decisions §10)", () => {
  it("removes records, checkpoint, indexes and the mode override; then the thread reads 404", async () => {
    const r = await apiAgentRoute();
    const a = await send(r.name, { external_user_id: "u", text: "remember me", wait_seconds: 10 });
    expect(a.body.data).toMatchObject({ status: "answered", answer: "echo: remember me" });
    const threadId = a.body.data.thread_id;
    await send(r.name, { external_user_id: "u", text: "again", wait_seconds: 10 });
    await setMode(r.name, threadId, "manual");
    expect((await memory(threadId)).length).toBe(4);
    await listingCaughtUp(threadId);
    expect(await threadRow(threadId)).not.toBeNull();
    expect((await ledgerRows("message")).filter((e) => e.thread_id === threadId)).toHaveLength(2);
    const res = await forget(r.name, threadId);
    expect(res).toMatchObject({ status: 200, body: { data: { removed: 2, route_name: r.name, thread_id: threadId } } });
    expect(await memory(threadId)).toEqual([]);
    expect(await threadRow(threadId)).toBeNull();
    expect(await modeRow(threadId)).toBeNull();
    // The message directory in the IndexShard ledgers holds nothing of the thread any more.
    expect((await ledgerRows("message")).filter((e) => e.thread_id === threadId)).toEqual([]);
    expect((await readRecord(r.name, a.body.data.message_id)).status).toBe(404);
    expect((await transcript(r.name, threadId)).status).toBe(404);
    expect(await rawRows(threadId)).toEqual([]);
    // Nothing left: still a success, removed 0.
    expect((await forget(r.name, threadId)).body.data.removed).toBe(0);
  });

  it("a valid id never seen, or on a deleted route, succeeds with removed 0", async () => {
    const r = await apiToolRoute();
    expect((await forget(r.name, `bridge:${r.name}:never-seen`)).body.data).toEqual({
      removed: 0,
      route_name: r.name,
      thread_id: `bridge:${r.name}:never-seen`,
    });
    const m = await send(r.name, { external_user_id: "u", text: "x", wait_seconds: 10 });
    await call("DELETE", `/api/conversations/${r.name}`, { key: await admin() });
    expect((await forget(r.name, m.body.data.thread_id)).body.data.removed).toBe(1);
  });

  it("refusals: 400 blank, off-route, invalid route name; 404 person thread; 403 without the write grant; 401", async () => {
    const r = await apiToolRoute();
    const key = await admin();
    expect((await call("DELETE", `/api/conversations/${r.name}/thread?thread_id=`, { key })).status).toBe(400);
    expect((await call("DELETE", `/api/conversations/${r.name}/thread`, { key })).status).toBe(400);
    expect((await forget(r.name, "bridge:other-route:someone")).status).toBe(400);
    expect((await forget(r.name, "someone")).status).toBe(400);
    expect((await forget("Bad_Route", "bridge:Bad_Route:x")).status).toBe(400);
    expect(await forget(r.name, `bridge:@person:${crypto.randomUUID()}`)).toMatchObject({ status: 404, body: { error: "person not found on this route" } });
    const reader = await mintKey({ scopes: ["conversations:read"] });
    expect((await forget(r.name, `bridge:${r.name}:x`, reader.key)).status).toBe(403);
    expect((await call("DELETE", `/api/conversations/${r.name}/thread?thread_id=${enc(`bridge:${r.name}:x`)}`)).status).toBe(401);
  });

  it("409 while a turn is in flight, and nothing is removed; succeeds once it drains", async () => {
    const { route, gate: g } = await heldToolRoute();
    const m = await send(route.name, { external_user_id: "u", text: "slow" });
    expect(m.status).toBe(202);
    const threadId = m.body.data.thread_id;
    const busy = await forget(route.name, threadId);
    expect(busy.status).toBe(409);
    expect((await rawRows(threadId)).length).toBe(1);
    g.open();
    await eventually(
      () => readRecord(route.name, m.body.data.message_id),
      (x) => x.body.data?.status === "delivered",
    );
    expect((await forget(route.name, threadId)).body.data.removed).toBe(1);
  });
});

describe("control mode doors (spec §4.7)", () => {
  it("reads the route default, then a thread override; PUT answers source thread", async () => {
    const r = await apiToolRoute();
    const manualRoute = await apiToolRoute({ initial_mode: "manual" });
    const threadId = `bridge:${r.name}:someone`;
    expect((await getMode(r.name, threadId)).body.data).toEqual({ mode: "agent", source: "route" });
    expect((await getMode(manualRoute.name, `bridge:${manualRoute.name}:x`)).body.data).toEqual({ mode: "manual", source: "route" });
    const put = await setMode(r.name, threadId, "manual");
    expect(put).toMatchObject({ status: 200, body: { data: { route_name: r.name, thread_id: threadId, mode: "manual", source: "thread" } } });
    expect((await getMode(r.name, threadId)).body.data).toEqual({ mode: "manual", source: "thread" });
    const reader = await mintKey({ scopes: ["conversations:read"] });
    expect((await getMode(r.name, threadId, reader.key)).body.data.mode).toBe("manual");
    expect((await setMode(r.name, threadId, "agent", reader.key)).status).toBe(403);
  });

  it("refusals: 404 unknown route, 400 blank or off-route thread_id, 404 person thread, 400 bad mode or body", async () => {
    const r = await apiToolRoute();
    const key = await admin();
    for (const res of [await getMode("no-such-route-m", "bridge:no-such-route-m:x"), await setMode("no-such-route-m", "bridge:no-such-route-m:x", "manual")])
      expect(res.status).toBe(404);
    expect((await call("GET", `/api/conversations/${r.name}/thread/mode?thread_id=`, { key })).status).toBe(400);
    expect((await call("GET", `/api/conversations/${r.name}/thread/mode`, { key })).status).toBe(400);
    expect((await setMode(r.name, "  ", "manual")).status).toBe(400);
    expect((await getMode(r.name, "bridge:elsewhere:x")).status).toBe(400);
    expect((await setMode(r.name, "bridge:elsewhere:x", "manual")).status).toBe(400);
    expect((await getMode(r.name, `bridge:@person:${crypto.randomUUID()}`)).status).toBe(404);
    expect((await setMode(r.name, `bridge:@person:${crypto.randomUUID()}`, "manual")).status).toBe(404);
    expect((await setMode(r.name, `bridge:${r.name}:x`, "autopilot")).status).toBe(400);
    expect(
      (await call("PUT", `/api/conversations/${r.name}/thread/mode`, { key, body: { thread_id: `bridge:${r.name}:x`, mode: "manual", address: "x" } })).status,
    ).toBe(400);
  });

  it("timeline: override, refresh on inbound and operator send, expiry back to the route default, removal by route delete", async () => {
    network();
    const r = await apiToolRoute({ callback_url: HOOK });
    const threadId = (await send(r.name, { external_user_id: "t", text: "hi", wait_seconds: 10 })).body.data.thread_id;
    const before = Date.now();
    await setMode(r.name, threadId, "manual");
    const set = await modeRow(threadId);
    expect(set).toMatchObject({ route_name: r.name, mode: "manual" });
    expect(must(set, "set").expires_at).toBeGreaterThanOrEqual(before + TTL_MS);
    expect(must(set, "set").expires_at).toBeLessThanOrEqual(Date.now() + TTL_MS);

    // An accepted inbound (async and inline) pushes the expiry to a full TTL again.
    const soon = () => setOverrideExpiry(threadId, Date.now() + 60_000);
    await soon();
    await send(r.name, { external_user_id: "t", text: "still there?" });
    expect(must(await modeRow(threadId), "modeRow(threadId)").expires_at).toBeGreaterThan(Date.now() + TTL_MS - 60_000);
    await soon();
    await send(r.name, { external_user_id: "t", text: "inline", wait_seconds: 10 });
    expect(must(await modeRow(threadId), "modeRow(threadId)").expires_at).toBeGreaterThan(Date.now() + TTL_MS - 60_000);
    // So does an operator send, which never changes the mode.
    await soon();
    expect((await operatorSend(r.name, { thread_id: threadId, text: "operator here" })).status).toBe(200);
    expect(await modeRow(threadId)).toMatchObject({ mode: "manual" });
    expect(must(await modeRow(threadId), "modeRow(threadId)").expires_at).toBeGreaterThan(Date.now() + TTL_MS - 60_000);
    expect((await getMode(r.name, threadId)).body.data).toEqual({ mode: "manual", source: "thread" });

    // Quiet past the window: the override no longer counts, and a late inbound does not revive it.
    await setOverrideExpiry(threadId, Date.now() - 1);
    expect((await getMode(r.name, threadId)).body.data).toEqual({ mode: "agent", source: "route" });
    const back = await send(r.name, { external_user_id: "t", text: "answered again", wait_seconds: 10 });
    expect(back.body.data).toMatchObject({ status: "answered", answer: "answered again" });
    expect((await getMode(r.name, threadId)).body.data.source).toBe("route");

    await setMode(r.name, threadId, "manual");
    await call("DELETE", `/api/conversations/${r.name}`, { key: await admin() });
    expect(await modeRow(threadId)).toBeNull();
  });

  it("set_conversation_mode acts on the calling turn's thread", async () => {
    const k = await mintKey({ scopes: ["tool:set_conversation_mode"] });
    const r = await createRoute({
      door: "api",
      target_kind: "tool",
      target_name: "set_conversation_mode",
      execution_key: k.user_id,
      payload_expr: "{mode: .message}",
      reply_expr: '"mode is now " + .mode',
    });
    const res = await send(r.name, { external_user_id: "self", text: "manual", wait_seconds: 10 });
    expect(res.body.data).toMatchObject({ status: "answered", answer: "mode is now manual" });
    expect((await getMode(r.name, res.body.data.thread_id)).body.data).toEqual({ mode: "manual", source: "thread" });
    // The thread is now manual: the next inbound runs no turn.
    const next = await send(r.name, { external_user_id: "self", text: "agent", wait_seconds: 10 });
    expect(next.body.data.status).toBe("silent");
    expect((await getMode(r.name, `bridge:${r.name}:other`)).body.data.source).toBe("route");
  });
});

describe("manual mode (spec §3.2)", () => {
  it("a tool target runs no turn: api inline silence, api callback status silent, channel terminal silent with nothing sent", async () => {
    const net = network();
    const inline = await apiToolRoute({ initial_mode: "manual" });
    const a = await send(inline.name, { external_user_id: "u", text: "hello?", wait_seconds: 10 });
    expect(a.body.data).toEqual({ message_id: a.body.data.message_id, thread_id: a.body.data.thread_id, status: "silent" });
    expect((await readRecord(inline.name, a.body.data.message_id)).body.data).toMatchObject({ status: "delivered", answer_status: "silent", answer: null });

    const cb = await apiToolRoute({ callback_url: HOOK });
    const first = await send(cb.name, { external_user_id: "u", text: "one", wait_seconds: 10 });
    await setMode(cb.name, first.body.data.thread_id, "manual");
    const b = await send(cb.name, { external_user_id: "u", text: "two" });
    await eventually(
      () => readRecord(cb.name, b.body.data.message_id),
      (x) => x.body.data?.status === "delivered",
    );
    expect(net.to("hooks.example.com").map((c) => JSON.parse(c.body))).toEqual([
      { message_id: b.body.data.message_id, thread_id: b.body.data.thread_id, status: "silent" },
    ]);

    const ch = await channelRoute("twilio", { initial_mode: "manual" });
    const to = address();
    const threadId = `bridge:${ch.name}:${to}`;
    const sent = await operatorSend(ch.name, { thread_id: threadId, text: "hello from an operator" });
    expect(sent.status).toBe(200);
    await eventually(
      () => rawRows(threadId),
      (rows) => rows[0]?.status === "provisional",
    );
    const res = await postTwilio({ MessageSid: `SM${crypto.randomUUID().replace(/-/g, "")}`, From: to, To: ch.identity, Body: "anyone?", NumMedia: "0" });
    expect(res.status).toBe(204);
    const rows = await eventually(
      () => rawRows(threadId),
      (x) => x.length === 2 && x[1].status === "silent",
    );
    expect(JSON.parse(rows[1].record)).toMatchObject({ status: "silent", answer_status: "silent", inbound_text: "anyone?" });
    expect(net.to("twilio.fake")).toHaveLength(1); // the operator's message only
  });

  it("an agent with memory gets the inbound appended; the operator's send lands as assistant; handing back resumes turns", async () => {
    const r = await apiAgentRoute();
    const first = await send(r.name, { external_user_id: "m", text: "hello", wait_seconds: 10 });
    const threadId = first.body.data.thread_id;
    await setMode(r.name, threadId, "manual");
    const quiet = await send(r.name, { external_user_id: "m", text: "is a human there?", wait_seconds: 10 });
    expect(quiet.body.data.status).toBe("silent");
    expect(await operatorSend(r.name, { thread_id: threadId, text: "Yes, I am." })).toMatchObject({ status: 200 });
    expect(await memory(threadId)).toEqual([
      { role: "user", content: "hello" },
      { role: "assistant", content: "echo: hello" },
      { role: "user", content: "is a human there?" },
      { role: "assistant", content: "Yes, I am." },
    ]);
    await setMode(r.name, threadId, "agent");
    const back = await send(r.name, { external_user_id: "m", text: "thanks", wait_seconds: 10 });
    expect(back.body.data).toMatchObject({ status: "answered", answer: "echo: thanks" });
    expect((await memory(threadId)).length).toBe(6);
    const page = await transcript(r.name, threadId);
    expect(page.body.data.items.map((x: any) => [x.origin, x.answer_status])).toEqual([
      ["client", "answered"],
      ["client", "silent"],
      ["operator", "answered"],
      ["client", "answered"],
    ]);
  });

  it("the mode is re-checked right before the turn runs: a takeover between accept and run silences the queued turn", async () => {
    const { route, gate: g, net, host } = await heldToolRoute();
    const one = await send(route.name, { external_user_id: "q", text: "first" });
    const two = await send(route.name, { external_user_id: "q", text: "second" });
    expect(two.status).toBe(202);
    await eventually(
      async () => net.to(host).length,
      (n) => n === 1,
    );
    await setMode(route.name, one.body.data.thread_id, "manual");
    g.open();
    const done = await eventually(
      () => readRecord(route.name, two.body.data.message_id),
      (x) => x.body.data?.status === "delivered",
    );
    expect(done.body.data).toMatchObject({ answer_status: "silent", answer: null });
    expect((await readRecord(route.name, one.body.data.message_id)).body.data).toMatchObject({ answer_status: "answered", answer: "first" });
    expect(net.to(host)).toHaveLength(1);
  });
});
