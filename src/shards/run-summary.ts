/** A trace's summary row (D1 `runs`). Pure. */
import type { RunTrace } from "../shared/run-trace";
import type { RunRow } from "./rpc";

/** The summary row of `trace`, whose full trace lives at `home`. */
export function summaryOf(trace: RunTrace, home: RunRow["home"]): RunRow {
  return {
    trace_id: trace.trace_id,
    kind: trace.kind,
    trigger: trace.trigger,
    target_kind: trace.target.kind,
    target_name: trace.target.name,
    target_version: trace.target.version,
    route_name: trace.route_name,
    thread_id: trace.thread_id,
    interaction_id: trace.interaction_id,
    user_id: trace.user_id,
    principal: trace.principal,
    started_at: Date.parse(trace.started_at),
    duration_ms: trace.duration_ms,
    outcome: trace.outcome,
    step_count: trace.steps.length + trace.steps_dropped,
    has_error: trace.error !== null || trace.steps.some((s) => s.error !== null),
    home,
  };
}
