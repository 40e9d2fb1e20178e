/**
 * What the inbox says and tells (docs/inbox.md): the holding message once per handoff, the closing
 * message and the satisfaction question on a notified resolve with the rating it brings back, and
 * the conversation events POSTed signed, in order, retried, once each, through object restarts.
 * Providers and the events receiver answer through the one fake network.
 */
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { fakeNetwork, type NetCall } from "../helpers/network";
import { admin, call, mintKey, uniq } from "../helpers/http";
import { nodeHmacHex, postTwilio, postWhatsApp, whatsappText } from "../helpers/webhooks";
import { eventually, rawRows, runAlarm, stubFor } from "../helpers/threads";
import { address, channelRoute, enc, setMode } from "../operator/helpers";
import { createRoute, echoKey, send } from "../helpers/bridge";
import { queueEvents } from "../../src/conversations/thread/inbox-events-table";
import { EVENTS_QUEUE_CAP } from "../../src/conversations/thread/inbox-events";

const EVENTS = "https://events.example.com/inbox";

/**
 * The providers answer like their APIs; the events receiver answers what `events` says next
 * (204 once the script is spent).
 */
function net(events: number[] = []) {
  const calls = fakeNetwork(async (req) => {
    const host = new URL(req.url).host;
    if (host === "twilio.fake") return Response.json({ sid: `SM${crypto.randomUUID().replace(/-/g, "")}` }, { status: 201 });
    if (host === "whatsapp.fake") return Response.json({ messaging_product: "whatsapp", messages: [{ id: `wamid.${crypto.randomUUID()}` }] });
    if (host === "events.example.com") return new Response(null, { status: events.shift() ?? 204 });
    if (host === "hooks.example.com") return new Response(null, { status: 204 });
    return new Response("unexpected host", { status: 599 });
  });
  const to = (host: string) => calls.filter((c) => new URL(c.url).host === host);
  return { calls, to, events: () => to("events.example.com") };
}

async function putPolicy(route: string, body: Record<string, unknown>) {
  return call("PUT", `/api/conversations/${route}/inbox`, { key: await admin(), body });
}

async function act(route: string, verb: string, body: Record<string, unknown>) {
  return call("POST", `/api/conversations/${route}/thread/${verb}`, { key: await admin(), body });
}

async function inbox(route: string, threadId: string) {
  return (await call("GET", `/api/conversations/${route}/thread/inbox?thread_id=${enc(threadId)}`, { key: await admin() })).body.data;
}

/** Every record of the thread has finished its turn and its delivery. */
async function settledAll(threadId: string, count: number) {
  return eventually(
    () => rawRows(threadId),
    (rows) => rows.length >= count && rows.every((r) => r.turn_state === "done" && r.status !== "pending_delivery"),
    250,
  );
}

/** The SMS texts sent to `to`, in order. */
const smsTo = (calls: NetCall[], to: string) =>
  calls
    .map((c) => new URLSearchParams(c.body))
    .filter((p) => p.get("To") === to)
    .map((p) => p.get("Body"));

async function sms(route: { identity: string }, from: string, text: string) {
  const res = await postTwilio({ MessageSid: `SM${crypto.randomUUID().replace(/-/g, "")}`, From: from, To: route.identity, Body: text, NumMedia: "0" });
  expect(res.status).toBeLessThan(300);
}

async function queued(threadId: string): Promise<Array<{ seq: number; attempts: number; due_at: number; lease_until: number | null }>> {
  return runInDurableObject(
    stubFor(threadId),
    (_o, state) => state.storage.sql.exec("SELECT seq, attempts, due_at, lease_until FROM inbox_events ORDER BY seq").toArray() as any,
  );
}

async function makeEventsDue(threadId: string) {
  await runInDurableObject(stubFor(threadId), (_o, state) => {
    state.storage.sql.exec("UPDATE inbox_events SET due_at = 1, lease_until = NULL");
  });
}

async function restart(threadId: string) {
  await runInDurableObject(stubFor(threadId), (_o, state) => state.abort("simulated restart")).catch(() => undefined);
}

describe("the holding message", () => {
  it("goes to the customer once per handoff, as the inbox's record, and leaves the wait as it was", async () => {
    const n = net();
    const r = await channelRoute("twilio");
    expect((await putPolicy(r.name, { holding_message: "A person will answer you shortly." })).status).toBe(200);
    const them = address();
    const threadId = `bridge:${r.name}:${them}`;
    await sms(r, them, "I want a human");
    await settledAll(threadId, 1);

    expect((await setMode(r.name, threadId, "manual")).status).toBe(200);
    const rows = await settledAll(threadId, 2);
    expect(smsTo(n.to("twilio.fake"), them)).toEqual(["I want a human", "A person will answer you shortly."]);
    const holding = JSON.parse(rows[1].record);
    expect(holding).toMatchObject({ origin: "operator", submitted_by: "inbox", caller_principal: "inbox", answer: "A person will answer you shortly." });
    // Not a human's answer: the customer still waits, since the handoff.
    const view = await inbox(r.name, threadId);
    expect(view).toMatchObject({ status: "open", waiting_reason: "operator", last_reply_at: null });
    expect(view.waiting_since).not.toBeNull();

    // The same handoff again sends nothing; a new handoff (after the agent had it back) sends it again.
    expect((await setMode(r.name, threadId, "manual")).status).toBe(200);
    expect((await rawRows(threadId)).length).toBe(2);
    expect((await setMode(r.name, threadId, "agent")).status).toBe(200);
    expect((await setMode(r.name, threadId, "manual")).status).toBe(200);
    await settledAll(threadId, 3);
    expect(smsTo(n.to("twilio.fake"), them)).toEqual(["I want a human", "A person will answer you shortly.", "A person will answer you shortly."]);
  });

  it("follows the agent's own handoff too, ahead of that turn's answer", async () => {
    const n = net();
    const k = await mintKey({ scopes: ["tool:set_conversation_mode"] });
    const r = await channelRoute("twilio", {
      target_name: "set_conversation_mode",
      execution_key: k.user_id,
      payload_expr: "{mode: .message}",
      reply_expr: '"mode is now " + .mode',
    });
    await putPolicy(r.name, { holding_message: "Hold on, a person is coming." });
    const them = address();
    const threadId = `bridge:${r.name}:${them}`;
    await sms(r, them, "manual");
    await settledAll(threadId, 2);
    expect(smsTo(n.to("twilio.fake"), them)).toEqual(["Hold on, a person is coming.", "mode is now manual"]);
    expect(await inbox(r.name, threadId)).toMatchObject({ status: "open", waiting_reason: "agent_handoff" });
  });

  it("is not sent to a thread with no address yet", async () => {
    const n = net();
    const r = await channelRoute("twilio");
    await putPolicy(r.name, { holding_message: "Hold on." });
    const threadId = `bridge:${r.name}:${address()}`;
    expect((await setMode(r.name, threadId, "manual")).status).toBe(200);
    expect(await rawRows(threadId)).toEqual([]);
    expect(n.to("twilio.fake")).toEqual([]);
  });
});

describe("resolve with notify", () => {
  it("sends the closing message and a 1-5 question with options; the tapped answer is the rating, does not reopen, and is POSTed", async () => {
    const n = net();
    const r = await channelRoute("whatsapp", { initial_mode: "manual" });
    const put = await putPolicy(r.name, { closing_message: "Thanks, we are closing this conversation.", events_url: EVENTS });
    expect(put.status).toBe(200);
    // A channel route has no callback secret: its events are signed with one minted for them, shown once.
    const secret: string = put.body.data.events_secret;
    expect(secret).toMatch(/^[A-Za-z0-9_-]{43}$/);
    expect((await call("GET", `/api/conversations/${r.name}/inbox`, { key: await admin() })).body.data.events_secret).toBeUndefined();
    expect((await putPolicy(r.name, { closing_message: "Thanks, we are closing this conversation.", events_url: EVENTS })).body.data.events_secret).toBeNull();

    const them = address().slice(1);
    const threadId = `bridge:${r.name}:${them}`;
    expect((await postWhatsApp(whatsappText(r.identity, them, `wamid.${uniq("in")}`, "my parcel is lost"))).status).toBe(200);
    await settledAll(threadId, 1);
    const resolved = await act(r.name, "resolve", { thread_id: threadId, notify: true });
    expect(resolved.status).toBe(200);
    expect(resolved.body.data).toMatchObject({ status: "resolved", rating: null });
    await settledAll(threadId, 3);
    const sent = n.to("whatsapp.fake").map((c) => c.json);
    expect(sent[0]).toMatchObject({ to: them, type: "text", text: { body: "Thanks, we are closing this conversation." } });
    expect(sent[1]).toMatchObject({ to: them, type: "interactive", interactive: { type: "list" } });
    const rows = sent[1].interactive.action.sections[0].rows;
    expect(rows.map((x: { id: string; title: string }) => [x.id, x.title])).toEqual([
      ["rating-1", "1"],
      ["rating-2", "2"],
      ["rating-3", "3"],
      ["rating-4", "4"],
      ["rating-5", "5"],
    ]);

    // The customer taps "4".
    const tap = whatsappText(r.identity, them, `wamid.${uniq("tap")}`, "");
    tap.entry[0].changes[0].value.messages[0] = {
      from: them,
      id: `wamid.${uniq("tap")}`,
      timestamp: "1700000001",
      type: "interactive",
      interactive: { type: "list_reply", list_reply: { id: "rating-4", title: "4" } },
    } as any;
    expect((await postWhatsApp(tap)).status).toBe(200);
    await settledAll(threadId, 4);
    const after = await inbox(r.name, threadId);
    expect(after).toMatchObject({ status: "resolved", rating: 4, waiting_since: null });
    expect(after.rated_at).not.toBeNull();
    // Nobody answered the rating, and the thread did not reopen.
    expect(n.to("whatsapp.fake")).toHaveLength(2);

    const posted = await eventually(
      async () => n.events().map((c) => c.json),
      (e) => e.some((x: { event: string }) => x.event === "rated"),
    );
    expect(posted.map((e: { event: string }) => e.event)).toEqual(["waiting", "resolved", "rated"]);
    expect(posted[2]).toMatchObject({ event: "rated", route_name: r.name, thread_id: threadId, by: null, detail: { rating: 4 } });
    for (const c of n.events()) expect(c.headers["x-service-signature"]).toBe(`sha256=${nodeHmacHex("sha256", secret, c.body)}`);

    // A second "5" is no rating any more: it reopens the thread as any message does.
    expect((await postWhatsApp(whatsappText(r.identity, them, `wamid.${uniq("in")}`, "5"))).status).toBe(200);
    await eventually(
      () => inbox(r.name, threadId),
      (v) => v.status === "open",
    );
    expect((await inbox(r.name, threadId)).rating).toBe(4);
  });

  it("on an SMS route the question goes as text and a number reply rates", async () => {
    const n = net();
    const r = await channelRoute("twilio", { initial_mode: "manual" });
    await putPolicy(r.name, { closing_message: "Bye!" });
    const them = address();
    const threadId = `bridge:${r.name}:${them}`;
    await sms(r, them, "help");
    await settledAll(threadId, 1);
    await act(r.name, "resolve", { thread_id: threadId, notify: true });
    await settledAll(threadId, 3);
    expect(smsTo(n.to("twilio.fake"), them)).toEqual(["Bye!", "How did we do? Reply with a number from 1 (poor) to 5 (excellent)."]);
    await sms(r, them, " 2 ");
    await settledAll(threadId, 4);
    expect(await inbox(r.name, threadId)).toMatchObject({ status: "resolved", rating: 2 });
  });
});

describe("conversation events", () => {
  async function apiManualRoute() {
    const k = await echoKey();
    return createRoute({
      door: "api",
      target_kind: "tool",
      target_name: "echo",
      execution_key: k.user_id,
      initial_mode: "manual",
      callback_url: "https://hooks.example.com/answers",
    });
  }

  it("are POSTed signed with the route's callback secret, in order, retried after a 500 and never again after a 2xx, also across a restart", async () => {
    const n = net([500]);
    const r = await apiManualRoute();
    const put = await putPolicy(r.name, { events_url: EVENTS });
    expect(put.status).toBe(200);
    // The route's callback secret signs them: nothing is minted.
    expect(put.body.data.events_secret).toBeNull();
    const res = await send(r.name, { text: "hello", external_user_id: uniq("cust") });
    expect(res.status).toBe(202);
    const threadId: string = res.body.data.thread_id;

    // The first POST (waiting) answers 500: it stays queued, and the claim, assignment and note wait behind it.
    await eventually(
      async () => n.events().length,
      (c) => c >= 1,
    );
    expect((await act(r.name, "claim", { thread_id: threadId })).status).toBe(200);
    expect((await act(r.name, "snooze", { thread_id: threadId, seconds: 3600 })).status).toBe(200);
    const held = await queued(threadId);
    expect(held.map((e) => e.attempts)).toEqual([1, 0, 0]);
    expect(held[0].due_at).toBeGreaterThan(Date.now() + 30_000);
    expect(n.events()).toHaveLength(1);

    // The object restarts; its alarm, once the retry is due, sends the three in order.
    await restart(threadId);
    await makeEventsDue(threadId);
    await runAlarm(threadId);
    const bodies = n.events().map((c) => c.json);
    expect(bodies.map((b: { event: string }) => b.event)).toEqual(["waiting", "waiting", "assigned", "snoozed"]);
    expect(bodies[1]).toEqual({
      event: "waiting",
      route_name: r.name,
      thread_id: threadId,
      at: bodies[0].at,
      by: null,
      detail: { reason: "customer_message" },
    });
    expect(bodies[2]).toMatchObject({ event: "assigned", by: "root", detail: { assignee: "root", previous: null } });
    for (const c of n.events()) expect(c.headers["x-service-signature"]).toBe(`sha256=${nodeHmacHex("sha256", r.callback_secret as string, c.body)}`);
    expect(await queued(threadId)).toEqual([]);

    // Nothing is sent twice: another firing, and another restart, find nothing queued.
    await restart(threadId);
    await runAlarm(threadId);
    expect(n.events()).toHaveLength(4);
  });

  it("the queue keeps the newest 200 events of a thread, dropping the oldest", async () => {
    const threadId = `bridge:${uniq("cap").toLowerCase()}:someone`;
    const left = await runInDurableObject(stubFor(threadId), (_o, state) => {
      const rows = Array.from({ length: 205 }, (_, i) => ({ route_name: "r", body: JSON.stringify({ n: i }) }));
      const dropped = queueEvents(state.storage, rows, Date.now(), EVENTS_QUEUE_CAP);
      const kept = state.storage.sql.exec("SELECT body FROM inbox_events ORDER BY seq").toArray();
      state.storage.sql.exec("DELETE FROM inbox_events");
      return { dropped, count: kept.length, first: JSON.parse(String(kept[0].body)).n };
    });
    expect(left).toEqual({ dropped: 5, count: 200, first: 5 });
  });

  it("events_url is refused at PUT when it is not https or the outbound address guard refuses it", async () => {
    const r = await apiManualRoute();
    const local = await putPolicy(r.name, { events_url: "https://127.0.0.1/events" });
    expect(local.status).toBe(400);
    expect(JSON.stringify(local.body)).toContain("events_url");
    expect((await putPolicy(r.name, { events_url: "http://events.example.com/x" })).status).toBe(400);
    expect((await putPolicy(r.name, { events_url: "https://localhost/x" })).status).toBe(400);
  });

  it("a route without events_url queues nothing for long, and a forget clears the queue", async () => {
    const n = net([500, 500, 500]);
    const r = await apiManualRoute();
    const res = await send(r.name, { text: "hello", external_user_id: uniq("cust") });
    const threadId: string = res.body.data.thread_id;
    await eventually(
      () => inbox(r.name, threadId),
      (v) => v?.waiting_since != null,
    );
    await eventually(
      () => queued(threadId),
      (q) => q.length === 0,
    );
    expect(n.events()).toEqual([]);

    await putPolicy(r.name, { events_url: EVENTS });
    expect((await act(r.name, "claim", { thread_id: threadId })).status).toBe(200);
    await eventually(
      () => queued(threadId),
      (q) => q.length === 1 && q[0].attempts === 1,
    );
    const forgot = await call("DELETE", `/api/conversations/${r.name}/thread?thread_id=${enc(threadId)}`, { key: await admin() });
    expect(forgot.status).toBe(200);
    expect(await queued(threadId)).toEqual([]);
  });
});
