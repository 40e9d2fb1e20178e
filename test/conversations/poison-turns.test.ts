import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import { TURN_ERROR_TEXT } from "../../src/conversations/model/record";
import { THREAD_SCHEMA, migrate } from "../../src/conversations/thread/store";
import { createRoute, echoKey, readRecord, send } from "../helpers/bridge";
import { fakeNetwork } from "../helpers/network";
import { admin, call, mintKey, uniq } from "../helpers/http";
import { eventually, makeDue, runAlarm, stubFor } from "../helpers/threads";

const HOOK = "https://hooks.example.com/poison";

interface TurnRow {
  message_id: string;
  status: string;
  turn_state: string;
  turn_attempts: number;
  record: string;
}

async function turnRows(threadId: string): Promise<TurnRow[]> {
  return runInDurableObject(
    stubFor(threadId),
    (_o, state) =>
      state.storage.sql.exec("SELECT message_id, status, turn_state, turn_attempts, record FROM records ORDER BY seq").toArray() as unknown as TurnRow[],
  );
}

/** Ends the thread's object as a crash, the CPU limit or an eviction would (its in-flight work dies with it). */
async function killObject(threadId: string): Promise<void> {
  await runInDurableObject(stubFor(threadId), (_o, state) => state.abort("injected crash")).catch(() => undefined);
}

/**
 * An HTTP tool whose call on the text "poison" never returns, so the test can end the object
 * mid-run; any other text is answered "ok: <text>". Callbacks are answered 204 and recorded.
 */
async function poisonRoute(callbackUrl: string | null) {
  const tool = uniq("poison").toLowerCase();
  const toolUrl = `https://tools.example.com/${tool}`;
  const declared = await call("POST", "/api/tools-config/entries", {
    key: await admin(),
    body: { title: tool, kind: "http", description: "hangs on poison", url: toolUrl, timeout_seconds: 300 },
  });
  if (declared.status !== 200) throw new Error(`tool declare failed ${declared.status} ${JSON.stringify(declared.body)}`);
  const runner = await mintKey({ scopes: [`tool:${tool}`] });
  const route = await createRoute({
    door: "api",
    target_kind: "tool",
    target_name: tool,
    execution_key: runner.user_id,
    ...(callbackUrl ? { callback_url: callbackUrl } : {}),
  });
  const poisonRuns: number[] = [];
  const callbacks: Array<Record<string, unknown>> = [];
  fakeNetwork((req, body) => {
    if (req.url === toolUrl) {
      const text = (JSON.parse(body) as { message: string }).message;
      if (text === "poison") {
        poisonRuns.push(Date.now());
        return new Promise<Response>(() => undefined); // wedged until the object is ended
      }
      return Response.json(`ok: ${text}`);
    }
    if (req.url === callbackUrl) {
      callbacks.push(JSON.parse(body) as Record<string, unknown>);
      return new Response(null, { status: 204 });
    }
    return new Response("unexpected", { status: 599 });
  });
  return { route, poisonRuns, callbacks };
}

const until = async (check: () => boolean) => {
  for (let i = 0; i < 250 && !check(); i++) await new Promise((r) => setTimeout(r, 20));
  expect(check()).toBe(true);
};

describe("poison turns: a turn that keeps killing its object ends", () => {
  it("settles a turn that crashes its object twice with the error outcome and moves the thread on", async () => {
    const { route, poisonRuns, callbacks } = await poisonRoute(HOOK);
    const a = await send(route.name, { external_user_id: "p1", text: "poison" });
    expect(a.status).toBe(202);
    const { thread_id: threadId, message_id: poisonId } = a.body.data;
    await until(() => poisonRuns.length === 1);
    const b = await send(route.name, { external_user_id: "p1", text: "after" });
    expect(b.status).toBe(202);
    const nextId = b.body.data.message_id;

    // The attempt is counted before the run: the first run is on record although it never ended.
    let rows = await turnRows(threadId);
    expect(rows.map((r) => [r.turn_state, r.turn_attempts])).toEqual([
      ["running", 1],
      ["queued", 0],
    ]);

    // First crash; the lease lapses; the alarm re-runs the turn (attempt 2), which wedges again.
    await killObject(threadId);
    await makeDue(threadId, "turn_lease_until");
    const rerun = runAlarm(threadId).catch(() => undefined);
    await until(() => poisonRuns.length === 2);
    rows = await turnRows(threadId);
    expect(rows.find((r) => r.message_id === poisonId)).toMatchObject({ turn_state: "running", turn_attempts: 2 });
    expect(rows.find((r) => r.message_id === nextId)).toMatchObject({ turn_state: "queued", turn_attempts: 0 });

    // Second crash: past CONVERSATIONS_TURN_MAX_ATTEMPTS (2) the turn settles without a third run.
    await killObject(threadId);
    await rerun;
    await makeDue(threadId, "turn_lease_until");
    await runAlarm(threadId);
    const poisoned = await eventually(
      () => readRecord(route.name, poisonId),
      (x) => x.body.data?.status === "delivered",
    );
    expect(poisoned.body.data).toMatchObject({ status: "delivered", answer_status: "error", answer: TURN_ERROR_TEXT });
    expect(poisoned.body.data.error).toContain("abandoned after 2 attempts");
    expect(poisonRuns).toHaveLength(2);

    // The thread moved on: the turn queued behind the poison one ran and answered.
    const next = await eventually(
      () => readRecord(route.name, nextId),
      (x) => x.body.data?.status === "delivered",
    );
    expect(next.body.data).toMatchObject({ answer_status: "answered", answer: "ok: after" });

    // Exactly one callback each, in thread order, with the client-safe error shape for the poison turn.
    await until(() => callbacks.length === 2);
    expect(callbacks).toEqual([
      { message_id: poisonId, thread_id: threadId, status: "error", answer: TURN_ERROR_TEXT },
      { message_id: nextId, thread_id: threadId, status: "answered", answer: "ok: after" },
    ]);
    await runAlarm(threadId);
    await runAlarm(threadId);
    expect(callbacks).toHaveLength(2);
    expect(JSON.stringify(callbacks[0])).not.toContain("abandoned"); // the detail stays admin-only

    // The failed listing is for deliveries; a settled error turn that was delivered is not listed.
    const failed = await call("GET", "/api/conversations/messages/failed?pageSize=200", { key: await admin() });
    expect(failed.body.data.items.some((x: any) => x.message_id === poisonId)).toBe(false);
  });

  it("a poisoned turn never answers its inline waiter twice; the next inline caller is answered at once and never called back", async () => {
    const { route, poisonRuns, callbacks } = await poisonRoute(HOOK);
    // The caller waits inline; the object dies under it, so it gets no answer from this request.
    const waiting = send(route.name, { external_user_id: "p2", text: "poison", wait_seconds: 60 });
    await until(() => poisonRuns.length === 1);
    const threadId = `bridge:${route.name}:root/p2`; // the admin key is "root"
    await killObject(threadId);
    const first = await waiting;
    expect(first.status).not.toBe(200);
    const poisonId = (await turnRows(threadId))[0].message_id;

    await makeDue(threadId, "turn_lease_until");
    const rerun = runAlarm(threadId).catch(() => undefined);
    await until(() => poisonRuns.length === 2);
    await killObject(threadId);
    await rerun;
    await makeDue(threadId, "turn_lease_until");
    await runAlarm(threadId);

    // Its only answer is the one callback with the error outcome.
    await until(() => callbacks.length === 1);
    expect(callbacks[0]).toEqual({ message_id: poisonId, thread_id: threadId, status: "error", answer: TURN_ERROR_TEXT });

    const inline = await send(route.name, { external_user_id: "p2", text: "still here", wait_seconds: 10 });
    expect(inline.status).toBe(200);
    expect(inline.body.data).toMatchObject({ thread_id: threadId, status: "answered", answer: "ok: still here" });
    await runAlarm(threadId);
    expect(callbacks).toHaveLength(1);
    const rec = await readRecord(route.name, inline.body.data.message_id);
    expect(rec.body.data).toMatchObject({ status: "delivered", attempts: 0 });
  });

  it("a turn that crashed once is re-run and answers normally (one crash is within the bound)", async () => {
    const k = await echoKey();
    const route = await createRoute({ door: "api", target_kind: "tool", target_name: "echo", execution_key: k.user_id });
    const seed = await send(route.name, { external_user_id: "p3", text: "seed", wait_seconds: 10 });
    const threadId = seed.body.data.thread_id;
    // A run that started once and died with its object: counted, running, lease held.
    await runInDurableObject(stubFor(threadId), (_o, state) => {
      state.storage.sql.exec("UPDATE records SET status = 'accepted', turn_state = 'running', turn_attempts = 1, turn_lease_until = ?", Date.now() + 3_600_000);
    });
    await killObject(threadId);
    await makeDue(threadId, "turn_lease_until");
    await runAlarm(threadId);
    const row = await eventually(
      () => turnRows(threadId),
      (rows) => rows[0].status === "delivered",
    );
    expect(row[0]).toMatchObject({ turn_state: "done", turn_attempts: 2 });
    expect(JSON.parse(row[0].record)).toMatchObject({ answer_status: "answered", answer: "seed" });
  });

  it("adds the attempts column to a thread stored before it existed", async () => {
    const k = await echoKey();
    const route = await createRoute({ door: "api", target_kind: "tool", target_name: "echo", execution_key: k.user_id });
    const seed = await send(route.name, { external_user_id: "p4", text: "old", wait_seconds: 10 });
    const threadId = seed.body.data.thread_id;
    const after = await runInDurableObject(stubFor(threadId), (_o, state) => {
      const sql = state.storage.sql;
      // Back to the v1 shape, as a thread written by the previous release would be.
      sql.exec("ALTER TABLE records DROP COLUMN turn_attempts");
      sql.exec("UPDATE meta SET value = '1' WHERE key = 'schema_version'");
      migrate(state.storage);
      return {
        version: (sql.exec("SELECT value FROM meta WHERE key = 'schema_version'").one() as { value: string }).value,
        attempts: (sql.exec("SELECT turn_attempts FROM records").one() as { turn_attempts: number }).turn_attempts,
      };
    });
    expect(after).toEqual({ version: String(THREAD_SCHEMA.steps.length), attempts: 0 });
  });
});
