/**
 * Resuming a run parked outside any thread (an agent run door's run): once its
 * interaction is answered, cancelled or expired, its object resumes the run here, as the key the
 * run started with (re-read live), and records the end on the interaction (`result`) and as a run
 * trace (kind `agent_run`, trigger `background`, `interaction_id` the interaction's id, so
 * `GET /api/runs?interaction=<id>` finds it). A run that asks again parks again: a new interaction.
 */
import { newTraceId } from "../shared/run-trace";
import type { Env } from "../platform/env";
import type { JsonValue } from "../platform/http/bounded-json";
import { directTrace } from "../observability/runs/direct";
import { recordRun } from "../observability/runs/recorder";
import { traceSteps, untraceSteps } from "../shared/run-steps";
import type { Settings } from "../platform/settings/settings";
import { resumeAgent } from "../targets/agents/run";
import type { ParkedLlmRun } from "../shared/parked-run";
import { createTargetContext } from "../targets/context";
import { canPark, createInteraction } from "./create";
import { type InteractionResult, type InteractionState, askResult } from "./record";

/** Resumes `parked` with the interaction's outcome; never throws for a run failure. */
export async function resumeOutside(env: Env, settings: Settings, s: InteractionState, parked: ParkedLlmRun, nowMs = Date.now): Promise<InteractionResult> {
  const ctx = createTargetContext(env, settings);
  const log = traceSteps(ctx);
  const startedAt = nowMs();
  let r;
  try {
    r = await resumeAgent(ctx, parked, JSON.stringify(askResult(s)), { park: canPark(settings) });
  } finally {
    untraceSteps(ctx);
  }
  let next: InteractionState | null = null;
  let failure: { ok: false; kind: string; message: string } | null = r.ok ? null : r;
  if (r.ok && r.suspended) {
    try {
      next = await createInteraction(env, settings, { ask: r.suspended.ask, origin: s.origin, target: s.target, parked: r.suspended.parked });
    } catch (err) {
      console.error("interaction: parking the resumed run again failed", err instanceof Error ? err.message : "unknown error");
      failure = { ok: false, kind: "agent_error", message: "the resumed run asked again, and its new interaction could not be stored" };
    }
  }
  const output: JsonValue | null = next ? { suspended: { interaction_id: next.interaction_id } } : r.ok ? r.text : null;
  const trace = {
    ...directTrace({
      kind: "agent_run",
      target: { kind: "agent", name: parked.agent },
      caller: parked.as_key?.user_id ?? (s.origin.kind === "agent_run" ? s.origin.caller : "(unknown)"),
      threadId: parked.thread_id,
      startedAt,
      endedAt: nowMs(),
      log,
      result: failure ?? { ok: true, value: output },
      input: { interaction_id: s.interaction_id, outcome: s.status },
    }),
    trace_id: newTraceId(),
    trigger: "background" as const,
    interaction_id: s.interaction_id,
  };
  await recordRun(env, trace);
  return {
    outcome: next && !failure ? "suspended" : trace.outcome,
    text: !failure && r.ok && !r.suspended ? r.text : null,
    error: failure ? `${failure.kind}: ${failure.message}` : null,
    next_interaction_id: next?.interaction_id ?? null,
    trace_id: trace.trace_id,
    finished_at: new Date(nowMs()).toISOString(),
  };
}
