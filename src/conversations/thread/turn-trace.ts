/**
 * A bridge turn's run trace (docs/observability.md). The turn loop collects the turn's
 * steps (tool dispatches, model and agent endpoint calls) on its TargetContext while it runs
 * (src/shared/run-steps.ts) and, where the turn settles, keeps the trace in the thread's own SQLite in
 * the same transaction as the settled record, with its summary row noted in the outbox: the row
 * reaches D1 `runs` in the shards' batches, so a trace costs the turn no D1 statement and no
 * extra object call. The trace is deleted with its record (retention) and with the thread (forget,
 * person erase). Its input and output are the record's inbound and answer, and its feedback the
 * customer's rating of that answer, read beside the record when the trace is read, so they live
 * exactly as long as the record does.
 */
import type { AnswerRecord } from "../model/record";
import type { TurnInbound } from "../model/payload";
import type { TurnOutcome } from "./turn-runner";
import { RunTrace, type RunOutcome, type RunStep, type RunTarget } from "../../shared/run-trace";
import { StepLog, boundError } from "../../shared/run-steps";
import { parseStored } from "../../platform/persistence/stored-json";
import { getStored, threadSql } from "./store";
import { feedbackOf } from "./answer-feedback-table";

/** The target a turn whose route could not be read (deleted, or an abandoned poison turn) is traced under. */
export const UNKNOWN_TARGET: RunTarget = { kind: "tool", name: "(unknown)", version: null };

/** One turn's run as it goes: its steps, its target once the route is read, when it started. */
export interface TurnRun {
  log: StepLog;
  target: RunTarget;
  startedAt: number;
}

/** A new turn run starting at `startedAt`. */
export function startTurnRun(startedAt: number): TurnRun {
  return { log: new StepLog(), target: UNKNOWN_TARGET, startedAt };
}

/**
 * A settled turn's run outcome (pure): `silent` and `ok` from the answer; an error outcome is
 * `denied` when the execution key was refused the target (the turn runner's "tool dispatch
 * denied" / "agent denied"), `timeout` when the tool did not finish in time or the run's last step
 * (an agent's model or endpoint call) timed out, else `error`.
 */
export function turnRunOutcome(outcome: Pick<TurnOutcome, "answer_status" | "error">, steps: RunStep[]): RunOutcome {
  if (outcome.answer_status === "silent") return "silent";
  if (outcome.answer_status !== "error") return "ok";
  const detail = outcome.error ?? "";
  if (/^(tool dispatch|agent) denied\b/.test(detail)) return "denied";
  if (/^tool dispatch timeout\b/.test(detail)) return "timeout";
  if (steps.length && steps[steps.length - 1].outcome === "timeout") return "timeout";
  return "error";
}

/** The turn's trace (pure); input and output stay null here (they are the record's, read later). */
export function turnTrace(
  rec: AnswerRecord,
  inbound: Pick<TurnInbound, "person">,
  run: TurnRun,
  outcome: Pick<TurnOutcome, "answer_status" | "error">,
  settledAt: number,
): RunTrace {
  const steps = run.log.steps;
  return {
    trace_id: rec.message_id,
    kind: "turn",
    trigger: rec.inbound_kind === "event" ? "event" : rec.door,
    target: { ...run.target, version: run.log.versions.get(run.target.name) ?? run.target.version },
    route_name: rec.route_name,
    thread_id: rec.thread_id,
    interaction_id: rec.message_id,
    // Spec §4.6: a linked person's id, otherwise the door address.
    user_id: inbound.person?.person_id ?? rec.client_address,
    principal: rec.caller_principal,
    started_at: new Date(run.startedAt).toISOString(),
    duration_ms: Math.max(0, settledAt - run.startedAt),
    outcome: turnRunOutcome(outcome, steps),
    error: outcome.answer_status === "error" ? boundError(outcome.error) : null,
    steps,
    steps_dropped: run.log.dropped,
    input: null,
    output: null,
  };
}

/** Keeps a settled turn's trace (in the caller's transaction: the settle's). */
export function keepTurnTrace(storage: DurableObjectStorage, trace: RunTrace): void {
  threadSql(storage, "keep run trace").run`INSERT OR REPLACE INTO run_traces (message_id, trace) VALUES (${trace.trace_id}, ${JSON.stringify(trace)})`;
}

/**
 * A turn's trace with its input and output from its record (and its rating, when given), if both
 * are still held and live at `nowMs` (an expired record reads as gone, as everywhere).
 */
export function readTurnTrace(storage: DurableObjectStorage, traceId: string, nowMs: number): RunTrace | null {
  const row = threadSql(storage, "read run trace")<{ trace: string }>`SELECT trace FROM run_traces WHERE message_id = ${traceId}`[0];
  if (!row) return null;
  const cur = getStored(storage, traceId);
  if (!cur || (cur.expires_at !== null && cur.expires_at <= nowMs)) return null;
  const trace = parseStored(RunTrace, row.trace, "run trace");
  const r = cur.record;
  const feedback = feedbackOf(storage, [traceId]).get(traceId);
  return {
    ...trace,
    input: { kind: r.inbound_kind, text: r.inbound_text, ...(r.inbound_event ? { event: r.inbound_event } : {}) },
    output: { answer_status: r.answer_status, answer: r.answer },
    ...(feedback ? { feedback } : {}),
  };
}

/** Drops these turns' traces (person erase of runs on another thread); answers how many were held. */
export function dropTurnTraces(storage: DurableObjectStorage, traceIds: string[]): number {
  let n = 0;
  for (const id of traceIds) n += threadSql(storage, "drop run traces").run`DELETE FROM run_traces WHERE message_id = ${id}`;
  return n;
}
