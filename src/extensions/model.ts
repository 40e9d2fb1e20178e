/**
 * Extensions (docs/extensions.md): wrappers and transformers around one call of a tool.
 * The shapes every extension shares; no storage, no context.
 */
import type { z } from "zod";

/** How one call of a tool ended, as the dispatcher classifies it (its failure kinds are strings here). */
export type CallResult = { ok: true; value: unknown } | { ok: false; kind: string; message: string };

/** What an extension itself may answer besides passing the inner result through. */
export type ExtensionOutcome = { ok: true; value: unknown } | { ok: false; kind: "tool_error"; message: string };

/**
 * `wrapper`: decides whether, when and how often the call runs (retry, cache). `transformer`:
 * changes a successful result (redact, max_result_bytes). The reference also names `backend`
 * (where a tool runs); this build has none.
 */
export type ExtensionKind = "wrapper" | "transformer";

/**
 * The call an extension wraps, with what it may use from outside (injected, so every extension is
 * testable without a Worker): the clock, a step recorder for the run's trace and a sleep.
 */
export interface ExtensionCall {
  /** The tool name dispatched (a preset's own name for a preset). */
  tool: string;
  /** The preset version dispatched, or null for another tool. */
  version: string | null;
  /** The caller's kwargs (for a preset, before its fixed kwargs are merged: the version fixes those). */
  kwargs: Record<string, unknown>;
  /**
   * Whose call it is: `user_id/fingerprint` of the key it runs as (a turn's or run's execution
   * key) or that called it (a door that authorized its caller: run-tool, a sub-MCP app). Null
   * when the call has no identity at all; then nothing per key (the cache) may serve it.
   */
  caller: string | null;
  /** A stable text naming the extensions inside this one (what the result has been through). */
  inner: string;
  now: () => number;
  /** Records `fn` as one step of the run's trace (when the run is traced) and answers its result. */
  step: (name: string, fn: () => Promise<CallResult>) => Promise<CallResult>;
  sleep: (ms: number) => Promise<void>;
}

/** One catalog entry: its config schema (strict, defaults filled) and how it wraps a call. */
export interface ExtensionDef<C = unknown> {
  name: string;
  kind: ExtensionKind;
  description: string;
  config: z.ZodType<C>;
  apply(config: C, call: ExtensionCall, next: () => Promise<CallResult>): Promise<CallResult>;
}

/** A failure an extension reports itself; its message names limits, never result values. */
export function extensionFailure(message: string): ExtensionOutcome {
  return { ok: false, kind: "tool_error", message };
}
