/**
 * GET /api/observability/metrics: turns by outcome and route, exact nearest-rank
 * percentiles, delivery attempts, failures and the backlog, rate-cap sheds, queue depths; JSON and
 * OpenMetrics; restricted callers see their own runs only. Tests run in order in this file's own
 * database, so the first one sees only the turns it records.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { RunOutcome } from "../../src/shared/run-trace";
import { allShards } from "../../src/shards/rpc";
import { recordRun } from "../../src/observability/runs/recorder";
import { send } from "../helpers/bridge";
import { answerOnly, fakeNetwork } from "../helpers/network";
import { admin, call, mintKey } from "../helpers/http";
import { eventually, makeDue, runAlarm } from "../helpers/threads";
import { gate } from "../operator/helpers";
import { declareHttpTool, runsCaughtUp, toolRoute, turn } from "./runs/helpers";

const flushAll = () => Promise.all(allShards(env).map((s) => s.flush()));

async function metrics(query = "", key?: string) {
  const r = await call("GET", `/api/observability/metrics${query}`, { key: key ?? (await admin()) });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.data;
}

const routeOf = (m: any, name: string) => m.turns.by_route.find((r: { route_name: string }) => r.route_name === name);

describe("turn duration percentiles", () => {
  it("are exact nearest-rank figures over the window's turns only", async () => {
    const durations = [70, 20, 200, 150, 10, 90, 30, 180, 60, 110, 40, 190, 130, 80, 170, 50, 120, 160, 100, 140];
    const now = Date.now();
    const turnTrace = (duration: number, startedAt: number, outcome: RunOutcome = "ok") => {
      const id = crypto.randomUUID();
      return recordRun(env, {
        trace_id: id,
        kind: "turn",
        trigger: "api",
        target: { kind: "tool", name: "echo", version: null },
        route_name: "pct-route",
        thread_id: `bridge:pct-route:${id}`,
        interaction_id: id,
        user_id: "p",
        principal: "root",
        started_at: new Date(startedAt).toISOString(),
        duration_ms: duration,
        outcome,
        error: null,
        steps: [],
        input: null,
        output: null,
      });
    };
    for (const d of durations) await turnTrace(d, now - 60_000);
    await turnTrace(99_999, now - 2 * 3600_000); // outside a 1h window
    await flushAll();
    const m = await metrics("?window=1h");
    expect(m.turn_duration_ms).toEqual({ samples: 20, sum: 2100, p50: 100, p95: 190, p99: 200 });
    expect(routeOf(m, "pct-route")).toMatchObject({ total: 20, by_outcome: { ok: 20, error: 0, silent: 0, denied: 0, timeout: 0 } });
    expect((await metrics("?window=3h")).turn_duration_ms).toMatchObject({ samples: 21, p99: 99_999 });
  });
});

describe("turns by outcome and route", () => {
  it("counts each outcome per route, as JSON and as OpenMetrics text", async () => {
    const r = await toolRoute("echo", { reply_expr: 'if . == "boom" then {a: .} else . end' });
    const ok = await turn(r.name, "fine");
    await turn(r.name, "boom");
    await turn(r.name, "  ");
    await runsCaughtUp(ok.thread_id);
    const m = await metrics();
    expect(m).toMatchObject({ window: "1h", window_seconds: 3600, own_runs_only: false });
    expect(routeOf(m, r.name)).toEqual({ route_name: r.name, total: 3, by_outcome: { ok: 1, error: 1, silent: 1, denied: 0, timeout: 0 } });
    expect(m.runs_by_kind.find((k: { kind: string }) => k.kind === "turn").total).toBe(23);

    const om = await call("GET", "/api/observability/metrics", { key: await admin(), headers: { accept: "application/openmetrics-text; version=1.0.0" } });
    expect(om.status).toBe(200);
    expect(om.headers.get("content-type")).toBe("application/openmetrics-text; version=1.0.0; charset=utf-8");
    const text = om.body as string;
    expect(text).toContain(`bridge_turns{route="${r.name}",outcome="ok"} 1\n`);
    expect(text).toContain(`bridge_turns{route="${r.name}",outcome="silent"} 1\n`);
    expect(text.endsWith("# EOF\n")).toBe(true);
    const prom = await call("GET", "/api/observability/metrics?window=2h", { key: await admin(), headers: { accept: "text/plain" } });
    expect(prom.headers.get("content-type")).toBe("text/plain; version=0.0.4; charset=utf-8");
    expect(prom.body as string).toContain("bridge_metrics_window_seconds 7200\n");
  });
});

describe("deliveries", () => {
  it("counts attempts and failed attempts, the backlog now, and records failed in the window", async () => {
    const hook = "https://hooks.example.com/metrics";
    let up = false;
    fakeNetwork(answerOnly({ [`POST ${hook}`]: () => new Response(null, { status: up ? 204 : 500 }) }));
    const r = await toolRoute("echo", { callback_url: hook });
    const sent = await send(r.name, { external_user_id: "d", text: "call me back" });
    expect(sent.status).toBe(202);
    const threadId = sent.body.data.thread_id;
    const deliveriesOf = async () => {
      await runsCaughtUp(threadId);
      return (await metrics()).deliveries.by_route.find((x: { route_name: string }) => x.route_name === r.name);
    };
    const first = await eventually(deliveriesOf, (d) => d?.failed_attempts === 1);
    expect(first).toEqual({ route_name: r.name, attempts: 1, failed_attempts: 1, failed_records: 0, backlog: 1 });

    up = true;
    await makeDue(threadId, "delivery_due_at");
    await runAlarm(threadId);
    expect(await eventually(deliveriesOf, (d) => d?.backlog === 0)).toEqual({
      route_name: r.name,
      attempts: 2,
      failed_attempts: 1,
      failed_records: 0,
      backlog: 0,
    });

    // A record failed for good in the window (the failed listing's rows; written by the shards).
    const failedAt = new Date().toISOString();
    await env.DB.prepare("INSERT INTO failed_records (message_id, route_name, thread_id, failed_at, expires_at) VALUES (?, ?, ?, ?, ?)")
      .bind(crypto.randomUUID(), r.name, threadId, failedAt, Date.now() + 3600_000)
      .run();
    const m = await metrics();
    expect(m.deliveries.by_route.find((x: { route_name: string }) => x.route_name === r.name).failed_records).toBe(1);
    expect(m.deliveries.attempts).toBeGreaterThanOrEqual(2);
  });
});

describe("rate-cap sheds", () => {
  it("counts every refused rate token per route (429 at the door), handed on in the background", async () => {
    const r = await toolRoute("echo", { turns_per_hour_override: 1 });
    expect((await send(r.name, { external_user_id: "s", text: "one", wait_seconds: 10 })).status).toBe(200);
    expect((await send(r.name, { external_user_id: "s", text: "two" })).status).toBe(429);
    expect((await send(r.name, { external_user_id: "s", text: "three" })).status).toBe(429);
    const shedsOf = async () => {
      await flushAll();
      return (await metrics()).rate_cap_sheds.by_route.find((x: { route_name: string }) => x.route_name === r.name)?.count ?? 0;
    };
    expect(await eventually(shedsOf, (n) => n === 2, 150)).toBe(2);
  });
});

describe("queue depths", () => {
  it("sum each route's thread FIFOs as of their last push", async () => {
    const url = "https://tools.example/metrics-hold";
    const g = gate();
    fakeNetwork(answerOnly({ [`POST ${url}`]: async () => (await g.wait(), Response.json("done")) }));
    const tool = await declareHttpTool(url);
    const r = await toolRoute(tool);
    const a = await send(r.name, { external_user_id: "q", text: "first" });
    const b = await send(r.name, { external_user_id: "q", text: "second" });
    expect([a.status, b.status]).toEqual([202, 202]);
    const threadId = a.body.data.thread_id;
    const queueOf = async () => {
      await runsCaughtUp(threadId);
      return (await metrics()).queues.by_route.find((x: { route_name: string }) => x.route_name === r.name);
    };
    expect(await eventually(queueOf, (q) => q?.depth_total === 2)).toEqual({ route_name: r.name, depth_total: 2, depth_max: 2, threads_queued: 1 });
    g.open();
    expect(await eventually(queueOf, (q) => q === undefined)).toBeUndefined();
  });
});

describe("restricted callers and the window", () => {
  it("a restricted caller gets its own runs' figures only; deployment-wide figures are null", async () => {
    const r = await toolRoute("echo");
    const owner = await mintKey({ scopes: ["conversations", "observability:read"] });
    const mine = await mintKey({ scopes: ["conversations", "observability:read"], owner_user_id: owner.user_id });
    const own = await turn(r.name, "mine", { key: mine.key });
    await runsCaughtUp(own.thread_id);
    const m = await metrics("", mine.key);
    expect(m).toMatchObject({ own_runs_only: true, deliveries: null, rate_cap_sheds: null, queues: null });
    expect(m.turns.total).toBe(1);
    expect(m.turns.by_route).toEqual([{ route_name: r.name, total: 1, by_outcome: { ok: 1, error: 0, silent: 0, denied: 0, timeout: 0 } }]);
    expect(m.turn_duration_ms.samples).toBe(1);
  });

  it("refuses a malformed or out-of-bounds window with 400", async () => {
    const key = await admin();
    for (const w of ["1w", "30s", "8d", "soon", "1.5h"]) {
      const r = await call("GET", `/api/observability/metrics?window=${w}`, { key });
      expect(r.status, w).toBe(400);
      expect(r.body.error).toContain("window");
    }
    expect((await metrics("?window=90m")).window_seconds).toBe(5400);
  });
});
