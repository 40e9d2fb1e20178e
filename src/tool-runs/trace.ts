/**
 * A background tool run's trace (docs/tool-runs.md "Traces"): one per run, recorded
 * through the runs recorder (src/observability/runs/recorder.ts) when the run ends, whatever the end: a result,
 * a failure, a denial at start, or a run given up after interruptions. The trace id is the run id,
 * so `GET /api/runs?interaction=<run_id>` finds it; a schedule's fire is a run with trigger
 * `schedule`, and a hook's fire a run of kind `hook_fire` with trigger `hook`.
 */
import type { RunOutcome, RunTraceInput } from "../shared/run-trace";
import type { ToolRunRecord } from "./record";
import type { RunSteps } from "./run-store";

/** The trace outcome of a run's end. */
export function runOutcome(row: Pick<ToolRunRecord, "status" | "error_kind">): RunOutcome {
  if (row.status === "succeeded") return "ok";
  if (row.error_kind === "denied") return "denied";
  if (row.error_kind === "timeout") return "timeout";
  return "error";
}

/**
 * The trace of an ended run (pure). `steps` are the last attempt's (an attempt cut short left
 * none), with the version of the preset it ran, when the tool is a preset.
 */
export function toolRunTrace(row: ToolRunRecord, steps: RunSteps): RunTraceInput {
  const started = row.started_at ?? row.created_at;
  const finished = row.finished_at ?? started;
  return {
    trace_id: row.run_id,
    kind: row.origin === "hook" ? "hook_fire" : "tool_run",
    trigger: row.origin === "hook" ? "hook" : row.origin === "schedule" ? "schedule" : "background",
    target: { kind: "tool", name: row.tool_name, version: steps.version },
    route_name: null,
    thread_id: null,
    interaction_id: row.run_id,
    user_id: row.caller_user_id,
    principal: row.caller_user_id,
    started_at: new Date(started).toISOString(),
    duration_ms: Math.max(0, finished - started),
    outcome: runOutcome(row),
    error: row.status === "failed" ? row.error : null,
    steps: steps.steps,
    steps_dropped: steps.dropped,
    input: row.arguments,
    output: row.status === "succeeded" ? row.result : null,
  };
}
