/**
 * Traces of the synchronous runs: an agent run door's run and a `POST /api/run-tool`
 * dispatch, trigger `direct`. Each is attributed to its caller (user_id and principal are the
 * calling key) and recorded through `recordRun` in the background; recording never changes what
 * the run answers.
 */
import { type RunOutcome, type RunTraceInput, newTraceId } from "../../shared/run-trace";
import type { TargetKind } from "../../shared/kinds";
import type { Env } from "../../platform/env";
import type { JsonValue } from "../../platform/http/bounded-json";
import { recordRun } from "./recorder";
import { type StepLog, traceSteps, untraceSteps } from "../../shared/run-steps";

/** A failure as the dispatcher and the agents report it. */
type Failure = { ok: false; kind: string; message: string };

/** A direct run's outcome from its result. Pure. */
export function directOutcome(r: { ok: true } | Failure): RunOutcome {
  if (r.ok) return "ok";
  return r.kind === "denied" ? "denied" : r.kind === "timeout" ? "timeout" : "error";
}

/** The trace of a direct run (pure). */
export function directTrace(args: {
  kind: "tool_run" | "agent_run";
  target: { kind: TargetKind; name: string };
  caller: string;
  threadId: string | null;
  startedAt: number;
  endedAt: number;
  log: StepLog;
  result: { ok: true; value: JsonValue | null } | Failure;
  input: JsonValue;
}): RunTraceInput {
  const { result, log } = args;
  return {
    trace_id: newTraceId(),
    kind: args.kind,
    trigger: "direct",
    target: { ...args.target, version: log.versions.get(args.target.name) ?? null },
    route_name: null,
    thread_id: args.threadId,
    interaction_id: null,
    user_id: args.caller,
    principal: args.caller,
    started_at: new Date(args.startedAt).toISOString(),
    duration_ms: Math.max(0, args.endedAt - args.startedAt),
    // An agent whose model or endpoint timed out fails as agent_error; its last step says timeout.
    outcome: result.ok
      ? args.kind === "agent_run" && result.value === null
        ? "silent"
        : "ok"
      : log.steps.at(-1)?.outcome === "timeout"
        ? "timeout"
        : directOutcome(result),
    error: result.ok ? null : `${result.kind}: ${result.message}`,
    steps: log.steps,
    steps_dropped: log.dropped,
    input: args.input,
    output: result.ok ? result.value : null,
  };
}

/**
 * Runs `run` with `ctx` traced and records its trace as a direct run of `caller` (in the
 * background with `waitUntil`). Answers what `run` answers, or throws what it throws (untraced).
 */
export async function tracedDirectRun<R extends { ok: true } | Failure>(
  env: Env,
  ctx: object,
  what: { kind: "tool_run" | "agent_run"; target: { kind: TargetKind; name: string }; caller: string; threadId?: string | null; input: JsonValue },
  run: () => Promise<R>,
  output: (r: R & { ok: true }) => JsonValue | null,
  waitUntil?: (p: Promise<unknown>) => void,
): Promise<R> {
  const startedAt = Date.now();
  const log = traceSteps(ctx);
  let r: R;
  try {
    r = await run();
  } finally {
    untraceSteps(ctx);
  }
  const result = r.ok ? { ok: true as const, value: output(r as R & { ok: true }) } : (r as Failure);
  const trace = directTrace({ ...what, threadId: what.threadId ?? null, startedAt, endedAt: Date.now(), log, result });
  await recordRun(env, trace, waitUntil);
  return r;
}
