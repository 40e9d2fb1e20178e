/**
 * Records a run's trace: `recordRun(env, trace, waitUntil?)` is the one way any run
 * other than a bridge turn records itself (tool runs: direct, background, scheduled; agent runs;
 * hook fires). A bridge turn's trace is written by its thread object where the turn settles
 * (src/conversations/thread/turn-trace.ts), so it is kept and forgotten with the thread's records.
 *
 * The trace goes to the IndexShard its trace id hashes to, in one object call and no D1 statement:
 * the shard keeps the full trace (for `RUNS_TRACE_RETENTION_SECONDS`) and buffers its summary row,
 * which reaches D1 `runs` in the shard's next batched write (the listing lag, about 1 s).
 *
 * Recording never fails the run: an invalid trace or an unreachable shard is logged (without
 * values) and dropped. With `waitUntil`, the call is handed to it and `recordRun` resolves at once.
 */
import { MAX_ERROR_CHARS, MAX_TRACE_STEPS, RunTrace, type RunTraceInput } from "../../shared/run-trace";
import { runShard } from "../../shards/rpc";
import type { Env } from "../../platform/env";
import { JsonValue } from "../../platform/http/bounded-json";

/** Largest serialized input or output a trace keeps; a larger one is replaced by a marker. */
export const MAX_TRACE_JSON_BYTES = 16 * 1024;

/** `value` when it serializes within MAX_TRACE_JSON_BYTES, else `{truncated: true, bytes}`. Pure. */
export function boundTraceJson(value: JsonValue | null | undefined): JsonValue | null {
  if (value === undefined || value === null) return null;
  let text: string | undefined;
  try {
    text = JSON.stringify(value);
  } catch {
    return { truncated: true, bytes: null };
  }
  if (text === undefined) return null;
  const bytes = new TextEncoder().encode(text).length;
  return bytes <= MAX_TRACE_JSON_BYTES ? JsonValue.parse(JSON.parse(text)) : { truncated: true, bytes };
}

const cut = (s: string | null | undefined): string | null =>
  s === null || s === undefined ? null : s.length <= MAX_ERROR_CHARS ? s : `${s.slice(0, MAX_ERROR_CHARS - 1)}…`;

/** The trace within its bounds: input and output bounded, error texts cut, steps past the cap counted. Pure. */
export function boundTrace(t: RunTraceInput): RunTraceInput {
  const steps = (t.steps ?? []).slice(0, MAX_TRACE_STEPS).map((s) => ({ ...s, error: cut(s.error) }));
  return {
    ...t,
    error: cut(t.error),
    steps,
    steps_dropped: (t.steps_dropped ?? 0) + Math.max(0, (t.steps ?? []).length - MAX_TRACE_STEPS),
    input: boundTraceJson(t.input as JsonValue | null | undefined),
    output: boundTraceJson(t.output as JsonValue | null | undefined),
  };
}

/**
 * Records `trace` (see the module comment). Resolves once the shard holds it, or at once when
 * `waitUntil` is given (the call then runs in the background). Never throws.
 */
export async function recordRun(env: Env, trace: RunTraceInput, waitUntil?: (p: Promise<unknown>) => void): Promise<void> {
  const parsed = RunTrace.safeParse(boundTrace(trace));
  if (!parsed.success) {
    // Field paths only: a trace may carry user text.
    const fields = [...new Set(parsed.error.issues.map((i) => i.path.join(".") || "(trace)"))].join(", ");
    console.error(`run trace not recorded: invalid fields ${fields}`);
    return;
  }
  const send = runShard(env, parsed.data.trace_id)
    .recordRun(parsed.data)
    .catch((err: unknown) => console.error("run trace not recorded: the shard call failed", err instanceof Error ? err.message : "unknown error"));
  if (waitUntil) waitUntil(send);
  else await send;
}
