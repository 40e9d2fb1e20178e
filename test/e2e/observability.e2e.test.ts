/**
 * Observability end to end (the traces part of the story): against a real `wrangler
 * dev`, three bridge turns answer ok, error and silent; once the shards wrote their batch,
 * GET /api/runs and the metrics show exactly those three; the CSV export has the documented
 * columns; each trace is readable. Then a background tool run and an every-minute schedule run
 * (the schedule's first real fire, from its Durable Object alarm), and the index and the metrics
 * show exactly those five runs. Forgetting the thread removes its traces and leaves the tool runs.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BOOTSTRAP_TOKEN, type DevServer, http, startDev } from "./harness";
import { pollUntil } from "./support/poll";

let dev: DevServer;
let base: string;
let key: string;

beforeAll(async () => {
  dev = await startDev();
  base = dev.baseUrl;
  key = (await http(base, "POST", "/api/keys/bootstrap", { body: { user_id: "root", bootstrap_token: BOOTSTRAP_TOKEN } })).body.data.token;
}, 120_000);

afterAll(async () => {
  await dev?.close();
});

const CSV_HEADER =
  "trace_id,kind,trigger,target_kind,target_name,target_version,route_name,thread_id,interaction_id,user_id,principal,started_at,duration_ms,outcome,step_count,has_error";

describe("run traces against a real wrangler dev", () => {
  it("three turns (ok, error, silent), a background tool run and a schedule's fire are listed, counted, exported, traced; the turns are forgotten with their thread", {
    timeout: 240_000,
  }, async () => {
    expect((await http(base, "POST", "/api/auth/api-keys", { key, body: { user_id: "echo-runner", scopes: ["tool:echo"] } })).status).toBe(200);
    const route = await http(base, "POST", "/api/conversations/traced", {
      key,
      body: { door: "api", target_kind: "tool", target_name: "echo", execution_key: "echo-runner", reply_expr: 'if . == "boom" then {a: .} else . end' },
    });
    expect(route.status, JSON.stringify(route.body)).toBe(200);
    const say = async (text: string) => {
      const r = await http(base, "POST", "/api/conversations/traced/messages", { key, body: { external_user_id: "ann", text, wait_seconds: 20 } });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      return r.body.data as { message_id: string; thread_id: string; status: string };
    };
    const ok = await say("hello");
    const error = await say("boom");
    const silent = await say("   ");
    expect([ok.status, error.status, silent.status]).toEqual(["answered", "error", "silent"]);
    const threadId = ok.thread_id;

    // The index trails by about a second (the shards' batch).
    const listed = await pollUntil(
      "the three runs in the index",
      async (): Promise<any> => (await http(base, "GET", "/api/runs?pageSize=10", { key })).body.data,
      (d: any) => d?.total === 3,
      { timeoutMs: 20_000 },
    );
    expect(listed.items.map((r: { trace_id: string; outcome: string }) => [r.trace_id, r.outcome])).toEqual([
      [silent.message_id, "silent"],
      [error.message_id, "error"],
      [ok.message_id, "ok"],
    ]);
    for (const r of listed.items)
      expect(r).toMatchObject({ kind: "turn", trigger: "api", route_name: "traced", thread_id: threadId, user_id: "ann", principal: "root" });

    const metrics = (await http(base, "GET", "/api/observability/metrics?window=1h", { key })).body.data;
    expect(metrics.turns).toEqual({
      total: 3,
      by_outcome: { ok: 1, error: 1, silent: 1, denied: 0, timeout: 0 },
      by_route: [{ route_name: "traced", total: 3, by_outcome: { ok: 1, error: 1, silent: 1, denied: 0, timeout: 0 } }],
    });
    expect(metrics.turn_duration_ms.samples).toBe(3);
    const text = await http(base, "GET", "/api/observability/metrics", { key, headers: { accept: "application/openmetrics-text" } });
    expect(text.headers.get("content-type")).toMatch(/^application\/openmetrics-text/);
    expect(text.body as string).toContain('bridge_turns{route="traced",outcome="error"} 1\n');
    expect((text.body as string).endsWith("# EOF\n")).toBe(true);

    const csv = await http(base, "GET", "/api/observability/runs/export", { key });
    expect(csv.status).toBe(200);
    expect(csv.headers.get("content-type")).toMatch(/^text\/csv/);
    expect(csv.headers.get("content-disposition")).toMatch(/^attachment; filename="runs-.+\.csv"$/);
    const lines = (csv.body as string).split("\r\n");
    expect(lines[0]).toBe(CSV_HEADER);
    expect(lines.slice(1, 4).map((l) => l.split(",")[13])).toEqual(["silent", "error", "ok"]);
    expect(lines[4]).toBe("");

    const trace = await http(base, "GET", `/api/observability/runs/${error.message_id}/trace`, { key });
    expect(trace.body.data).toMatchObject({ outcome: "error", steps: [{ kind: "tool", name: "echo", outcome: "ok" }], input: { text: "boom" } });
    expect(trace.body.data.error).toContain("reply_expr");
    const dl = await http(base, "GET", `/api/observability/runs/${ok.message_id}/trace/export`, { key });
    expect(dl.headers.get("content-disposition")).toBe(`attachment; filename="trace-${ok.message_id}.json"`);

    // A background tool run, as the admin key.
    const submitted = await http(base, "POST", "/api/tool-runs", { key, body: { tool_name: "echo", arguments: { message: "in the background" } } });
    expect(submitted.status, JSON.stringify(submitted.body)).toBe(202);
    const runId = submitted.body.data.run_id as string;
    const done = await pollUntil(
      "the background run to succeed",
      async (): Promise<any> => (await http(base, "GET", `/api/tool-runs/${runId}`, { key })).body.data,
      (d: any) => d?.status === "succeeded",
      { timeoutMs: 20_000 },
    );
    expect(done).toMatchObject({ tool_name: "echo", result: "in the background", origin: "api", caller: "root", attempts: 1 });

    // An every-minute schedule bound to echo-runner: its alarm fires at the next whole minute.
    const created = await http(base, "POST", "/api/schedules", {
      key,
      body: { name: "tick", tool_name: "echo", tool_kwargs: { message: "tick" }, schedule_kwargs: { cron: "* * * * *" }, execution_key: "echo-runner" },
    });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    expect(created.body.data).toMatchObject({ name: "tick", created: true, once: false });
    const fired = await pollUntil(
      "the schedule's first fire to succeed",
      async (): Promise<any> => (await http(base, "GET", "/api/tool-runs?tool_name=echo", { key })).body.data,
      (d: any) => d?.items?.some((i: any) => i.origin === "schedule" && i.status === "succeeded"),
      { timeoutMs: 90_000 },
    );
    // Deleted right after its first fire, so the next one (a minute later) never comes.
    expect((await http(base, "DELETE", "/api/schedules/tick", { key })).status).toBe(200);
    const scheduled = fired.items.find((i: any) => i.origin === "schedule");
    expect(scheduled).toMatchObject({ schedule_name: "tick", caller: "echo-runner" });

    // The index and the metrics show exactly the five runs.
    const all = await pollUntil(
      "the two tool runs in the index",
      async (): Promise<any> => (await http(base, "GET", "/api/runs?pageSize=10", { key })).body.data,
      (d: any) => d?.total === 5,
      { timeoutMs: 20_000 },
    );
    const toolRuns = all.items.filter((r: any) => r.kind === "tool_run");
    expect(toolRuns.map((r: any) => [r.trigger, r.interaction_id, r.outcome]).sort()).toEqual(
      [
        ["background", runId, "ok"],
        ["schedule", scheduled.run_id, "ok"],
      ].sort(),
    );
    expect(all.items.filter((r: any) => r.kind === "turn")).toHaveLength(3);
    const after = (await http(base, "GET", "/api/observability/metrics?window=1h", { key })).body.data;
    expect(after.turns.total).toBe(3);
    expect(after.runs_by_kind).toEqual([
      { kind: "turn", total: 3, by_outcome: { ok: 1, error: 1, silent: 1, denied: 0, timeout: 0 } },
      { kind: "tool_run", total: 2, by_outcome: { ok: 2, error: 0, silent: 0, denied: 0, timeout: 0 } },
    ]);
    const scheduledTrace = await http(base, "GET", `/api/observability/runs/${toolRuns.find((r: any) => r.trigger === "schedule").trace_id}/trace`, { key });
    expect(scheduledTrace.body.data).toMatchObject({ kind: "tool_run", trigger: "schedule", target: { kind: "tool", name: "echo" }, output: "tick" });

    // Forgetting the thread removes its traces and their index rows.
    const forgot = await http(base, "DELETE", `/api/conversations/traced/thread?thread_id=${encodeURIComponent(threadId)}`, { key });
    expect(forgot.status, JSON.stringify(forgot.body)).toBe(200);
    expect((await http(base, "GET", `/api/runs?session=${encodeURIComponent(threadId)}`, { key })).body.data.total).toBe(0);
    expect((await http(base, "GET", `/api/observability/runs/${ok.message_id}/trace`, { key })).status).toBe(404);
    expect((await http(base, "GET", "/api/observability/metrics", { key })).body.data.turns.total).toBe(0);
    // The tool runs are not the thread's: they stay.
    expect((await http(base, "GET", "/api/runs", { key })).body.data.total).toBe(2);
  });
});
