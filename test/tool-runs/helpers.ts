/** Shared by the tool-runs and schedules tests: reach a run's object, wait for a run to end. */
import { env } from "cloudflare:test";
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
