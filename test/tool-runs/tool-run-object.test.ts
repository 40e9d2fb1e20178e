/**
 * The ToolRun object (docs/tool-runs.md "Life of a run"): a run survives a
 * restart (the alarm finds an attempt that never finished and starts it again, up to
 * TOOL_RUNS_MAX_ATTEMPTS), submitting is idempotent, and retention deletes the run and its listing
 * row. Restarts are simulated by leaving the row as an interrupted attempt leaves it (running, an
 * attempt counted, the lease alarm armed) and running the alarm with `runDurableObjectAlarm`.
 */
import { runDurableObjectAlarm, runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { toolRunStub } from "../../src/tool-runs/rpc";
import { ATTEMPT_LEASE_MS } from "../../src/tool-runs/alarm-policy";
import type { ToolRunRequest } from "../../src/tool-runs/record";
import { insertQueued, markStarted, readRun } from "../../src/tool-runs/run-store";
import { submitToolRun } from "../../src/tool-runs/submit";
import { admin, call, mintKey } from "../helpers/http";
import { endedRun, indexRow, runObject } from "./helpers";

async function echoRequest(): Promise<ToolRunRequest> {
  const k = await mintKey({ scopes: ["tool:echo"] });
  return {
    run_id: crypto.randomUUID(),
    tool_name: "echo",
    arguments: { message: "again" },
    caller: { user_id: k.user_id, fingerprint: k.fingerprint },
    origin: "api",
    schedule_name: null,
    slot_at: null,
  };
}

/** Leaves run `req` as an attempt cut short by a restart leaves it, `attempts` times over. */
async function interrupted(req: ToolRunRequest, attempts: number): Promise<void> {
  await runInDurableObject(runObject(req.run_id), async (_o, state) => {
    insertQueued(state.storage.sql, req, Date.now());
    for (let i = 0; i < attempts; i++) markStarted(state.storage.sql, Date.now());
    await state.storage.setAlarm(Date.now() + ATTEMPT_LEASE_MS);
  });
  await env.DB.prepare("INSERT INTO tool_runs (run_id, tool_name, caller_user_id, origin, status, created_at) VALUES (?, ?, ?, 'api', 'running', ?)")
    .bind(req.run_id, req.tool_name, req.caller.user_id, Date.now())
    .run();
}

describe("restart survival", () => {
  it("the alarm starts an interrupted run again, and it ends on the second attempt", async () => {
    const req = await echoRequest();
    await interrupted(req, 1);
    expect(await toolRunStub(env, req.run_id).read()).toMatchObject({ status: "running", attempts: 1 });
    expect(await runDurableObjectAlarm(runObject(req.run_id))).toBe(true);
    const run = await endedRun(req.run_id);
    expect(run).toMatchObject({ status: "succeeded", result: "again", attempts: 2 });
    expect(await indexRow(req.run_id)).toMatchObject({ status: "succeeded" });
  });

  it("a run interrupted TOOL_RUNS_MAX_ATTEMPTS (3) times fails `interrupted` instead of starting again", async () => {
    const req = await echoRequest();
    await interrupted(req, 3);
    await runDurableObjectAlarm(runObject(req.run_id));
    const run = await endedRun(req.run_id);
    expect(run).toMatchObject({ status: "failed", error_kind: "interrupted", attempts: 3, result: null });
    expect(run.error).toMatch(/interrupted 3 times/);
    expect(await indexRow(req.run_id)).toMatchObject({ status: "failed", error_kind: "interrupted" });
  });

  it("an alarm while an attempt of the same instance is in flight does not start a second one", async () => {
    const req = await echoRequest();
    await interrupted(req, 1);
    const after = await runInDurableObject(runObject(req.run_id), async (instance, state) => {
      instance.parts.lease.inFlight = true;
      await instance.parts.alarm.runAt(Date.now());
      const row = readRun(state.storage.sql);
      instance.parts.lease.inFlight = false;
      return { attempts: row?.attempts, status: row?.status, alarm: await state.storage.getAlarm() };
    });
    expect(after).toMatchObject({ attempts: 1, status: "running" });
    expect(after.alarm).toBeGreaterThan(Date.now() + ATTEMPT_LEASE_MS - 60_000);
  });
});

describe("submitting", () => {
  it("is idempotent by run id: a second submit answers the stored run and runs nothing again", async () => {
    const req = await echoRequest();
    const first = await submitToolRun(env, req);
    expect(first.status).toBe("queued");
    await endedRun(req.run_id);
    const second = await submitToolRun(env, { ...req, arguments: { message: "other" } });
    expect(second).toMatchObject({ status: "succeeded", attempts: 1, arguments: { message: "again" } });
  });
});

describe("retention", () => {
  it("past TOOL_RUNS_RETENTION_SECONDS the alarm deletes the run and its listing row; before, it sleeps until then", async () => {
    const req = await echoRequest();
    await submitToolRun(env, req);
    const run = await endedRun(req.run_id);
    const expiresAt = Date.parse(run.expires_at);
    expect((await indexRow(req.run_id))?.expires_at).toBe(expiresAt);
    const early = await runInDurableObject(runObject(req.run_id), async (instance, state) => {
      await instance.parts.alarm.runAt(expiresAt - 1000);
      return { row: readRun(state.storage.sql) !== null, alarm: await state.storage.getAlarm() };
    });
    expect(early).toEqual({ row: true, alarm: expiresAt });
    const gone = await runInDurableObject(runObject(req.run_id), async (instance, state) => {
      await instance.parts.alarm.runAt(expiresAt + 1);
      return {
        tables: state.storage.sql.exec("SELECT name FROM sqlite_master WHERE type = 'table' AND name = 'run'").toArray().length,
        alarm: await state.storage.getAlarm(),
      };
    });
    expect(gone).toEqual({ tables: 0, alarm: null });
    expect(await indexRow(req.run_id)).toBeNull();
    expect((await call("GET", `/api/tool-runs/${req.run_id}`, { key: await admin() })).status).toBe(404);
  });
});
