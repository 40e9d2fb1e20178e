/**
 * Pending state saves (spec §2.12, §3.3; platform-facts A4). A save that could not apply
 * when its turn ended (its state's object unreachable) is set up here as the row the turn would
 * have written; the turns, the cron pass and the doors are the real ones.
 */
import { createExecutionContext, runInDurableObject, waitOnExecutionContext } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { publishAccessChanges } from "../../src/platform/epochs/publish";
import { describe, expect, it } from "vitest";
import worker from "../../src/index";
import { createRoute, send } from "../helpers/bridge";
import { admin, call, mintKey, uniq } from "../helpers/http";
import { declareTool, network } from "../operator/helpers";
import { must } from "../../src/platform/must";

const PROFILE = { type: "object", properties: { name: { type: "string" } } };
const tt = (content: string) => ({ content });
const SET_NAME = tt('if .output.name != null then [{op: "set", path: ["name"], value: .output.name}] else [] end');

async function bound() {
  const key = await admin();
  const state = uniq("pend").toLowerCase();
  await call("PUT", `/api/states/${state}`, { key, body: { schema: PROFILE, subject_kinds: ["thread"] } });
  const host = `pend-${crypto.randomUUID().slice(0, 8)}.example`;
  const title = host.split(".")[0];
  await declareTool(title, `https://${host}/run`);
  network({ [host]: (k) => ({ text: "ok", name: /^name (.+)$/.exec(k.message ?? "")?.[1] ?? null }) });
  const k = await mintKey({ scopes: [`tool:${title}`] });
  const route = await createRoute({
    door: "api",
    target_kind: "tool",
    target_name: title,
    execution_key: k.user_id,
    reply_expr: ".text",
    turns_per_hour_override: 1000,
  });
  const attach = { state, subject_expr: tt(".turn.subject.thread"), updates: [{ jq: SET_NAME }] };
  expect(
    (
      await call("PUT", `/api/conversation-configs/tool/${title}`, {
        key,
        body: { target_kind: "tool", target_name: title, state_binding: { states: [attach] } },
      })
    ).status,
  ).toBe(200);
  /** The row a turn writes when its state's object cannot be reached: its leftover update, to apply later. */
  const stuckSave = async (threadId: string, name: unknown, dueAt = Date.now()) => {
    const subject = { target_kind: "tool", target_name: title, kind: "thread", key: threadId };
    const fullAttach = {
      ...attach,
      templates: [],
      scope_expr: null,
      input_injections: [],
      updates: [{ template_jq: null, jq: SET_NAME, adapter: null, op_id: null }],
    };
    const work = {
      input: { message: "x" },
      output: { name },
      origin: { door: "turn", actor: k.user_id, consumer: null, meta: null, run_id: null, op_id: null, turn_id: null, inbound_id: null },
      items: [{ state, subject, attach: fullAttach, from: 0 }],
    };
    const row = await env.DB.prepare(
      `INSERT INTO state_pending_saves (status, target_kind, target_name, run_id, states, subjects, work, attempts, created_at, next_attempt_at) VALUES ('pending', 'tool', ?, NULL, ?, ?, ?, 0, ?, ?) RETURNING id`,
    )
      .bind(title, JSON.stringify([state]), JSON.stringify([{ state, subject }]), JSON.stringify(work), Date.now(), dueAt)
      .first<{ id: number }>();
    // Queued as a turn queues it, the save is published to the route caches at once.
    await publishAccessChanges(env);
    return String(must(row, "row").id);
  };
  const record = async (threadId: string) =>
    (await call("GET", `/api/states/${state}/records/tool/${title}/thread/${encodeURIComponent(threadId)}`, { key })).body.data;
  return { key, state, title, route, stuckSave, record };
}

async function cron() {
  const ctx = createExecutionContext();
  await worker.scheduled({ scheduledTime: Date.now(), cron: "*/15 * * * *", noRetry() {} } as ScheduledController, env, ctx);
  await waitOnExecutionContext(ctx);
}

describe("pending state saves", () => {
  it("a later turn's update to a held subject queues behind the older save; the cron pass applies them in order", async () => {
    const b = await bound();
    const first = await send(b.route.name, { external_user_id: "ann", text: "name Ann", wait_seconds: 10 });
    const threadId = first.body.data.thread_id;
    expect((await b.record(threadId)).data).toEqual({ name: "Ann" });
    // An older save on this subject is stuck (not due yet).
    const older = await b.stuckSave(threadId, "Zed", Date.now() + 3_600_000);
    // A waiting save holds the state's shape: a re-declare changing the schema is 409 naming it.
    const changed = await call("PUT", `/api/states/${b.state}`, {
      key: b.key,
      body: { schema: { type: "object", properties: { ...PROFILE.properties, age: { type: "integer" } } }, subject_kinds: ["thread"] },
    });
    expect(changed).toMatchObject({ status: 409, body: { held: [older] } });
    const second = await send(b.route.name, { external_user_id: "ann", text: "name Bob", wait_seconds: 10 });
    expect(second.body.data.status).toBe("answered");
    // The turn answered, but its update waits behind the older save.
    expect((await b.record(threadId)).data).toEqual({ name: "Ann" });
    const listed = await call("GET", "/api/state-pending-saves", { key: b.key });
    const mine = listed.body.data.items.filter((s: any) => s.states.includes(b.state));
    expect(mine.map((s: any) => s.status)).toEqual(["pending", "pending"]);
    expect(mine[1]).toMatchObject({
      run_id: second.body.data.message_id,
      attempts: 0,
      last_error: null,
      failed_phase: null,
      calls: [],
      subjects: [{ state: b.state, subject: { kind: "thread", key: threadId } }],
    });
    const held = await call("GET", `/api/states/${b.state}/subjects`, { key: b.key });
    expect(held.body.data.held).toEqual([{ target_kind: "tool", target_name: b.title, kind: "thread", key: threadId }]);
    // The newer save is due now but waits behind the older one.
    await cron();
    expect((await b.record(threadId)).data).toEqual({ name: "Ann" });
    await env.DB.prepare("UPDATE state_pending_saves SET next_attempt_at = 0 WHERE id = ?").bind(Number(older)).run();
    await cron();
    expect((await b.record(threadId)).data).toEqual({ name: "Bob" });
    const writes = await call("GET", `/api/states/${b.state}/records/tool/${b.title}/thread/${encodeURIComponent(threadId)}/writes`, { key: b.key });
    expect(writes.body.data.items.map((w: any) => w.seq)).toEqual([3, 2, 1]);
    expect((await call("GET", "/api/state-pending-saves", { key: b.key })).body.data.items.filter((s: any) => s.states.includes(b.state))).toEqual([]);
    // Re-declaring reports the saves still outstanding on the state (none now).
    expect((await call("PUT", `/api/states/${b.state}`, { key: b.key, body: { schema: PROFILE, subject_kinds: ["thread"] } })).body.data.held).toEqual([]);
  });

  it("a save the record refuses is failed with last_error; retry applies it once fixed; discard drops one", async () => {
    const b = await bound();
    const first = await send(b.route.name, { external_user_id: "cy", text: "hello", wait_seconds: 10 });
    const threadId = first.body.data.thread_id;
    const id = await b.stuckSave(threadId, 5);
    expect((await call("PUT", `/api/states/${b.state}`, { key: b.key, body: { schema: PROFILE, subject_kinds: ["thread"] } })).body.data.held).toEqual([id]);
    await cron();
    const failed = await call("GET", "/api/state-pending-saves?status=failed", { key: b.key });
    const row = failed.body.data.items.find((s: any) => s.id === id);
    expect(row).toMatchObject({ status: "failed", failed_phase: "records", attempts: 1, failed_at: expect.any(String) });
    expect(row.last_error).toMatch(/effective schema/);
    expect(failed.body.data.failed).toBeGreaterThanOrEqual(1);
    // Still refused: failed again.
    expect((await call("POST", `/api/state-pending-saves/${id}/retry`, { key: b.key })).body.data).toMatchObject({
      id,
      status: "failed",
      last_error: expect.stringMatching(/effective schema/),
    });
    // The state has no records yet, so its schema may change: now a number fits, and the retry lands.
    expect(
      (
        await call("PUT", `/api/states/${b.state}`, {
          key: b.key,
          body: { schema: { type: "object", properties: { name: { type: ["string", "integer"] } } }, subject_kinds: ["thread"] },
        })
      ).status,
    ).toBe(200);
    expect((await call("POST", `/api/state-pending-saves/${id}/retry`, { key: b.key })).body.data).toEqual({ id, status: "applied", last_error: null });
    expect((await b.record(threadId)).data).toEqual({ name: 5 });

    const other = await b.stuckSave(threadId, "Dee", Date.now() + 3_600_000);
    expect((await call("POST", `/api/state-pending-saves/${other}/retry`, { key: b.key })).status).toBe(409);
    expect((await call("DELETE", `/api/state-pending-saves/${other}`, { key: b.key })).body.data).toEqual({ discarded: other });
    expect((await call("DELETE", `/api/state-pending-saves/${other}`, { key: b.key })).status).toBe(404);
    expect((await call("POST", `/api/state-pending-saves/${other}/retry`, { key: b.key })).status).toBe(404);
    expect((await call("POST", "/api/state-pending-saves/abc/retry", { key: b.key })).status).toBe(400);
    expect((await call("POST", "/api/state-pending-saves/0/retry", { key: b.key })).status).toBe(400);
  });

  it("an update whose state's object fails mid-write waits as a pending save; the turn still answers; the cron pass lands it later", async () => {
    const b = await bound();
    const first = await send(b.route.name, { external_user_id: "eve", text: "name Eve", wait_seconds: 10 });
    const threadId = first.body.data.thread_id;
    const store = env.STATE_STORES.get(env.STATE_STORES.idFromName(b.state));
    // A storage fault inside the object (its audit table gone): the binding's read still works, the
    // write after dispatch fails outright (and, being one transaction, leaves nothing behind).
    await runInDurableObject(store, (_o, s) => void s.storage.sql.exec("ALTER TABLE writes RENAME TO writes_away"));
    const second = await send(b.route.name, { external_user_id: "eve", text: "name Evelyn", wait_seconds: 10 });
    expect(second.body.data).toMatchObject({ status: "answered", answer: "ok" });
    const listed = await call("GET", "/api/state-pending-saves", { key: b.key });
    const mine = listed.body.data.items.filter((x: any) => x.states.includes(b.state));
    expect(mine).toHaveLength(1);
    expect(mine[0]).toMatchObject({ status: "pending", run_id: second.body.data.message_id });
    expect((await b.record(threadId)).data).toEqual({ name: "Eve" });
    // The object recovers; the next cron pass applies the save.
    await runInDurableObject(store, (_o, s) => void s.storage.sql.exec("ALTER TABLE writes_away RENAME TO writes"));
    await cron();
    expect((await b.record(threadId)).data).toEqual({ name: "Evelyn" });
    expect((await call("GET", "/api/state-pending-saves", { key: b.key })).body.data.items.filter((x: any) => x.states.includes(b.state))).toEqual([]);
  });

  it("a record that cannot be read before dispatch fails the turn loudly (nothing ran)", async () => {
    const b = await bound();
    const store = env.STATE_STORES.get(env.STATE_STORES.idFromName(b.state));
    await runInDurableObject(store, (_o, s) => void s.storage.sql.exec("ALTER TABLE records RENAME TO records_away"));
    const res = await send(b.route.name, { external_user_id: "fay", text: "name Fay", wait_seconds: 10 });
    expect(res.body.data.status).toBe("error");
    const rec = await call("GET", `/api/conversations/${b.route.name}/messages/${res.body.data.message_id}`, { key: b.key });
    expect(rec.body.data.error).toMatch(/read: the state's object could not be reached/);
    await runInDurableObject(store, (_o, s) => void s.storage.sql.exec("ALTER TABLE records_away RENAME TO records"));
  });
});
