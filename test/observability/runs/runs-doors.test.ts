/**
 * Runs outside the bridge (recorded through src/observability/runs/recorder.ts, kept by the IndexShards), the
 * runs doors' filters and paging, POST /api/runs/prune, and trace retention.
 */
import { runDurableObjectAlarm } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { describe, expect, it, vi } from "vitest";
import type { RunTraceInput } from "../../../src/shared/run-trace";
import { allShards, runShard } from "../../../src/shards/rpc";
import { recordRun } from "../../../src/observability/runs/recorder";
import { admin, call, mintKey, uniq } from "../../helpers/http";
import { read } from "./helpers";

const enc = encodeURIComponent;
const flushAll = () => Promise.all(allShards(env).map((s) => s.flush()));

function toolRun(over: Partial<RunTraceInput> = {}): RunTraceInput {
  const id = crypto.randomUUID();
  return {
    trace_id: id,
    kind: "tool_run",
    trigger: "background",
    target: { kind: "tool", name: "echo", version: null },
    route_name: null,
    thread_id: null,
    interaction_id: id,
    user_id: "alice",
    principal: "alice",
    started_at: new Date().toISOString(),
    duration_ms: 5,
    outcome: "ok",
    error: null,
    steps: [{ kind: "tool", name: "echo", started_at: new Date().toISOString(), duration_ms: 4, outcome: "ok", error: null }],
    input: { message: "hi" },
    output: "hi",
    ...over,
  };
}

describe("recordRun", () => {
  it("keeps the trace on its shard and lists its summary after the shard's batch", async () => {
    const user = uniq("caller");
    const t = toolRun({ user_id: user, principal: user, outcome: "error", error: "tool_error: the endpoint refused", steps: [] });
    await recordRun(env, t);
    // Readable at once from its shard; listed once the shard wrote its batch.
    expect(await read(`/api/observability/runs/${t.trace_id}/trace`)).toMatchObject({
      trace_id: t.trace_id,
      kind: "tool_run",
      error: "tool_error: the endpoint refused",
      input: { message: "hi" },
      output: "hi",
    });
    await flushAll();
    expect((await read(`/api/runs?user=${enc(user)}`)).items).toEqual([
      expect.objectContaining({
        trace_id: t.trace_id,
        kind: "tool_run",
        trigger: "background",
        outcome: "error",
        has_error: true,
        step_count: 0,
        thread_id: null,
      }),
    ]);
  });

  it("with waitUntil hands the call over and resolves at once", async () => {
    const t = toolRun();
    const handed: Promise<unknown>[] = [];
    await recordRun(env, t, (p) => handed.push(p));
    expect(handed).toHaveLength(1);
    await Promise.all(handed);
    expect(await runShard(env, t.trace_id).readTrace(t.trace_id, Date.now())).toMatchObject({ trace_id: t.trace_id });
  });

  it("drops an invalid trace with a log line naming fields, never values, and never throws", async () => {
    const error = vi.spyOn(console, "error").mockImplementation(() => undefined);
    const bad = { ...toolRun(), outcome: "perhaps", user_id: "secret-value" } as unknown as RunTraceInput;
    await recordRun(env, bad);
    expect(error).toHaveBeenCalledTimes(1);
    expect(String(error.mock.calls[0][0])).toContain("outcome");
    expect(String(error.mock.calls[0][0])).not.toContain("secret-value");
    expect(await runShard(env, bad.trace_id).readTrace(bad.trace_id, Date.now())).toBeNull();
    error.mockRestore();
  });
});

describe("the runs doors' filters and paging", () => {
  it("filter by preset, version, user, session, interaction, outcome, kind, from and to; page like the other doors", async () => {
    const user = uniq("filter-user");
    const base = Math.floor(Date.now() / 60_000) * 60_000 - 1800_000;
    const at = (min: number) => new Date(base + min * 60_000).toISOString();
    const runs = [
      toolRun({ user_id: user, principal: user, started_at: at(0), target: { kind: "tool", name: "preset-a", version: "1" }, outcome: "ok" }),
      toolRun({ user_id: user, principal: user, started_at: at(1), target: { kind: "tool", name: "preset-a", version: "2" }, outcome: "timeout" }),
      toolRun({
        user_id: user,
        principal: user,
        started_at: at(2),
        target: { kind: "tool", name: "preset-b", version: null },
        outcome: "denied",
        thread_id: "thread-f",
        kind: "hook_fire",
        trigger: "hook",
      }),
      toolRun({
        user_id: user,
        principal: user,
        started_at: at(3),
        target: { kind: "agent", name: "echo", version: null },
        outcome: "ok",
        kind: "agent_run",
        trigger: "direct",
        interaction_id: "ix-1",
      }),
    ];
    for (const r of runs) await recordRun(env, r);
    await flushAll();
    const ids = async (q: string, path = "/api/runs") => (await read(`${path}?user=${enc(user)}${q}`)).items.map((r: { trace_id: string }) => r.trace_id);
    const [a1, a2, b, agent] = runs.map((r) => r.trace_id);
    expect(await ids("")).toEqual([agent, b, a2, a1]);
    expect(await ids("&preset=preset-a")).toEqual([a2, a1]);
    expect(await ids("&preset=preset-a&version=2")).toEqual([a2]);
    expect(await ids("&session=thread-f")).toEqual([b]);
    expect(await ids("&interaction=ix-1")).toEqual([agent]);
    expect(await ids("&outcome=ok")).toEqual([agent, a1]);
    expect(await ids("&kind=hook_fire")).toEqual([b]);
    expect(await ids(`&from=${enc(at(1))}&to=${enc(at(3))}`)).toEqual([b, a2]);
    expect(await ids("&outcome=timeout", "/api/observability/runs")).toEqual([a2]);

    const page1 = await read(`/api/runs?user=${enc(user)}&pageSize=3`);
    expect(page1).toMatchObject({ total: 4, page: 1, page_size: 3, next_page: 2, truncated: false });
    const page2 = await read(`/api/runs?user=${enc(user)}&pageSize=3&page=2`);
    expect(page2).toMatchObject({ total: 4, page: 2, page_size: 3, next_page: null });
    expect(page2.items.map((r: { trace_id: string }) => r.trace_id)).toEqual([a1]);
    // Page sizes clamp: 200 on /api/runs, 100 on the observability listing.
    expect((await read(`/api/runs?user=${enc(user)}&pageSize=5000`)).page_size).toBe(200);
    expect((await read(`/api/observability/runs?user=${enc(user)}&pageSize=150`)).page_size).toBe(100);
  });

  it("refuses malformed filters with a 400 naming the field, never the value", async () => {
    const key = await admin();
    for (const [q, field] of [
      ["outcome=fine-thanks", "outcome"],
      ["from=not-a-date-xyz", "from"],
      ["pageSize=0", "pageSize"],
      ["page=abc", "page"],
      ["kind=nightly", "kind"],
      [`from=${enc("2026-02-01T00:00:00Z")}&to=${enc("2026-01-01T00:00:00Z")}`, "from"],
    ] as const) {
      const paths = q.startsWith("page")
        ? ["/api/runs", "/api/observability/runs"]
        : ["/api/runs", "/api/observability/runs", "/api/observability/runs/export"];
      for (const path of paths) {
        const r = await call("GET", `${path}?${q}`, { key });
        expect(r.status, `${path}?${q}`).toBe(400);
        expect(r.body.error).toContain(field);
        expect(r.body.error).not.toMatch(/fine-thanks|not-a-date-xyz|nightly/);
      }
    }
  });
});

describe("POST /api/runs/prune", () => {
  it("removes runs older than the age, index rows and kept traces, with counts", async () => {
    const user = uniq("prune-user");
    const old = [
      toolRun({ user_id: user, started_at: new Date(Date.now() - 3 * 3600_000).toISOString() }),
      toolRun({ user_id: user, started_at: new Date(Date.now() - 2 * 3600_000).toISOString() }),
    ];
    const fresh = toolRun({ user_id: user });
    for (const r of [...old, fresh]) await recordRun(env, r);
    await flushAll();
    const key = await admin();
    const r = await call("POST", "/api/runs/prune", { key, body: { older_than_seconds: 3600 } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.data).toMatchObject({ runs_removed: 2, traces_removed: 2 });
    expect(Date.parse(r.body.data.before)).toBeLessThan(Date.now() - 3590_000);
    expect((await read(`/api/runs?user=${enc(user)}`)).items.map((x: { trace_id: string }) => x.trace_id)).toEqual([fresh.trace_id]);
    expect((await call("GET", `/api/observability/runs/${old[0].trace_id}/trace`, { key })).status).toBe(404);
    expect((await call("POST", "/api/runs/prune", { key, body: { older_than_seconds: 3600 } })).body.data).toMatchObject({
      runs_removed: 0,
      traces_removed: 0,
    });
  });

  it("prunes runs a shard still buffers, so no later flush brings them back", async () => {
    const user = uniq("buffered");
    await recordRun(env, toolRun({ user_id: user, started_at: new Date(Date.now() - 7200_000).toISOString() }));
    const r = await call("POST", "/api/runs/prune", { key: await admin(), body: { older_than_seconds: 3600 } });
    expect(r.body.data.traces_removed).toBeGreaterThanOrEqual(1);
    await flushAll();
    expect((await read(`/api/runs?user=${enc(user)}`)).total).toBe(0);
  });

  it("is admin-only and refuses a bad body with 400", async () => {
    const key = await admin();
    const reader = await mintKey({ scopes: ["runs"] });
    expect((await call("POST", "/api/runs/prune", { key: reader.key, body: { older_than_seconds: 3600 } })).status).toBe(403);
    for (const body of [{}, { older_than_seconds: 10 }, { older_than_seconds: "3600" }, { older_than_seconds: 1.5 }, { older_than_seconds: 3600, extra: 1 }]) {
      const r = await call("POST", "/api/runs/prune", { key, body });
      expect(r.status, JSON.stringify(body)).toBe(400);
    }
  });
});

describe("trace retention on the shards", () => {
  it("the shard's alarm drops an expired trace and its index row", async () => {
    const user = uniq("expired");
    // Ended RUNS_TRACE_RETENTION_SECONDS (7 days by default) minus 4 s ago: it expires 4 s from
    // now. Not already expired: the shard's real alarm would then race the first read.
    const expiresAt = Date.now() + 4_000;
    const t = toolRun({ user_id: user, started_at: new Date(expiresAt - 7 * 86_400_000 - 5).toISOString() }); // duration_ms is 5
    await recordRun(env, t);
    await flushAll();
    expect((await read(`/api/runs?user=${enc(user)}`)).total).toBe(1);
    expect(await runShard(env, t.trace_id).readTrace(t.trace_id, Date.now())).not.toBeNull();
    expect(await runShard(env, t.trace_id).readTrace(t.trace_id, expiresAt)).toBeNull();
    await new Promise((r) => setTimeout(r, Math.max(0, expiresAt - Date.now()) + 50));
    // Its alarm (the real one may have fired already: running it again is harmless).
    await runDurableObjectAlarm(runShard(env, t.trace_id) as unknown as DurableObjectStub);
    await flushAll();
    expect((await read(`/api/runs?user=${enc(user)}`)).total).toBe(0);
  });
});
