/**
 * State bindings on schedules (spec §2.6 "carried by … schedule creation"; docs/schedules.md
 * "State bindings"): checked at creation as a target config's binding is, kept with the schedule
 * (its view and the listing show it), and passed to every fire's run, which reads the states
 * before and writes them after the dispatch with a `schedule` origin. Also: objects stored without
 * the binding columns are brought up to date when they start.
 */
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { upgradeRunTable, readRun } from "../../src/tool-runs/run-store";
import { readSchedule, upgradeScheduleTables } from "../../src/schedules/schedule-store";
import { BASE, admin, call, fetchWithEnv, mintKey, uniq } from "../helpers/http";
import { declareTool, network } from "../operator/helpers";
import { endedRun, runObject, scheduleObject } from "../tool-runs/helpers";
import { must } from "../../src/platform/must";

const COUNTER = { type: "object", properties: { count: { type: "integer" }, last: { type: "string" } } };
const tt = (content: string) => ({ content });

async function counterState(): Promise<string> {
  const state = uniq("ticks").toLowerCase();
  const r = await call("PUT", `/api/states/${state}`, { key: await admin(), body: { schema: COUNTER, subject_kinds: ["job"] } });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return state;
}

const counting = (state: string) => ({
  states: [
    {
      state,
      subject_expr: tt('"nightly"'),
      input_injections: [{ into: "ticks", jq: tt(".record") }],
      updates: [{ jq: tt('[{op: "set", path: ["count"], value: ((.record.count // 0) + 1)}, {op: "set", path: ["last"], value: .output.got.message}]') }],
    },
  ],
});

async function kwargsTool() {
  const host = `sched-${crypto.randomUUID().slice(0, 8)}.example`;
  const title = host.split(".")[0];
  await declareTool(title, `https://${host}/run`);
  const seen: any[] = [];
  network({ [host]: (kwargs) => (seen.push(kwargs), { got: kwargs }) });
  return { title, seen };
}

describe("a schedule with a state binding", () => {
  it("is kept with the schedule, and each fire's run reads and writes the state with a schedule origin", async () => {
    const key = await admin();
    const state = await counterState();
    const tool = await kwargsTool();
    const runner = await mintKey({ scopes: [`tool:${tool.title}`] });
    const name = uniq("nightly");
    const created = await call("POST", "/api/schedules", {
      key,
      body: {
        tool_name: tool.title,
        tool_kwargs: { message: "tick" },
        schedule_kwargs: { cron: "0 3 * * *" },
        execution_key: runner.user_id,
        name,
        state_binding: counting(state),
      },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    expect(created.body.data.schedule.state_binding.states[0]).toMatchObject({ state, subject_expr: { content: '"nightly"' } });
    const listed = (await call("GET", "/api/schedules?pageSize=200", { key })).body.data.items.find((s: any) => s.name === name);
    expect(listed.state_binding).toEqual(created.body.data.schedule.state_binding);
    const next = Date.parse(created.body.data.schedule.next_fire_at);

    for (const [i, at] of [next + 1000, next + 86_400_000 + 1000].entries()) {
      const fired = await runInDurableObject(scheduleObject(name), async (instance) => {
        await instance.parts.alarm.runAt(at);
        return must(await instance.read(), "instance.read()").recent_fires[0];
      });
      const run = await endedRun(must(fired.run_id, "fired.run_id"));
      expect(run, JSON.stringify(run)).toMatchObject({ status: "succeeded", origin: "schedule", state_bound: true });
      expect(tool.seen[i].ticks).toEqual(i === 0 ? {} : { count: 1, last: "tick" });
    }
    const record = await call("GET", `/api/states/${state}/records/tool/${tool.title}/job/nightly`, { key });
    expect(record.body.data).toMatchObject({ data: { count: 2, last: "tick" }, seq: 2 });
    const writes = await call("GET", `/api/states/${state}/records/tool/${tool.title}/job/nightly/writes`, { key });
    expect(writes.body.data.items[0].origin).toMatchObject({ door: "schedule", actor: runner.user_id, consumer: `schedule:${name}`, meta: { schedule: name } });
  });

  it("a run-once schedule passes its binding to its run", async () => {
    const state = await counterState();
    const tool = await kwargsTool();
    const r = await call("POST", "/api/schedules", {
      key: await admin(),
      body: { tool_name: tool.title, tool_kwargs: { message: "now" }, schedule_kwargs: {}, execution_key: "root", state_binding: counting(state) },
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(await endedRun(r.body.data.run_id)).toMatchObject({ status: "succeeded", state_bound: true });
    const record = await call("GET", `/api/states/${state}/records/tool/${tool.title}/job/nightly`, { key: await admin() });
    expect(record.body.data.data).toEqual({ count: 1, last: "now" });
  });

  it("is refused as a target config's binding is, storing nothing: undeclared state 404, a program that does not compile 400, a maintenance tool 400, no states store 501", async () => {
    const key = await admin();
    const body = (binding: unknown, extra: Record<string, unknown> = {}) => ({
      tool_name: "echo",
      tool_kwargs: { message: "x" },
      schedule_kwargs: { cron: "0 3 * * *" },
      execution_key: "root",
      name: uniq("refused"),
      state_binding: binding,
      ...extra,
    });
    const undeclared = await call("POST", "/api/schedules", { key, body: body({ states: [{ state: uniq("none").toLowerCase(), subject_expr: tt('"x"') }] }) });
    expect(undeclared.status).toBe(404);
    const state = await counterState();
    const broken = await call("POST", "/api/schedules", { key, body: body({ states: [{ state, subject_expr: tt("{{") }] }) });
    expect(broken.status).toBe(400);
    const notJq = await call("POST", "/api/schedules", { key, body: body({ states: [{ state, subject_expr: tt("if") }] }) });
    expect(notJq.status).toBe(400);
    expect(notJq.body.error).toMatch(/state_binding: states\[0\]\.subject_expr does not compile as jq/);
    const maintenance = await call("POST", "/api/schedules", {
      key,
      body: body({ states: [{ state, subject_expr: tt('"x"') }] }, { tool_name: "maintenance.prune_expired", tool_kwargs: {} }),
    });
    expect(maintenance.status).toBe(400);
    expect(maintenance.body.error).toMatch(/state_binding/);
    const noStore = await fetchWithEnv(
      { ...env, STATES_STORE_URL: "" },
      new Request(`${BASE}/api/schedules`, {
        method: "POST",
        headers: { "x-api-key": key, "content-type": "application/json" },
        body: JSON.stringify(body({ states: [{ state, subject_expr: tt('"x"') }] })),
      }),
    );
    expect(noStore.status).toBe(501);
    expect(await noStore.json()).toMatchObject({ code: "states-not-configured" });
    const count = await env.DB.prepare("SELECT COUNT(*) AS n FROM schedules WHERE name LIKE 'refused-%'").first<{ n: number }>();
    expect(must(count, "count").n).toBe(0);
  });
});

describe("objects written before schedules carried state bindings", () => {
  it("a Schedule's spec table gains the state_binding column and reads as unbound", async () => {
    const name = uniq("legacy");
    const state = await runInDurableObject(scheduleObject(name), (_o, s) => {
      const sql = s.storage.sql;
      sql.exec(`CREATE TABLE spec (id INTEGER PRIMARY KEY CHECK (id = 1), name TEXT NOT NULL, tool_name TEXT NOT NULL, tool_kwargs TEXT NOT NULL, schedule_kwargs TEXT NOT NULL,
        cron TEXT NOT NULL, timezone TEXT NOT NULL, execution_key TEXT NOT NULL, execution_key_fingerprint TEXT NOT NULL, created_by TEXT NOT NULL,
        created_at INTEGER NOT NULL, updated_at INTEGER NOT NULL, next_fire_at INTEGER, fires INTEGER NOT NULL DEFAULT 0, last_fire_at INTEGER, last_run_id TEXT)`);
      sql.exec(
        "CREATE TABLE fires (seq INTEGER PRIMARY KEY, run_id TEXT, slot_at INTEGER, fired_at INTEGER NOT NULL, catch_up INTEGER NOT NULL, skipped INTEGER NOT NULL, submitted INTEGER NOT NULL)",
      );
      sql.exec(
        "INSERT INTO spec (id, name, tool_name, tool_kwargs, schedule_kwargs, cron, timezone, execution_key, execution_key_fingerprint, created_by, created_at, updated_at) VALUES (1, ?, 'echo', '{}', '{}', '0 3 * * *', 'UTC', 'root', 'f', 'root', 1, 1)",
        name,
      );
      upgradeScheduleTables(sql);
      upgradeScheduleTables(sql);
      return readSchedule(sql);
    });
    expect(state).toMatchObject({ name, state_binding: null });
  });

  it("a ToolRun's run table gains the hook and binding columns and reads as neither", async () => {
    const runId = crypto.randomUUID();
    const row = await runInDurableObject(runObject(runId), (_o, s) => {
      const sql = s.storage.sql;
      sql.exec(`CREATE TABLE run (id INTEGER PRIMARY KEY CHECK (id = 1), run_id TEXT NOT NULL, tool_name TEXT NOT NULL, arguments TEXT NOT NULL,
        caller_user_id TEXT NOT NULL, caller_fingerprint TEXT NOT NULL, origin TEXT NOT NULL, schedule_name TEXT, slot_at INTEGER,
        status TEXT NOT NULL, attempts INTEGER NOT NULL DEFAULT 0, result TEXT, error TEXT, error_kind TEXT,
        created_at INTEGER NOT NULL, started_at INTEGER, finished_at INTEGER, expires_at INTEGER, published INTEGER NOT NULL DEFAULT 0, steps TEXT)`);
      sql.exec(
        "INSERT INTO run (id, run_id, tool_name, arguments, caller_user_id, caller_fingerprint, origin, status, created_at, published) VALUES (1, ?, 'echo', '{}', 'root', 'f', 'api', 'succeeded', 1, 1)",
        runId,
      );
      upgradeRunTable(sql);
      upgradeRunTable(sql);
      return readRun(sql);
    });
    expect(row).toMatchObject({ run_id: runId, hook_name: null, state_binding: null, origin: "api" });
  });
});
