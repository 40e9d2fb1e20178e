/** Shared by the tool-runs, schedules and hooks tests: reach a run's object, wait for a run to end, read its trace. */
import { runInDurableObject } from "cloudflare:test";
import { env } from "cloudflare:workers";
import { expect } from "vitest";
import { allShards } from "../../src/shards/rpc";
import type { ToolRun } from "../../durable-objects/tool-run";
import type { Schedule } from "../../durable-objects/schedule";
import { admin, call } from "../helpers/http";
import { eventually } from "../helpers/threads";

/** The ToolRun object of `runId`, typed for runInDurableObject. */
export function runObject(runId: string): DurableObjectStub<ToolRun> {
  return env.TOOL_RUNS.get(env.TOOL_RUNS.idFromName(runId)) as unknown as DurableObjectStub<ToolRun>;
}

/** The Schedule object named `name`, typed for runInDurableObject. */
export function scheduleObject(name: string): DurableObjectStub<Schedule> {
  return env.SCHEDULES.get(env.SCHEDULES.idFromName(name)) as unknown as DurableObjectStub<Schedule>;
}

/** Reads run `runId` (as admin unless `key`) until it has ended; answers the last read. */
export async function endedRun(runId: string, key?: string): Promise<any> {
  const k = key ?? (await admin());
  const r = await eventually(
    () => call("GET", `/api/tool-runs/${runId}`, { key: k }),
    (r) => r.status !== 200 || r.body.data.status === "succeeded" || r.body.data.status === "failed",
    250,
  );
  if (r.status !== 200) throw new Error(`reading run ${runId}: ${r.status} ${JSON.stringify(r.body)}`);
  return r.body.data;
}

/** The D1 listing row of `runId` as stored. */
export async function indexRow(runId: string): Promise<Record<string, unknown> | null> {
  return (await env.DB.prepare("SELECT * FROM tool_runs WHERE run_id = ?").bind(runId).first()) ?? null;
}

/** Waits until run `runId` has published its end, flushes the shards, and answers its runs-index row and trace. */
export async function traceOf(runId: string): Promise<{ listed: any; trace: any }> {
  const published = await eventually(
    () =>
      runInDurableObject(runObject(runId), (_o, state) => Number(state.storage.sql.exec<{ published: number }>("SELECT published FROM run").one().published)),
    (p) => p === 1,
    250,
  );
  expect(published).toBe(1);
  const key = await admin();
  const listed = await eventually(
    async () => {
      await Promise.all(allShards(env).map((s) => s.flush()));
      return call("GET", `/api/runs?interaction=${runId}`, { key });
    },
    (r) => r.status === 200 && r.body.data.total === 1,
  );
  expect(listed.body.data.total, JSON.stringify(listed.body)).toBe(1);
  const trace = await call("GET", `/api/observability/runs/${runId}/trace`, { key });
  expect(trace.status, JSON.stringify(trace.body)).toBe(200);
  return { listed: listed.body.data.items[0], trace: trace.body.data };
}
