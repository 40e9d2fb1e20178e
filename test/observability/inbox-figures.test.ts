/**
 * The inbox's team figures (docs/inbox.md "Team figures") through the real doors: threads driven
 * by customers and operators, their counters carried by the listing outbox to the shards and D1,
 * and read back by `GET /api/observability/metrics` as JSON and as OpenMetrics text. The thread's
 * clock cannot be moved, so a test moves the inbox state's instants into the past instead.
 */
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { ThreadParts } from "../../src/conversations/thread/compose";
import type { InboxEvent, InboxParts } from "../../src/conversations/thread/inbox";
import { inboxCounters } from "../../src/conversations/thread/inbox-counters";
import { EMPTY_INBOX } from "../../src/conversations/model/inbox";
import { inboxFigures } from "../../src/observability/inbox-figures";
import { createRoute, echoKey, send } from "../helpers/bridge";
import { admin, call, mintKey, uniq } from "../helpers/http";
import { listingCaughtUp } from "../helpers/listing";
import { eventually, runAlarm, stubFor } from "../helpers/threads";

type Parts = { parts: ThreadParts };

async function manualRoute() {
  const k = await echoKey();
  return createRoute({ door: "api", target_kind: "tool", target_name: "echo", execution_key: k.user_id, initial_mode: "manual" });
}

async function agentRoute() {
  const k = await echoKey();
  return createRoute({ door: "api", target_kind: "tool", target_name: "echo", execution_key: k.user_id });
}

const operator = () => mintKey({ scopes: ["conversations"] });

/** One customer message, once its turn settled (the inbox learns of it at turn time). */
async function customerSays(route: string, text: string, user = uniq("cust")) {
  const r = await send(route, { text, external_user_id: user });
  expect(r.status, JSON.stringify(r.body)).toBe(202);
  const settled = await eventually(
    async () => (await call("GET", `/api/conversations/${route}/messages/${r.body.data.message_id}`, { key: await admin() })).body.data?.status,
    (s) => s !== undefined && s !== "queued" && s !== "running",
  );
  expect(settled).toBeDefined();
  return { threadId: r.body.data.thread_id as string, user };
}

async function act(route: string, verb: string, body: Record<string, unknown>, key: string) {
  const r = await call("POST", `/api/conversations/${route}/thread/${verb}`, { key, body });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.data;
}

async function reply(route: string, threadId: string, key: string) {
  const r = await call("POST", `/api/conversations/${route}/thread/messages`, { key, body: { thread_id: threadId, text: "Here to help." } });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
}

/**
 * Rewrites the thread's stored inbox state (`ago`: fields moved that many ms into the past; `drop`:
 * fields removed, as a state stored before they existed), and makes the object read it again.
 */
async function rewriteInbox(threadId: string, ago: Record<string, number>, drop: string[] = []): Promise<void> {
  await runInDurableObject(stubFor(threadId), (obj, state) => {
    const row = state.storage.sql.exec("SELECT value FROM meta WHERE key = 'inbox'").toArray()[0];
    const s = JSON.parse(String(row.value));
    for (const [k, ms] of Object.entries(ago)) s[k] = Date.now() - ms;
    for (const k of drop) delete s[k];
    state.storage.sql.exec("UPDATE meta SET value = ? WHERE key = 'inbox'", JSON.stringify(s));
    ((obj as unknown as Parts).parts.inbox as unknown as { cached: unknown }).cached = undefined;
  });
}

/**
 * Runs the object's alarm until the inbox shows `done`. The state was rewritten behind the alarm's
 * back (its instants in memory still say later), and an alarm the object armed itself (the index's
 * flush, 50 ms after a change) may be in flight and take the manual run's place; the next run then
 * acts on the rewritten state.
 */
async function alarmUntil(threadId: string, done: (s: Record<string, unknown>) => boolean): Promise<Record<string, unknown>> {
  return eventually(async () => {
    await runAlarm(threadId);
    return storedInbox(threadId);
  }, done);
}

async function storedInbox(threadId: string): Promise<Record<string, unknown>> {
  const rows = await runInDurableObject(stubFor(threadId), (_o, state) => state.storage.sql.exec("SELECT value FROM meta WHERE key = 'inbox'").toArray());
  return JSON.parse(String(rows[0].value));
}

/** The metrics once the threads' counters reached D1. */
async function metrics(threads: string[], query = "", key?: string) {
  await listingCaughtUp(...threads);
  const r = await call("GET", `/api/observability/metrics${query}`, { key: key ?? (await admin()) });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.data;
}

const routeRow = (m: any, name: string) => m.inbox.by_route.find((r: { route_name: string }) => r.route_name === name);
const operatorRow = (m: any, id: string) => m.inbox.by_operator.find((o: { user_id: string }) => o.user_id === id);

/** A time figure: `count` samples summing to `ms` plus the little the clock moved meanwhile. */
function expectTime(mean: { count: number; sum: number; avg: number | null }, count: number, ms: number) {
  expect(mean.count).toBe(count);
  expect(mean.sum).toBeGreaterThanOrEqual(ms);
  expect(mean.sum).toBeLessThan(ms + 5000 * count);
  expect(mean.avg).toBe(count ? Math.round(mean.sum / count) : null);
}

describe("the inbox's team figures", () => {
  it("first response, waiting and resolution times and resolves, by route and by operator, as JSON and OpenMetrics", async () => {
    const r = await manualRoute();
    const sam = await operator();
    const kim = await operator();
    // An idle timer, so each thread's alarm is armed and the test can fire it.
    const policy = await call("PUT", `/api/conversations/${r.name}/inbox`, { key: await admin(), body: { auto_resolve_after_seconds: 86_400 } });
    expect(policy.status).toBe(200);

    // Sam takes the first thread and answers a minute after it opened, then once more after 30 s.
    const one = await customerSays(r.name, "my parcel never came");
    await act(r.name, "claim", { thread_id: one.threadId }, sam.key);
    await rewriteInbox(one.threadId, { opened_at: 60_000, waiting_since: 60_000 });
    await reply(r.name, one.threadId, sam.key);
    await customerSays(r.name, "are you still there?", one.user);
    await rewriteInbox(one.threadId, { waiting_since: 30_000 });
    await reply(r.name, one.threadId, sam.key);
    // Kim resolves it ten minutes after it opened: it counts for Sam, who held it.
    await rewriteInbox(one.threadId, { opened_at: 600_000 });
    await act(r.name, "resolve", { thread_id: one.threadId }, kim.key);

    // Kim answers an unowned thread after two minutes; it resolves by itself five minutes after it opened.
    const two = await customerSays(r.name, "hello?");
    await rewriteInbox(two.threadId, { opened_at: 120_000, waiting_since: 120_000 });
    await reply(r.name, two.threadId, kim.key);
    await rewriteInbox(two.threadId, { opened_at: 300_000, auto_resolve_at: 1000 });
    expect((await alarmUntil(two.threadId, (s) => s.status === "resolved")).status).toBe("resolved");

    const m = await metrics([one.threadId, two.threadId]);
    const route = routeRow(m, r.name);
    expect(route).toMatchObject({ route_name: r.name, turns: 3, handoffs: 0, handoff_rate: 0, resolved: 2, auto_resolved: 1 });
    expectTime(route.first_response_ms, 2, 180_000);
    expectTime(route.waiting_ms, 3, 210_000);
    expectTime(route.resolution_ms, 2, 900_000);
    expect(route.satisfaction).toEqual({ count: 0, sum: 0, avg: null });

    const s = operatorRow(m, sam.user_id);
    expect(s).toMatchObject({ handoffs: 0, resolved: 1, auto_resolved: 0 });
    expectTime(s.first_response_ms, 1, 60_000);
    expectTime(s.waiting_ms, 2, 90_000);
    expectTime(s.resolution_ms, 1, 600_000);
    const k = operatorRow(m, kim.user_id);
    // The thread Kim answered resolved by itself with nobody holding it: no operator's resolve.
    expect(k).toMatchObject({ handoffs: 0, resolved: 0, auto_resolved: 0 });
    expectTime(k.first_response_ms, 1, 120_000);
    expectTime(k.waiting_ms, 1, 120_000);
    expect(k.resolution_ms).toEqual({ count: 0, sum: 0, avg: null });
    expect(m.inbox.total.resolved).toBeGreaterThanOrEqual(2);

    const om = await call("GET", "/api/observability/metrics", { key: await admin(), headers: { accept: "application/openmetrics-text; version=1.0.0" } });
    expect(om.status).toBe(200);
    const text = om.body as string;
    expect(text).toContain("# TYPE bridge_inbox_first_response_milliseconds summary\n# UNIT bridge_inbox_first_response_milliseconds milliseconds\n");
    expect(text).toContain(`bridge_inbox_first_response_milliseconds_count{route="${r.name}"} 2\n`);
    expect(text).toContain(`bridge_inbox_first_response_milliseconds_sum{route="${r.name}"} ${route.first_response_ms.sum}\n`);
    expect(text).toContain(`bridge_inbox_wait_milliseconds_count{route="${r.name}"} 3\n`);
    expect(text).toContain(`bridge_inbox_resolution_milliseconds_sum{route="${r.name}"} ${route.resolution_ms.sum}\n`);
    expect(text).toContain(`bridge_inbox_resolved{route="${r.name}"} 2\n`);
    expect(text).toContain(`bridge_inbox_auto_resolved{route="${r.name}"} 1\n`);
    expect(text).toContain(`bridge_inbox_handoff_ratio{route="${r.name}"} 0\n`);
    expect(text).toContain(`bridge_inbox_operator_resolved{operator="${sam.user_id}"} 1\n`);
    expect(text).toContain(`bridge_inbox_operator_first_response_milliseconds_sum{operator="${kim.user_id}"} ${k.first_response_ms.sum}\n`);
    expect(text.endsWith("# EOF\n")).toBe(true);
  });

  it("handoffs: the agent's and an operator's, the handoff rate per turn, and a route that never handed off", async () => {
    // The agent hands off through set_conversation_mode; its next message runs a silent turn.
    const tk = await mintKey({ scopes: ["tool:set_conversation_mode"] });
    const byAgent = await createRoute({
      door: "api",
      target_kind: "tool",
      target_name: "set_conversation_mode",
      execution_key: tk.user_id,
      payload_expr: "{mode: .message}",
      reply_expr: '"mode is now " + .mode',
    });
    const a = await send(byAgent.name, { external_user_id: "self", text: "manual", wait_seconds: 10 });
    expect(a.body.data.answer).toBe("mode is now manual");
    expect((await send(byAgent.name, { external_user_id: "self", text: "anyone?", wait_seconds: 10 })).body.data.status).toBe("silent");

    // Kim takes one of two conversations over with the mode door, and answers it.
    const kim = await operator();
    const r = await agentRoute();
    const taken = await customerSays(r.name, "I want a person");
    const other = await customerSays(r.name, "just browsing");
    expect((await call("PUT", `/api/conversations/${r.name}/thread/mode`, { key: kim.key, body: { thread_id: taken.threadId, mode: "manual" } })).status).toBe(
      200,
    );
    await reply(r.name, taken.threadId, kim.key);

    const quiet = await agentRoute();
    const q = await customerSays(quiet.name, "hi bot");

    const m = await metrics([a.body.data.thread_id, taken.threadId, other.threadId, q.threadId]);
    expect(routeRow(m, byAgent.name)).toMatchObject({ turns: 2, handoffs: 1, handoff_rate: 0.5 });
    const route = routeRow(m, r.name);
    expect(route).toMatchObject({ turns: 2, handoffs: 1, handoff_rate: 0.5 });
    // The first response runs from the takeover.
    expect(route.first_response_ms.count).toBe(1);
    expect(routeRow(m, quiet.name)).toMatchObject({ turns: 1, handoffs: 0, handoff_rate: 0, resolved: 0 });
    expect(operatorRow(m, kim.user_id)).toMatchObject({ handoffs: 1, first_response_ms: { count: 1 } });
    expect(m.inbox.total.handoffs).toBeGreaterThanOrEqual(2);

    // The figures are deployment-wide: a restricted caller gets none.
    const owner = await mintKey({ scopes: ["conversations", "observability:read"] });
    const owned = await mintKey({ scopes: ["conversations", "observability:read"], owner_user_id: owner.user_id });
    expect((await metrics([], "", owned.key)).inbox).toBeNull();
  });

  it("satisfaction: each numeric rating counts, for the route and for the operator who held the thread", async () => {
    const r = await manualRoute();
    const sam = await operator();
    const { threadId } = await customerSays(r.name, "thanks!");
    await act(r.name, "claim", { thread_id: threadId }, sam.key);
    // The rating arrives as a `rated` event through the inbox's emit hook, as a rating door would send it.
    await runInDurableObject(stubFor(threadId), (obj) => {
      const { parts } = obj as unknown as Parts;
      const emit = (parts.inbox as unknown as { parts: InboxParts }).parts.emit;
      const rated = (rating: number | string): InboxEvent => ({ kind: "rated", at: Date.now(), route_name: r.name, by: null, detail: { rating } });
      emit([rated(5), rated(2), rated("great")]);
    });
    const m = await metrics([threadId]);
    expect(routeRow(m, r.name).satisfaction).toEqual({ count: 2, sum: 7, avg: 3.5 });
    expect(operatorRow(m, sam.user_id).satisfaction).toEqual({ count: 2, sum: 7, avg: 3.5 });
  });

  it("the opening: set when a human takes the thread, kept through a snooze, dropped on resolve, new on reopen; a state stored before it resolves untimed", async () => {
    const r = await manualRoute();
    const sam = await operator();
    const { threadId, user } = await customerSays(r.name, "hi");
    const opened = await storedInbox(threadId);
    expect(opened.opened_at).toBeTypeOf("number");
    expect(opened.first_reply_at).toBeNull();
    await reply(r.name, threadId, sam.key);
    expect((await storedInbox(threadId)).first_reply_at).toBeTypeOf("number");

    await act(r.name, "snooze", { thread_id: threadId, seconds: 3600 }, sam.key);
    await rewriteInbox(threadId, { snoozed_until: 1000 });
    const woken = await alarmUntil(threadId, (s) => s.status !== "snoozed");
    expect(woken).toMatchObject({ status: "open", waiting_reason: "snooze_ended", opened_at: opened.opened_at });
    expect(woken.first_reply_at).not.toBeNull();

    await act(r.name, "resolve", { thread_id: threadId }, sam.key);
    expect(await storedInbox(threadId)).toMatchObject({ status: "resolved", opened_at: null, first_reply_at: null });
    await customerSays(r.name, "one more thing", user);
    const again = await storedInbox(threadId);
    expect(again).toMatchObject({ status: "open", waiting_reason: "reopened", first_reply_at: null });
    expect(again.opened_at).toBeTypeOf("number");
    await reply(r.name, threadId, sam.key);

    // A state stored before the opening existed reads it as null: its resolve counts, untimed.
    const legacy = await customerSays(r.name, "from before");
    await rewriteInbox(legacy.threadId, {}, ["opened_at", "first_reply_at"]);
    await reply(r.name, legacy.threadId, sam.key);
    await act(r.name, "resolve", { thread_id: legacy.threadId }, sam.key);

    const m = await metrics([threadId, legacy.threadId]);
    const route = routeRow(m, r.name);
    // Two first responses on the reopened thread (one per opening), none on the stored one.
    expect(route.first_response_ms.count).toBe(2);
    expect(route).toMatchObject({ resolved: 2, auto_resolved: 0 });
    expect(route.resolution_ms.count).toBe(1);
  });
});

describe("the counters and the figures (pure)", () => {
  const at = Date.UTC(2026, 0, 1, 12, 0, 30);
  const event = (kind: InboxEvent["kind"], by: string | null, detail: InboxEvent["detail"]): InboxEvent => ({ kind, at, route_name: "support", by, detail });

  it("counts by route and by operator; a resolve and a rating count for the assignee", () => {
    const held = { ...EMPTY_INBOX, assignee: "sam" };
    const counters = inboxCounters(
      [
        event("waiting", "kim", { reason: "operator" }),
        event("waiting", null, { reason: "customer_message" }),
        event("replied", "kim", { waited_ms: 4000, first_response_ms: 9000 }),
        event("resolved", "kim", { auto: 0, open_ms: 60_000 }),
        event("rated", null, { rating: 4 }),
      ],
      held,
    );
    const of = (label: string) => {
      const sums: Record<string, number> = {};
      for (const c of counters) if (c.label === label) sums[c.name] = (sums[c.name] ?? 0) + c.value;
      return sums;
    };
    expect(counters.every((c) => c.minute === Math.floor(at / 60_000))).toBe(true);
    expect(of("support")).toEqual({
      inbox_waiting: 2,
      inbox_handoff: 1,
      inbox_replied: 1,
      inbox_wait_ms: 4000,
      inbox_first_response: 1,
      inbox_first_response_ms: 9000,
      inbox_resolved: 1,
      inbox_resolution: 1,
      inbox_resolution_ms: 60_000,
      inbox_rated: 1,
      inbox_rating: 1,
      inbox_rating_sum: 4,
    });
    expect(of("operator:kim")).toEqual({ inbox_handoff: 1, inbox_replied: 1, inbox_wait_ms: 4000, inbox_first_response: 1, inbox_first_response_ms: 9000 });
    expect(of("operator:sam")).toEqual({ inbox_resolved: 1, inbox_resolution: 1, inbox_resolution_ms: 60_000, inbox_rating: 1, inbox_rating_sum: 4 });
    // An unowned thread's resolve counts for whoever resolved it; an auto-resolve of one, for nobody.
    const unowned = inboxCounters([event("resolved", "kim", { auto: 0, open_ms: null }), event("resolved", null, { auto: 1, open_ms: 5 })], EMPTY_INBOX);
    expect(unowned.filter((c) => c.label.startsWith("operator:"))).toEqual([
      { minute: Math.floor(at / 60_000), name: "inbox_resolved", label: "operator:kim", value: 1 },
    ]);
  });

  it("lists every route with turns, and a rate only where there were turns", () => {
    const f = inboxFigures(
      [
        { name: "inbox_handoff", label: "a", n: 1 },
        { name: "inbox_handoff", label: "b", n: 2 },
        { name: "inbox_first_response", label: "operator:kim", n: 3 },
        { name: "inbox_first_response_ms", label: "operator:kim", n: 1000 },
        { name: "delivery_attempts", label: "a", n: 9 },
        { name: "inbox_labelled", label: "label:vip", n: 2 },
        { name: "inbox_labelled", label: "label:billing", n: 5 },
      ],
      new Map([
        ["a", 3],
        ["c", 4],
      ]),
    );
    expect(f.by_route.map((r) => [r.route_name, r.turns, r.handoffs, r.handoff_rate])).toEqual([
      ["a", 3, 1, 0.3333],
      ["b", 0, 2, null],
      ["c", 4, 0, 0],
    ]);
    expect(f.total).toMatchObject({ turns: 7, handoffs: 3, handoff_rate: 0.4286 });
    expect(f.by_operator).toEqual([
      {
        user_id: "kim",
        handoffs: 0,
        first_response_ms: { count: 3, sum: 1000, avg: 333 },
        waiting_ms: { count: 0, sum: 0, avg: null },
        resolution_ms: { count: 0, sum: 0, avg: null },
        resolved: 0,
        auto_resolved: 0,
        satisfaction: { count: 0, sum: 0, avg: null },
      },
    ]);
    // A label's counter is neither a route nor an operator: it lists under by_label, most first.
    expect(f.by_label).toEqual([
      { label: "billing", labelled: 5 },
      { label: "vip", labelled: 2 },
    ]);
  });
});
