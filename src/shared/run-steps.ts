/**
 * A run's steps: tool dispatches, model calls and http agent calls with their timings,
 * collected while the run goes. The log hangs off the run's TargetContext (a WeakMap keyed by the
 * context object), because every layer that takes a step already receives that context: the
 * dispatcher, agents and built-in tools need no new parameter and behave exactly as before. A
 * context nobody traces costs one WeakMap lookup per step.
 *
 * Timings come from `Date.now()`, which on Workers advances at I/O: a step that waits on the
 * network (every tool endpoint, model and agent call) is timed truly; pure CPU work reads as 0 ms.
 *
 * Usage (a run outside the bridge, e.g. a background tool run):
 *   const { value, steps, steps_dropped } = await collectRunSteps(ctx, () => dispatchTool(ctx, name, args, opts));
 */
import { MAX_ERROR_CHARS, MAX_TRACE_STEPS, type RunStep, type StepKind, type StepOutcome } from "./run-trace";

/** The steps of one run, in the order they started. */
export class StepLog {
  readonly steps: RunStep[] = [];
  /** Steps past MAX_TRACE_STEPS, counted and not kept. */
  dropped = 0;
  /** The versions of presets dispatched, by name (a trace's `target.version`). */
  readonly versions = new Map<string, string>();

  add(step: RunStep): void {
    if (this.steps.length < MAX_TRACE_STEPS) this.steps.push(step);
    else this.dropped++;
  }
}

/** How a step ended, as the caller classifies its own result. */
export interface StepVerdict {
  outcome: StepOutcome;
  error: string | null;
}

const logs = new WeakMap<object, StepLog>();

/** Starts tracing the steps taken with `ctx` (a run's TargetContext) into `log`; answers the log. */
export function traceSteps(ctx: object, log: StepLog = new StepLog()): StepLog {
  logs.set(ctx, log);
  return log;
}

/** Notes the version of preset `name` dispatched with `ctx`, when `ctx` is traced. */
export function noteTargetVersion(ctx: object, name: string, version: string): void {
  logs.get(ctx)?.versions.set(name, version);
}

/** Stops tracing `ctx` (later steps with it are not recorded). */
export function untraceSteps(ctx: object): void {
  logs.delete(ctx);
}

/** Cuts an error text to the trace's bound. Pure. */
export function boundError(text: string | null): string | null {
  if (text === null) return null;
  return text.length <= MAX_ERROR_CHARS ? text : `${text.slice(0, MAX_ERROR_CHARS - 1)}…`;
}

/**
 * Runs `fn` as one step of `kind` named `name` when `ctx` is traced, timing it and recording how
 * it ended (`verdict` classifies the result; a throw is an `error` step, rethrown). Untraced: just
 * `fn()`. Never changes what `fn` answers or throws.
 */
export async function timedStep<T>(ctx: object, kind: StepKind, name: string, fn: () => Promise<T>, verdict: (value: T) => StepVerdict): Promise<T> {
  const log = logs.get(ctx);
  if (!log) return fn();
  const started = Date.now();
  const step = (v: StepVerdict): RunStep => ({
    kind,
    name: name.slice(0, 200) || "(unnamed)",
    started_at: new Date(started).toISOString(),
    duration_ms: Math.max(0, Date.now() - started),
    outcome: v.outcome,
    error: boundError(v.error),
  });
  let value: T;
  try {
    value = await fn();
  } catch (err) {
    log.add(step({ outcome: "error", error: "the step failed unexpectedly" }));
    throw err;
  }
  log.add(step(verdict(value)));
  return value;
}

/** How an outbound JSON call (a model, an http agent) reads as a step: a timeout is `timeout`, any other failure `error` with its message. Pure. */
export function outboundStepVerdict(r: { ok: true } | { ok: false; kind: string; message: string }): StepVerdict {
  if (r.ok) return { outcome: "ok", error: null };
  return { outcome: r.kind === "timeout" ? "timeout" : "error", error: r.message };
}

/** Runs `fn` with `ctx` traced; answers its value with the steps it took. */
export async function collectRunSteps<T>(ctx: object, fn: () => Promise<T>): Promise<{ value: T; steps: RunStep[]; steps_dropped: number }> {
  const log = traceSteps(ctx);
  try {
    const value = await fn();
    return { value, steps: log.steps, steps_dropped: log.dropped };
  } finally {
    untraceSteps(ctx);
  }
}
