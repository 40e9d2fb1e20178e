/**
 * ask_user as a conversation route's tool target: the turn parks, its answer is the
 * question, and the interaction comes back into the thread: answered by the thread's next inbound,
 * by an operator at the door, cancelled, or expired; the resumed reply goes through reply_expr.
 */
import { describe, expect, it } from "vitest";
import { readRecord, send } from "../helpers/bridge";
import { admin, call, mintKey } from "../helpers/http";
import { eventually } from "../helpers/threads";
import { askRoute, listedAs, pendingOf, rawObject, stepAt } from "./helpers";
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";

/** Resets an object: the next call constructs a fresh instance over the same storage. */
async function restart(stub: DurableObjectStub): Promise<void> {
  await runInDurableObject(stub, (_o, state) => {
    try {
      state.abort("test restart");
    } catch {
      /* abort throws in the aborting call */
    }
  }).catch(() => undefined);
}

async function transcript(route: string, threadId: string) {
  const r = await call("GET", `/api/conversations/${route}/transcript?thread_id=${encodeURIComponent(threadId)}&order=asc`, { key: await admin() });
  return r.body.data.items as any[];
}

describe("a tool turn that asks", () => {
  it("parks: the question (options numbered) is the answer, and the interaction is pending", async () => {
    const route = await askRoute();
    const r = await send(route.name, { external_user_id: "ada", text: "Shall we?", wait_seconds: 10 });
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ status: "answered", answer: "Shall we?\n\n1. Yes\n2. No" });
    const [pending] = await pendingOf(r.body.data.thread_id);
    expect(pending).toMatchObject({
      status: "pending",
      question: "Shall we?",
      options: [
        { id: "yes", text: "Yes" },
        { id: "no", text: "No" },
      ],
      schema: null,
      audience: null,
      origin: { kind: "thread", route_name: route.name, thread_id: r.body.data.thread_id, message_id: r.body.data.message_id, door: "api", channel: null },
      target: { kind: "tool", name: "ask_user" },
      answer: null,
      result: null,
    });
  });

  it("the thread's next message answers it: the resumed reply is that message's answer", async () => {
    const route = await askRoute();
    const first = await send(route.name, { external_user_id: "bob", text: "Coffee?", wait_seconds: 10 });
    const [pending] = await pendingOf(first.body.data.thread_id);
    const second = await send(route.name, { external_user_id: "bob", text: "2", wait_seconds: 10 });
    expect(second.body.data).toMatchObject({ status: "answered", answer: "You chose: No" });
    const done = await listedAs(pending.interaction_id, "answered");
    expect(done.answer).toMatchObject({
      text: "2",
      option: { id: "no", text: "No" },
      answered_by: { kind: "participant", user_id: null, message_id: second.body.data.message_id },
    });
    expect(done.reply_message_id).toBe(second.body.data.message_id);
    // Answered: the next message is an ordinary turn again (it asks anew).
    const third = await send(route.name, { external_user_id: "bob", text: "Tea?", wait_seconds: 10 });
    expect(third.body.data.answer).toBe("Tea?\n\n1. Yes\n2. No");
  });

  it("an operator answers at the door: a resume record in the thread carries the reply", async () => {
    const route = await askRoute();
    const first = await send(route.name, { external_user_id: "cy", text: "Ready?", wait_seconds: 10 });
    const threadId = first.body.data.thread_id;
    const [pending] = await pendingOf(threadId);
    const r = await call("POST", `/api/interactions/${pending.interaction_id}/answer`, { key: await admin(), body: { option_id: "yes" } });
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({
      status: "answered",
      answer: { text: "Yes", option: { id: "yes", text: "Yes" }, answered_by: { kind: "operator", user_id: "root" } },
    });
    const replyId = r.body.data.reply_message_id;
    expect(replyId).toEqual(expect.any(String));
    const rec = await eventually(
      () => readRecord(route.name, replyId),
      (x) => x.status === 200 && x.body.data.answer_status === "answered",
    );
    expect(rec.body.data).toMatchObject({
      message_id: replyId,
      thread_id: threadId,
      origin: "client",
      inbound_kind: "event",
      inbound_text: "",
      inbound_event: { id: pending.interaction_id, kind: "interaction.answered", payload: { interaction_id: pending.interaction_id, outcome: "answered" } },
      submitted_by: "root",
      answer: "You chose: Yes",
      status: "delivered",
    });
    const items = await transcript(route.name, threadId);
    expect(items.map((i) => i.answer)).toEqual(["Ready?\n\n1. Yes\n2. No", "You chose: Yes"]);
    // Answered once: a second answer is 409, and the thread's next message is an ordinary turn.
    expect((await call("POST", `/api/interactions/${pending.interaction_id}/answer`, { key: await admin(), body: { text: "no" } })).status).toBe(409);
    const next = await send(route.name, { external_user_id: "cy", text: "Again?", wait_seconds: 10 });
    expect(next.body.data.answer).toBe("Again?\n\n1. Yes\n2. No");
  });

  it("a cancel resumes with {cancelled: true, reason}", async () => {
    const route = await askRoute();
    const first = await send(route.name, { external_user_id: "dee", text: "Sure?", wait_seconds: 10 });
    const [pending] = await pendingOf(first.body.data.thread_id);
    const r = await call("POST", `/api/interactions/${pending.interaction_id}/cancel`, { key: await admin(), body: { reason: "closed" } });
    expect(r.body.data).toMatchObject({ status: "cancelled", cancel_reason: "closed" });
    const rec = await eventually(
      () => readRecord(route.name, r.body.data.reply_message_id),
      (x) => x.status === 200 && x.body.data.answer_status === "answered",
    );
    expect(rec.body.data.answer).toBe("cancelled: closed");
    expect(rec.body.data.inbound_event.kind).toBe("interaction.cancelled");
  });

  it("expiry resumes with {timeout: true}", async () => {
    const route = await askRoute();
    const first = await send(route.name, { external_user_id: "eve", text: "Late?", wait_seconds: 10 });
    const [pending] = await pendingOf(first.body.data.thread_id);
    await stepAt(pending.interaction_id, Date.parse(pending.expires_at) + 1);
    const done = await listedAs(pending.interaction_id, "expired");
    expect(done.ended_at).toEqual(expect.any(String));
    const rec = await eventually(
      () => readRecord(route.name, done.reply_message_id),
      (x) => x.status === 200 && x.body.data.answer_status === "answered",
    );
    expect(rec.body.data).toMatchObject({ answer: "no answer in time", inbound_event: { kind: "interaction.expired" } });
    expect(rec.body.data.submitted_by).toBeUndefined();
    // Past its expiry it can no longer be answered.
    expect((await call("POST", `/api/interactions/${pending.interaction_id}/answer`, { key: await admin(), body: { text: "yes" } })).status).toBe(409);
  });
});

describe("the answer and cancel doors", () => {
  it("refuse: 400 an option naming nothing or an empty body, 404 unknown, 409 ended", async () => {
    const route = await askRoute();
    const first = await send(route.name, { external_user_id: "fay", text: "Pick", wait_seconds: 10 });
    const [pending] = await pendingOf(first.body.data.thread_id);
    const key = await admin();
    const bad = await call("POST", `/api/interactions/${pending.interaction_id}/answer`, { key, body: { option_id: "maybe" } });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toBe("invalid body: option_id: names no option of this interaction");
    expect((await call("POST", `/api/interactions/${pending.interaction_id}/answer`, { key, body: {} })).status).toBe(400);
    expect((await call("POST", `/api/interactions/${pending.interaction_id}/answer`, { key, body: { text: "x", extra: 1 } })).status).toBe(400);
    expect((await call("POST", `/api/interactions/${crypto.randomUUID()}/answer`, { key, body: { text: "x" } })).status).toBe(404);
    expect((await call("POST", `/api/interactions/not-an-id/cancel`, { key })).status).toBe(400);
    expect((await call("POST", `/api/interactions/${pending.interaction_id}/cancel`, { key })).status).toBe(200);
    expect((await call("POST", `/api/interactions/${pending.interaction_id}/cancel`, { key })).status).toBe(409);
  });

  it("restricted callers see and answer only interactions addressed to them", async () => {
    const owner = await mintKey({ scopes: ["interactions"] });
    const mine = await mintKey({ scopes: ["interactions"], owner_user_id: owner.user_id });
    const other = await mintKey({ scopes: ["interactions"], owner_user_id: owner.user_id });
    const route = await askRoute({ audience: mine.user_id });
    const first = await send(route.name, { external_user_id: "gil", text: "Yours?", wait_seconds: 10 });
    const [pending] = await pendingOf(first.body.data.thread_id);
    const listFor = async (k: string) =>
      (await call("GET", `/api/interactions/pending?thread_id=${encodeURIComponent(first.body.data.thread_id)}`, { key: k })).body.data.items.map(
        (i: any) => i.interaction_id,
      );
    expect(await listFor(mine.key)).toEqual([pending.interaction_id]);
    expect(await listFor(other.key)).toEqual([]);
    // The unrestricted owner sees every interaction.
    expect(await listFor(owner.key)).toEqual([pending.interaction_id]);
    expect((await call("POST", `/api/interactions/${pending.interaction_id}/answer`, { key: other.key, body: { text: "yes" } })).status).toBe(404);
    expect((await call("POST", `/api/interactions/${pending.interaction_id}/cancel`, { key: other.key })).status).toBe(404);
    const ok = await call("POST", `/api/interactions/${pending.interaction_id}/answer`, { key: mine.key, body: { text: "yes" } });
    expect(ok.status).toBe(200);
    expect(ok.body.data.answer).toMatchObject({ text: "yes", option: { id: "yes" }, answered_by: { kind: "operator", user_id: mine.user_id } });
  });

  it("a parked run survives its object's restart", async () => {
    const route = await askRoute();
    const first = await send(route.name, { external_user_id: "hal", text: "Still there?", wait_seconds: 10 });
    const [pending] = await pendingOf(first.body.data.thread_id);
    // A restart (abort) drops everything the object and the thread hold in memory; their SQLite stays.
    await restart(rawObject(pending.interaction_id));
    await restart(env.THREADS.get(env.THREADS.idFromName(first.body.data.thread_id)));
    const second = await send(route.name, { external_user_id: "hal", text: "yes", wait_seconds: 10 });
    expect(second.body.data.answer).toBe("You chose: Yes");
  });
});

describe("more of a parked turn", () => {
  it("a form submission answers a schema question; the list pages with the usual shape", async () => {
    const k = await mintKey({ scopes: ["tool:ask_user"] });
    const { createRoute } = await import("../helpers/bridge");
    const route = await createRoute({
      door: "api",
      target_kind: "tool",
      target_name: "ask_user",
      execution_key: k.user_id,
      payload_expr: '{question: .message, schema: {flow_id: "f1"}}',
      reply_expr: '"Got " + (.answer.form | tojson)',
    });
    const first = await send(route.name, { external_user_id: "frm", text: "Your details?", wait_seconds: 10 });
    expect(first.body.data.answer).toBe("Your details?");
    const [pending] = await pendingOf(first.body.data.thread_id);
    expect(pending).toMatchObject({ options: null, schema: { flow_id: "f1" } });
    const second = await send(route.name, { external_user_id: "frm", text: "", form: { name: "Ada" }, wait_seconds: 10 });
    expect(second.body.data.answer).toBe('Got {"name":"Ada"}');
    await listedAs(pending.interaction_id, "answered");
    const page = await call("GET", `/api/interactions?thread_id=${encodeURIComponent(first.body.data.thread_id)}&pageSize=1`, { key: await admin() });
    expect(page.body.data).toMatchObject({ total: 1, page: 1, page_size: 1, next_page: null, truncated: false });
    expect(page.body.data.items[0].answer).toMatchObject({ text: null, option: null, form: { name: "Ada" } });
    expect((await call("GET", "/api/interactions?status=bogus", { key: await admin() })).status).toBe(400);
  });

  it("the parked turn's trace shows the ask_user step; the interaction names the turn (its trace id)", async () => {
    const route = await askRoute();
    const first = await send(route.name, { external_user_id: "trc", text: "Trace me?", wait_seconds: 10 });
    const [pending] = await pendingOf(first.body.data.thread_id);
    expect(pending.origin.message_id).toBe(first.body.data.message_id);
    const key = await admin();
    const trace = await eventually(
      () => call("GET", `/api/observability/runs/${first.body.data.message_id}/trace`, { key }),
      (r) => r.status === 200,
    );
    expect(trace.body.data).toMatchObject({ kind: "turn", outcome: "ok", output: { answer_status: "answered", answer: "Trace me?\n\n1. Yes\n2. No" } });
    expect(trace.body.data.steps).toEqual([expect.objectContaining({ kind: "tool", name: "ask_user", outcome: "ok" })]);
  });

  it("in manual mode the thread's message runs no turn and the interaction stays pending; a resume turn is silent", async () => {
    const route = await askRoute();
    const first = await send(route.name, { external_user_id: "man", text: "Manual?", wait_seconds: 10 });
    const threadId = first.body.data.thread_id;
    const [pending] = await pendingOf(threadId);
    const key = await admin();
    expect((await call("PUT", `/api/conversations/${route.name}/thread/mode`, { key, body: { thread_id: threadId, mode: "manual" } })).status).toBe(200);
    const quiet = await send(route.name, { external_user_id: "man", text: "yes", wait_seconds: 10 });
    expect(quiet.body.data.status).toBe("silent");
    expect((await pendingOf(threadId)).map((i) => i.interaction_id)).toEqual([pending.interaction_id]);
    const r = await call("POST", `/api/interactions/${pending.interaction_id}/answer`, { key, body: { text: "yes" } });
    const rec = await eventually(
      () => readRecord(route.name, r.body.data.reply_message_id),
      (x) => x.status === 200 && x.body.data.answer_status !== null,
    );
    expect(rec.body.data).toMatchObject({ answer_status: "silent", inbound_event: { kind: "interaction.answered" } });
  });

  it("the route's execution key is authorized again when the run resumes: a revoked key answers the error", async () => {
    const route = await askRoute();
    const first = await send(route.name, { external_user_id: "rvk", text: "Revoke?", wait_seconds: 10 });
    await pendingOf(first.body.data.thread_id);
    expect((await call("DELETE", `/api/auth/api-keys/${route.key.user_id}`, { key: await admin() })).status).toBe(200);
    const second = await send(route.name, { external_user_id: "rvk", text: "yes", wait_seconds: 10 });
    expect(second.body.data.status).toBe("error");
    const rec = await readRecord(route.name, second.body.data.message_id);
    expect(rec.body.data.error).toMatch(/^tool dispatch denied: /);
  });
});
