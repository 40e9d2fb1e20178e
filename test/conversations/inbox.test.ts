/**
 * The inbox state of a thread (docs/inbox.md), through the real doors and the thread object: a
 * customer handed to a human waits, a claim is a compare-and-set, resolve/snooze/reopen, labels,
 * the waiting alert through restarts, the route's policy, and forget.
 */
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { flushListings } from "../../src/shards/listing-table";
import { createRoute, echoKey, send } from "../helpers/bridge";
import { admin, call, mintKey, uniq } from "../helpers/http";
import { eventually, makeDue, runAlarm, stubFor } from "../helpers/threads";

const enc = encodeURIComponent;

async function manualRoute(extra: Record<string, unknown> = {}) {
  const k = await echoKey();
  return createRoute({ door: "api", target_kind: "tool", target_name: "echo", execution_key: k.user_id, initial_mode: "manual", ...extra });
}

async function agentRoute() {
  const k = await echoKey();
  return createRoute({ door: "api", target_kind: "tool", target_name: "echo", execution_key: k.user_id });
}

async function operator() {
  return mintKey({ scopes: ["conversations"] });
}

async function inbox(route: string, threadId: string, key?: string) {
  return call("GET", `/api/conversations/${route}/thread/inbox?thread_id=${enc(threadId)}`, { key: key ?? (await admin()) });
}

async function act(route: string, verb: string, body: Record<string, unknown>, key?: string) {
  return call("POST", `/api/conversations/${route}/thread/${verb}`, { key: key ?? (await admin()), body });
}

/** Sends one customer message and waits until its turn settled (the inbox learns of it at turn time). */
async function customerSays(route: string, text: string, externalUser = uniq("cust")) {
  const r = await send(route, { text, external_user_id: externalUser });
  expect(r.status).toBe(202);
  const threadId: string = r.body.data.thread_id;
  await eventually(
    () => readRecordStatus(route, r.body.data.message_id),
    (s) => s !== null && s !== "queued" && s !== "running",
  );
  return { threadId, externalUser, messageId: r.body.data.message_id as string };
}

async function readRecordStatus(route: string, messageId: string): Promise<string | null> {
  const r = await call("GET", `/api/conversations/${route}/messages/${messageId}`, { key: await admin() });
  return r.status === 200 ? r.body.data.status : null;
}

async function storedInbox(threadId: string): Promise<Record<string, unknown> | null> {
  const rows = await runInDurableObject(stubFor(threadId), (_o, state) => state.storage.sql.exec("SELECT value FROM meta WHERE key = 'inbox'").toArray());
  return rows.length ? JSON.parse(String(rows[0].value)) : null;
}

/** Moves one of the inbox's timers into the past, as the thread's clock moving on would. */
async function makeInboxDue(threadId: string, field: "sla_due_at" | "snoozed_until" | "auto_resolve_at"): Promise<void> {
  await runInDurableObject(stubFor(threadId), (_o, state) => {
    const row = state.storage.sql.exec("SELECT value FROM meta WHERE key = 'inbox'").toArray()[0];
    const s = JSON.parse(String(row.value));
    state.storage.sql.exec("UPDATE meta SET value = ? WHERE key = 'inbox'", JSON.stringify({ ...s, [field]: Date.now() - 1000 }));
  });
}

/** The thread's listing row once it shows `check` (the thread pushes it to its shard in the background). */
async function listingRow(threadId: string, check: (row: any) => boolean = (row) => row !== null) {
  return eventually(
    async () => {
      await flushListings(env);
      return env.DB.prepare("SELECT inbox_status, assignee, waiting_since, labels FROM threads WHERE thread_id = ?").bind(threadId).first<any>();
    },
    (row) => row !== null && check(row),
  );
}

async function feed(): Promise<Array<{ message: string; audience?: string }>> {
  const r = await call("GET", "/api/notifications", { key: await admin() });
  expect(r.status).toBe(200);
  return r.body.data.notifications;
}

describe("the inbox", () => {
  it("a customer on a manual route waits for a human, the listing shows it, and an operator's answer ends the wait", async () => {
    const r = await manualRoute();
    const { threadId } = await customerSays(r.name, "I need a person");
    const view = await eventually(
      () => inbox(r.name, threadId),
      (v) => v.body?.data?.waiting_since != null,
    );
    expect(view.status).toBe(200);
    expect(view.body.data).toMatchObject({ thread_id: threadId, status: "open", waiting_reason: "customer_message", assignee: null, sla_stage: "none" });
    expect(view.body.data.sla_due_at).not.toBeNull();
    const row = await listingRow(threadId, (x) => x.inbox_status === "open");
    expect(row).toMatchObject({ inbox_status: "open", assignee: null });
    expect(row.waiting_since).toBeTypeOf("number");

    const sam = await operator();
    const sent = await call("POST", `/api/conversations/${r.name}/thread/messages`, { key: sam.key, body: { thread_id: threadId, text: "Hi, Sam here" } });
    expect(sent.status).toBe(200);
    const after = (await inbox(r.name, threadId)).body.data;
    expect(after).toMatchObject({ status: "open", waiting_since: null, sla_due_at: null });
    expect(after.last_reply_at).not.toBeNull();
    // A send does not claim: only a claim does.
    expect(after.assignee).toBeNull();
  });

  it("a claim is a compare-and-set: a second operator is refused, a forced claim takes over, and a claimed thread refuses another's send unless forced", async () => {
    const r = await manualRoute();
    const { threadId } = await customerSays(r.name, "hello");
    const sam = await operator();
    const kim = await operator();

    const claims = await Promise.all([act(r.name, "claim", { thread_id: threadId }, sam.key), act(r.name, "claim", { thread_id: threadId }, kim.key)]);
    const won = claims.filter((c) => c.status === 200);
    const lost = claims.filter((c) => c.status === 409);
    expect(won).toHaveLength(1);
    expect(lost).toHaveLength(1);
    expect(lost[0].body.code ?? lost[0].body.error?.code ?? JSON.stringify(lost[0].body)).toContain("thread_claimed");
    const holder = won[0].body.data.assignee as string;
    const other = holder === sam.user_id ? kim : sam;
    const owner = holder === sam.user_id ? sam : kim;

    const refused = await call("POST", `/api/conversations/${r.name}/thread/messages`, { key: other.key, body: { thread_id: threadId, text: "me too" } });
    expect(refused.status).toBe(409);
    // The refusal names no one (an assignee is stored input); the inbox door says who holds it.
    expect(JSON.stringify(refused.body)).not.toContain(owner.user_id);
    expect((await inbox(r.name, threadId, other.key)).body.data.assignee).toBe(owner.user_id);
    const forced = await call("POST", `/api/conversations/${r.name}/thread/messages`, {
      key: other.key,
      body: { thread_id: threadId, text: "sorry, urgent", force: true },
    });
    expect(forced.status).toBe(200);
    const mine = await call("POST", `/api/conversations/${r.name}/thread/messages`, { key: owner.key, body: { thread_id: threadId, text: "all good" } });
    expect(mine.status).toBe(200);

    // Re-claiming one's own thread changes nothing; a forced claim moves it.
    expect((await act(r.name, "claim", { thread_id: threadId }, owner.key)).body.data.assignee).toBe(owner.user_id);
    const taken = await act(r.name, "claim", { thread_id: threadId, force: true }, other.key);
    expect(taken.status).toBe(200);
    expect(taken.body.data.assignee).toBe(other.user_id);
    expect((await listingRow(threadId, (x) => x.assignee === other.user_id)).assignee).toBe(other.user_id);
  });

  it("release and transfer belong to the assignee unless forced", async () => {
    const r = await manualRoute();
    const { threadId } = await customerSays(r.name, "hello");
    const sam = await operator();
    const kim = await operator();
    expect((await act(r.name, "claim", { thread_id: threadId }, sam.key)).status).toBe(200);
    expect((await act(r.name, "release", { thread_id: threadId }, kim.key)).status).toBe(409);
    expect((await act(r.name, "transfer", { thread_id: threadId, to: kim.user_id }, kim.key)).status).toBe(409);
    const moved = await act(r.name, "transfer", { thread_id: threadId, to: kim.user_id }, sam.key);
    expect(moved.body.data.assignee).toBe(kim.user_id);
    expect((await act(r.name, "release", { thread_id: threadId, force: true }, sam.key)).body.data.assignee).toBeNull();
    expect((await act(r.name, "release", { thread_id: threadId }, sam.key)).status).toBe(200);
  });

  it("resolve stops the wait; the customer's next message reopens the thread and it waits again", async () => {
    const r = await manualRoute();
    const { threadId, externalUser } = await customerSays(r.name, "first");
    const resolved = await act(r.name, "resolve", { thread_id: threadId });
    expect(resolved.body.data).toMatchObject({ status: "resolved", waiting_since: null, sla_due_at: null });
    expect(resolved.body.data.resolved_at).not.toBeNull();
    expect((await listingRow(threadId, (x) => x.inbox_status === "resolved")).inbox_status).toBe("resolved");

    await customerSays(r.name, "actually, one more thing", externalUser);
    const again = (await inbox(r.name, threadId)).body.data;
    expect(again).toMatchObject({ status: "open", waiting_reason: "reopened", resolved_at: null });
    expect(again.waiting_since).not.toBeNull();
  });

  it("an agent route's thread stays pending, and a resolved one reopens as pending when the customer writes", async () => {
    const r = await agentRoute();
    const { threadId, externalUser } = await customerSays(r.name, "hi bot");
    // The inbox keeps nothing for a thread it never touched: it reads as pending, unowned.
    expect(await storedInbox(threadId)).toBeNull();
    expect((await inbox(r.name, threadId)).body.data).toMatchObject({ status: "pending", waiting_since: null });
    await act(r.name, "resolve", { thread_id: threadId });
    await customerSays(r.name, "hi again", externalUser);
    expect((await inbox(r.name, threadId)).body.data).toMatchObject({ status: "pending", waiting_since: null });
  });

  it("the mode door hands a thread to a human (it waits, reason operator) and back to the agent (pending)", async () => {
    const r = await agentRoute();
    const { threadId } = await customerSays(r.name, "hi");
    const sam = await operator();
    expect((await call("PUT", `/api/conversations/${r.name}/thread/mode`, { key: sam.key, body: { thread_id: threadId, mode: "manual" } })).status).toBe(200);
    expect((await inbox(r.name, threadId)).body.data).toMatchObject({ status: "open", waiting_reason: "operator" });
    expect((await call("PUT", `/api/conversations/${r.name}/thread/mode`, { key: sam.key, body: { thread_id: threadId, mode: "agent" } })).status).toBe(200);
    expect((await inbox(r.name, threadId)).body.data).toMatchObject({ status: "pending", waiting_since: null, sla_due_at: null });
  });

  it("a snooze is woken by the thread's alarm, also after the object restarted, and the thread waits again", async () => {
    const r = await manualRoute();
    const { threadId } = await customerSays(r.name, "call me tomorrow");
    const snoozed = await act(r.name, "snooze", { thread_id: threadId, seconds: 3600 });
    expect(snoozed.body.data).toMatchObject({ status: "snoozed", waiting_since: null });
    expect((await act(r.name, "snooze", { thread_id: threadId, until: "2001-01-01T00:00:00Z" })).status).toBe(400);
    expect((await act(r.name, "snooze", { thread_id: threadId })).status).toBe(400);
    await makeInboxDue(threadId, "snoozed_until");
    await runAlarm(threadId);
    expect((await inbox(r.name, threadId)).body.data).toMatchObject({ status: "open", waiting_reason: "snooze_ended", snoozed_until: null });
  });

  it("the waiting alert reaches the feed once, then its escalation once, and nothing more", async () => {
    const r = await manualRoute();
    const lead = uniq("lead");
    const put = await call("PUT", `/api/conversations/${r.name}/inbox`, {
      key: await admin(),
      body: { sla_seconds: 120, alert: { audience: lead }, escalate_after_seconds: 300, escalate_to: { audience: `${lead}-boss` } },
    });
    expect(put.status).toBe(200);
    const { threadId } = await customerSays(r.name, "hello? anyone?");
    const due = (await inbox(r.name, threadId)).body.data;
    expect(Date.parse(due.sla_due_at) - Date.parse(due.waiting_since)).toBe(120_000);

    await makeInboxDue(threadId, "sla_due_at");
    await runAlarm(threadId);
    const alerted = (await inbox(r.name, threadId)).body.data;
    expect(alerted.sla_stage).toBe("alerted");
    const first = (await feed()).filter((n) => n.audience === lead);
    expect(first).toHaveLength(1);
    expect(first[0].message).toContain(`route ${r.name}`);
    expect(first[0].message).toContain(threadId);
    // A second firing with nothing due sends nothing again.
    await runAlarm(threadId);
    expect((await feed()).filter((n) => n.audience === lead)).toHaveLength(1);

    await makeInboxDue(threadId, "sla_due_at");
    await runAlarm(threadId);
    expect((await inbox(r.name, threadId)).body.data).toMatchObject({ sla_stage: "escalated", sla_due_at: null });
    const escalations = (await feed()).filter((n) => n.audience === `${lead}-boss`);
    expect(escalations).toHaveLength(1);
    expect(escalations[0].message).toMatch(/^Escalated/);
  });

  it("auto-resolve never resolves a customer who waits for a human; after an answer the idle thread resolves itself", async () => {
    const r = await manualRoute();
    await call("PUT", `/api/conversations/${r.name}/inbox`, { key: await admin(), body: { auto_resolve_after_seconds: 3600 } });
    const { threadId } = await customerSays(r.name, "anyone there?");
    const waiting = (await inbox(r.name, threadId)).body.data;
    expect(waiting.auto_resolve_at).not.toBeNull();
    await makeInboxDue(threadId, "auto_resolve_at");
    await runAlarm(threadId);
    expect((await inbox(r.name, threadId)).body.data).toMatchObject({ status: "open", resolved_at: null });
    expect((await inbox(r.name, threadId)).body.data.waiting_since).not.toBeNull();

    const sent = await call("POST", `/api/conversations/${r.name}/thread/messages`, { key: await admin(), body: { thread_id: threadId, text: "here" } });
    expect(sent.status).toBe(200);
    const answered = (await inbox(r.name, threadId)).body.data;
    expect(Date.parse(answered.auto_resolve_at)).toBeGreaterThan(Date.now() + 3_000_000);
    await makeInboxDue(threadId, "auto_resolve_at");
    await runAlarm(threadId);
    expect((await inbox(r.name, threadId)).body.data).toMatchObject({ status: "resolved", waiting_since: null });
  });

  it("labels: added and removed, sorted, at most 16, and a bad label is refused naming the field", async () => {
    const r = await manualRoute();
    const { threadId } = await customerSays(r.name, "billing question");
    const a = await act(r.name, "labels", { thread_id: threadId, add: ["billing", "vip"] });
    expect(a.body.data.labels).toEqual(["billing", "vip"]);
    const b = await act(r.name, "labels", { thread_id: threadId, add: ["refund"], remove: ["vip"] });
    expect(b.body.data.labels).toEqual(["billing", "refund"]);
    expect(JSON.parse((await listingRow(threadId, (x) => x.labels?.includes("refund"))).labels)).toEqual(["billing", "refund"]);
    const bad = await act(r.name, "labels", { thread_id: threadId, add: ["Not OK"] });
    expect(bad.status).toBe(400);
    expect(JSON.stringify(bad.body)).toContain("add");
    // Each label given is counted for the team figures (by_label).
    const figures = await eventually(
      async () => {
        await listingRow(threadId);
        return (await call("GET", "/api/observability/metrics", { key: await admin() })).body;
      },
      (b) => (b?.data?.inbox?.by_label ?? []).some((l: { label: string }) => l.label === "refund"),
    );
    expect(figures.data.inbox.by_label.map((l: { label: string }) => l.label)).toEqual(expect.arrayContaining(["billing", "refund", "vip"]));
    const many = Array.from({ length: 15 }, (_, i) => `l${i}`);
    expect((await act(r.name, "labels", { thread_id: threadId, add: many })).status).toBe(400);
  });

  it("the agent labels its own thread with set_conversation_labels, and the agent's handoff opens the thread with reason agent_handoff", async () => {
    const k = await mintKey({ scopes: ["tool:set_conversation_labels", "tool:set_conversation_mode"] });
    const labeller = await createRoute({
      door: "api",
      target_kind: "tool",
      target_name: "set_conversation_labels",
      execution_key: k.user_id,
      payload_expr: "{add: [.message], remove: []}",
      reply_expr: '.labels | join(",")',
    });
    const res = await send(labeller.name, { external_user_id: "labelled", text: "billing", wait_seconds: 10 });
    expect(res.body.data).toMatchObject({ status: "answered", answer: "billing" });
    expect((await inbox(labeller.name, res.body.data.thread_id)).body.data.labels).toEqual(["billing"]);
    const bad = await send(labeller.name, { external_user_id: "labelled", text: "Not A Label", wait_seconds: 10 });
    // A label outside the pattern fails the tool call (its input schema), and nothing changes.
    expect(bad.body.data.status).toBe("error");
    expect((await inbox(labeller.name, res.body.data.thread_id)).body.data.labels).toEqual(["billing"]);

    const handing = await createRoute({
      door: "api",
      target_kind: "tool",
      target_name: "set_conversation_mode",
      execution_key: k.user_id,
      payload_expr: '{mode: "manual"}',
      reply_expr: '"handing you over"',
    });
    const h = await send(handing.name, { external_user_id: "wants-human", text: "human please", wait_seconds: 10 });
    expect(h.body.data).toMatchObject({ status: "answered", answer: "handing you over" });
    expect((await inbox(handing.name, h.body.data.thread_id)).body.data).toMatchObject({ status: "open", waiting_reason: "agent_handoff" });
  });

  it("the route's policy: defaults, replace, read back, unknown fields refused, delete", async () => {
    const r = await manualRoute();
    const key = await admin();
    const empty = await call("GET", `/api/conversations/${r.name}/inbox`, { key });
    expect(empty.body.data).toMatchObject({ stored: false, sla_seconds: null, holding_message: null });
    expect((await call("PUT", `/api/conversations/${r.name}/inbox`, { key, body: { sla_seconds: 10 } })).status).toBe(400);
    expect((await call("PUT", `/api/conversations/${r.name}/inbox`, { key, body: { surprise: true } })).status).toBe(400);
    const put = await call("PUT", `/api/conversations/${r.name}/inbox`, {
      key,
      body: { sla_seconds: 600, holding_message: "A person will be with you shortly." },
    });
    expect(put.status).toBe(200);
    const read = await call("GET", `/api/conversations/${r.name}/inbox`, { key });
    expect(read.body.data).toMatchObject({ stored: true, sla_seconds: 600, holding_message: "A person will be with you shortly.", updated_by: "root" });
    expect((await call("DELETE", `/api/conversations/${r.name}/inbox`, { key })).status).toBe(200);
    expect((await call("DELETE", `/api/conversations/${r.name}/inbox`, { key })).status).toBe(404);
    expect((await call("GET", `/api/conversations/${uniq("nope").toLowerCase()}/inbox`, { key })).status).toBe(404);
  });

  it("a thread of another route is refused like on the mode doors, and one that holds nothing is not found", async () => {
    const r = await manualRoute();
    const other = await manualRoute();
    const { threadId } = await customerSays(r.name, "hi");
    expect((await inbox(other.name, threadId)).status).toBe(400);
    expect((await act(other.name, "claim", { thread_id: threadId })).status).toBe(400);
    expect((await inbox(r.name, `bridge:${r.name}:nobody-${uniq("x")}`)).status).toBe(404);
    expect((await act(r.name, "claim", { thread_id: `bridge:${r.name}:nobody-${uniq("x")}` })).status).toBe(404);
  });

  it("the cross-route inbox: waiting oldest first, mine, unassigned, resolved, and filters by route, label, status and channel", async () => {
    const a = await manualRoute();
    const b = await manualRoute();
    const t1 = (await customerSays(a.name, "first in line")).threadId;
    const t2 = (await customerSays(b.name, "second in line")).threadId;
    const t3 = (await customerSays(a.name, "third")).threadId;
    const sam = await operator();
    await act(a.name, "claim", { thread_id: t3 }, sam.key);
    await act(b.name, "labels", { thread_id: t2, add: ["vip"] });
    await act(a.name, "resolve", { thread_id: t1 });
    await listingRow(t1, (x) => x.inbox_status === "resolved");
    await listingRow(t2, (x) => x.labels?.includes("vip"));
    await listingRow(t3, (x) => x.assignee === sam.user_id);

    const list = async (qs: string, key?: string) => {
      const r = await call("GET", `/api/inbox/threads?${qs}`, { key: key ?? (await admin()) });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      return (r.body.data.items as Array<{ thread_id: string }>).map((i) => i.thread_id).filter((id) => [t1, t2, t3].includes(id));
    };
    expect(await list("view=waiting")).toEqual([t2, t3]);
    expect(await list("view=waiting&route=" + a.name)).toEqual([t3]);
    expect(await list("view=mine", sam.key)).toEqual([t3]);
    expect(await list("view=unassigned")).toEqual([t2]);
    expect(await list("view=resolved")).toEqual([t1]);
    expect((await list("label=vip")).sort()).toEqual([t2]);
    expect(await list("view=all&status=open&assignee=" + sam.user_id)).toEqual([t3]);
    expect(await list("channel=telegram")).toEqual([]);
    const page = await call("GET", "/api/inbox/threads?view=waiting&route=" + b.name, { key: await admin() });
    expect(page.body.data.items[0]).toMatchObject({ route_name: b.name, thread_id: t2, inbox_status: "open", assignee: null, labels: ["vip"], channel: null });
    expect(page.body.data.items[0].waiting_since).toMatch(/Z$/);
    expect((await call("GET", "/api/inbox/threads?view=everything", { key: await admin() })).status).toBe(400);
  });

  it("a mine-only key (a condition on .thread.assignee) sees and acts on its own and unowned threads, not another's", async () => {
    const r = await manualRoute();
    const mineOnly = await mintKey({ scopes: ["conversations"], condition: ".thread == null or .thread.assignee == null or .thread.assignee == .sub" });
    const kim = await operator();
    const ours = (await customerSays(r.name, "for anyone")).threadId;
    const theirs = (await customerSays(r.name, "for kim")).threadId;
    expect((await act(r.name, "claim", { thread_id: theirs }, kim.key)).status).toBe(200);
    await listingRow(theirs, (x) => x.assignee === kim.user_id);
    await listingRow(ours, (x) => x.inbox_status === "open");

    const seen = await call("GET", `/api/inbox/threads?route=${r.name}`, { key: mineOnly.key });
    expect(seen.status).toBe(200);
    const ids = seen.body.data.items.map((i: { thread_id: string }) => i.thread_id);
    expect(ids).toContain(ours);
    expect(ids).not.toContain(theirs);

    expect((await inbox(r.name, theirs, mineOnly.key)).status).toBe(403);
    expect((await act(r.name, "resolve", { thread_id: theirs }, mineOnly.key)).status).toBe(403);
    const send = await call("POST", `/api/conversations/${r.name}/thread/messages`, { key: mineOnly.key, body: { thread_id: theirs, text: "x", force: true } });
    expect(send.status).toBe(403);
    expect((await act(r.name, "claim", { thread_id: ours }, mineOnly.key)).status).toBe(200);
    expect((await inbox(r.name, ours, mineOnly.key)).body.data.assignee).toBe(mineOnly.user_id);
  });

  it("retention takes the inbox state along with the thread's last record", async () => {
    const r = await manualRoute();
    const { threadId } = await customerSays(r.name, "expire me");
    await act(r.name, "labels", { thread_id: threadId, add: ["old"] });
    expect(await storedInbox(threadId)).not.toBeNull();
    await makeDue(threadId, "expires_at");
    await runAlarm(threadId);
    expect((await inbox(r.name, threadId)).status).toBe(404);
    expect(await storedInbox(threadId)).toBeNull();
  });

  it("forget takes the inbox state along", async () => {
    const r = await manualRoute();
    const { threadId } = await customerSays(r.name, "forget me");
    await act(r.name, "labels", { thread_id: threadId, add: ["gdpr"] });
    expect(await storedInbox(threadId)).not.toBeNull();
    const f = await call("DELETE", `/api/conversations/${r.name}/thread?thread_id=${enc(threadId)}`, { key: await admin() });
    expect(f.status).toBe(200);
    expect(await storedInbox(threadId)).toBeNull();
  });
});
