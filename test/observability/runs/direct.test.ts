/**
 * Direct runs: an agent run door's run is traced as the calling key's `agent_run`, and
 * an admin's `POST /api/run-tool` as its `tool_run`.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { allShards } from "../../../src/shards/rpc";
import { directTrace } from "../../../src/observability/runs/direct";
import { StepLog } from "../../../src/shared/run-steps";
import { admin, call, mintKey, uniq } from "../../helpers/http";
import { eventually } from "../../helpers/threads";
import { read } from "./helpers";

describe("an agent run door's run", () => {
  it("is recorded as a direct agent_run of the caller, with its output and outcome", async () => {
    const k = await mintKey({ scopes: ["agents:read", "agent:echo", "runs:read", "observability:read"] });
    const thread = uniq("direct-thread");
    const r = await call("POST", "/api/agents/echo/runs", { key: k.key, body: { user_message: "hello", thread_id: thread } });
    expect(r.status).toBe(200);
    const listed = await eventually(
      async () => {
        await Promise.all(allShards(env).map((s) => s.flush()));
        return read(`/api/runs?kind=agent_run&user=${encodeURIComponent(k.user_id)}`);
      },
      (d) => d.total === 1,
    );
    expect(listed.items[0]).toMatchObject({
      kind: "agent_run",
      trigger: "direct",
      target: { kind: "agent", name: "echo" },
      thread_id: thread,
      principal: k.user_id,
      outcome: "ok",
    });
    const trace = await read(`/api/observability/runs/${listed.items[0].trace_id}/trace`, k.key);
    expect(trace).toMatchObject({ input: { user_message: "hello" }, output: "echo: hello", error: null });
  });
});

describe("an admin's run-tool dispatch", () => {
  it("is recorded as a direct tool_run of the admin, ok or error as the dispatch ended", async () => {
    const key = await admin();
    const marker = uniq("run-tool");
    const ok = await call("POST", "/api/run-tool", { key, body: { tool_name: "echo", arguments: { message: marker } } });
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
    const bad = await call("POST", "/api/run-tool", { key, body: { tool_name: "echo", arguments: { message: 5, tag: marker } } });
    expect(bad.status).toBe(400);
    // The two traces whose recorded input carries this test's marker.
    const mine = async () => {
      await Promise.all(allShards(env).map((s) => s.flush()));
      const d = await read(`/api/runs?kind=tool_run&preset=echo&pageSize=100`);
      const traces = await Promise.all(d.items.map((i: any) => read(`/api/observability/runs/${i.trace_id}/trace`)));
      return traces.filter((t: any) => t.input?.message === marker || t.input?.tag === marker);
    };
    const traces = await eventually(mine, (xs) => xs.length === 2);
    const okRun = traces.find((t: any) => t.outcome === "ok");
    expect(okRun).toMatchObject({ kind: "tool_run", trigger: "direct", target: { kind: "tool", name: "echo" }, output: marker, error: null });
    expect(okRun.principal).toBe(okRun.user_id);
    expect(traces.find((t: any) => t.outcome === "error")?.error).toMatch(/^invalid_kwargs: /);
  });
});

describe("a direct run's trace (pure)", () => {
  const base = { target: { kind: "agent" as const, name: "a" }, caller: "c", threadId: null, startedAt: 1000, endedAt: 1250, input: {} };
  it("maps results to outcomes: ok, silent agent answer, denied, timeout (by kind or by the last step), error", () => {
    const log = new StepLog();
    expect(directTrace({ ...base, kind: "agent_run", log, result: { ok: true, value: "hi" } })).toMatchObject({
      outcome: "ok",
      duration_ms: 250,
      trigger: "direct",
      user_id: "c",
      principal: "c",
      error: null,
    });
    expect(directTrace({ ...base, kind: "agent_run", log, result: { ok: true, value: null } }).outcome).toBe("silent");
    expect(directTrace({ ...base, kind: "tool_run", log, result: { ok: true, value: null } }).outcome).toBe("ok");
    expect(directTrace({ ...base, kind: "agent_run", log, result: { ok: false, kind: "denied", message: "no" } })).toMatchObject({
      outcome: "denied",
      error: "denied: no",
    });
    expect(directTrace({ ...base, kind: "tool_run", log, result: { ok: false, kind: "timeout", message: "slow" } }).outcome).toBe("timeout");
    expect(directTrace({ ...base, kind: "agent_run", log, result: { ok: false, kind: "agent_error", message: "boom" } }).outcome).toBe("error");
    const timedOut = new StepLog();
    timedOut.add({
      kind: "llm",
      name: "m",
      started_at: new Date(1000).toISOString(),
      duration_ms: 200,
      outcome: "timeout",
      error: "LLM endpoint did not answer within 0.2s",
    });
    expect(
      directTrace({ ...base, kind: "agent_run", log: timedOut, result: { ok: false, kind: "agent_error", message: "LLM endpoint did not answer within 0.2s" } })
        .outcome,
    ).toBe("timeout");
  });
});
