/**
 * Every background tool run and every schedule fire records one trace (docs/tool-runs.md
 * "Traces"): found by its run id in `GET /api/runs`, with kind `tool_run`, the trigger, the outcome
 * (ok, denied, error) and the dispatch as a timed step in its trace.
 */
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { submitToolRun } from "../../src/tool-runs/submit";
import { admin, call, mintKey, uniq } from "../helpers/http";
import { endedRun, scheduleObject, traceOf } from "./helpers";
import { must } from "../../src/platform/must";

describe("tool run traces", () => {
  it("a background run: kind tool_run, trigger background, outcome ok, the dispatch as a step, input and output", async () => {
    const k = await mintKey({ scopes: ["tools:read", "tool:echo"] });
    const r = await call("POST", "/api/tool-runs", { key: k.key, body: { tool_name: "echo", arguments: { message: "traced" } } });
    await endedRun(r.body.data.run_id);
    const { listed, trace } = await traceOf(r.body.data.run_id);
    expect(listed).toMatchObject({
      trace_id: r.body.data.run_id,
      kind: "tool_run",
      trigger: "background",
      target: { kind: "tool", name: "echo", version: null },
      interaction_id: r.body.data.run_id,
      user_id: k.user_id,
      principal: k.user_id,
      outcome: "ok",
      step_count: 1,
      has_error: false,
    });
    expect(trace).toMatchObject({ input: { message: "traced" }, output: "traced", error: null });
    expect(trace.steps).toEqual([
      { kind: "tool", name: "echo", started_at: expect.stringMatching(/Z$/), duration_ms: expect.any(Number), outcome: "ok", error: null },
    ]);
  });

  it("a preset's run names the preset version it ran", async () => {
    const preset = uniq("greeter");
    const made = await call("POST", "/api/presets", {
      key: await admin(),
      body: { name: preset, base_tool: "echo", description: "says hi", fixed_kwargs: { message: "hi" } },
    });
    expect(made.status, JSON.stringify(made.body)).toBe(200);
    const r = await call("POST", "/api/tool-runs", { key: await admin(), body: { tool_name: preset } });
    expect((await endedRun(r.body.data.run_id)).result).toBe("hi");
    expect((await traceOf(r.body.data.run_id)).listed.target).toEqual({ kind: "tool", name: preset, version: "1" });
  });

  it("a run denied at start: outcome denied, the reason in the admin's trace", async () => {
    const k = await mintKey({ scopes: ["tool:echo"] });
    await call("DELETE", `/api/auth/api-keys/${k.user_id}`, { key: await admin() });
    const run_id = crypto.randomUUID();
    await submitToolRun(env, {
      run_id,
      tool_name: "echo",
      arguments: { message: "x" },
      caller: { user_id: k.user_id, fingerprint: k.fingerprint },
      origin: "api",
      schedule_name: null,
      slot_at: null,
    });
    await endedRun(run_id);
    const { listed, trace } = await traceOf(run_id);
    expect(listed).toMatchObject({ outcome: "denied", has_error: true });
    expect(trace.error).toBe("execution key no longer exists");
    expect(trace.output).toBeNull();
  });

  it("a maintenance run records its own step", async () => {
    const r = await call("POST", "/api/tool-runs", { key: await admin(), body: { tool_name: "maintenance.checkpoints_sweep" } });
    await endedRun(r.body.data.run_id);
    const { trace } = await traceOf(r.body.data.run_id);
    expect(trace).toMatchObject({ outcome: "ok", target: { name: "maintenance.checkpoints_sweep" } });
    expect(trace.steps).toEqual([expect.objectContaining({ kind: "tool", name: "maintenance.checkpoints_sweep", outcome: "ok" })]);
  });

  it("a schedule's fire: trigger schedule; a fire denied after grant loss: outcome denied", async () => {
    const k = await mintKey({ scopes: ["tool:echo"] });
    const name = uniq("traced");
    const created = await call("POST", "/api/schedules", {
      key: await admin(),
      body: { tool_name: "echo", tool_kwargs: { message: "s" }, schedule_kwargs: { cron: "0 3 * * *" }, execution_key: k.user_id, name },
    });
    const next = Date.parse(created.body.data.schedule.next_fire_at);
    const fire = async (at: number) =>
      runInDurableObject(scheduleObject(name), async (instance) => {
        await instance.parts.alarm.runAt(at);
        return must(must(await instance.read(), "instance.read()").recent_fires[0].run_id, "the newest fire's run_id");
      });
    const ok = await fire(next + 1000);
    await endedRun(ok);
    expect((await traceOf(ok)).listed).toMatchObject({ kind: "tool_run", trigger: "schedule", outcome: "ok", principal: k.user_id });
    await call("POST", `/api/auth/api-keys/${k.user_id}/scopes`, { key: await admin(), body: { remove: ["tool:echo"] } });
    const denied = await fire(next + 86_400_000 + 1000);
    await endedRun(denied);
    expect((await traceOf(denied)).listed).toMatchObject({ trigger: "schedule", outcome: "denied" });
  });
});
