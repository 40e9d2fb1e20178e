/**
 * Runs one tool call through its extensions (docs/extensions.md). The dispatcher calls
 * this after it authorized the key, resolved the tool and checked the kwargs, around the call
 * itself (a built-in, a declared tool, a preset's base with its output check).
 *
 * Which chain: a built-in tool has none (wrap it in a preset to extend it), a preset its active
 * version's `extensions`, any other tool its row in `tool_extensions` — read from D1 at every
 * call, like the tool itself, so an edit holds on every isolate at once. The registry reads that
 * row in the same batch as the declaration, so the chain adds no round trip. Built-ins read
 * nothing, so a built-in route's turn stays free of D1 statements.
 */
import type { CallerRef, ExecutionKeyRef, TargetContext } from "../targets/context";
import { type StepVerdict, timedStep } from "../shared/run-steps";
import { type Combo, type ResolvedElement, chainOf } from "./combos";
import type { CallResult, ExtensionCall, ExtensionOutcome } from "./model";
import { readToolCombos } from "./store";

/** The tool as the dispatcher resolved it; only what picks its chain. */
export interface ExtendedTool {
  kind: string;
  name: string;
  /** A preset's active version. */
  version?: number;
  /** A preset's active body. */
  body?: { extensions: Combo[] };
  /** A declared tool's combos when the registry read them with the tool (one round trip fewer). */
  extensions?: Combo[];
}

/** The combos of `tool` (see the module comment): read only when the registry did not bring them. */
export async function toolCombos(db: D1Database, tool: ExtendedTool): Promise<Combo[]> {
  if (tool.kind === "builtin") return [];
  if (tool.kind === "preset") return tool.body?.extensions ?? [];
  return tool.extensions ?? (await readToolCombos(db, tool.name));
}

/** The chain of `tool`. */
export async function extensionChain(db: D1Database, tool: ExtendedTool): Promise<ResolvedElement[]> {
  return chainOf(await toolCombos(db, tool));
}

/** The key a call is for, as `user_id/fingerprint` (null: none). Pure. */
function callerOf(key: CallerRef | undefined): string | null {
  return key ? `${key.user_id}/${key.fingerprint}` : null;
}

/** How an attempt reads as a trace step (the dispatcher's own classification). Pure. */
function attemptVerdict(r: CallResult): StepVerdict {
  if (r.ok) return { outcome: "ok", error: null };
  return { outcome: r.kind === "denied" ? "denied" : r.kind === "timeout" ? "timeout" : "error", error: `${r.kind}: ${r.message}` };
}

/**
 * Runs `run` (the call) inside the tool's chain. The answer is `run`'s own result or one an
 * extension made (a success, or a `tool_error`), so it fits the dispatcher's result type.
 */
export async function applyExtensions<R extends CallResult>(
  ctx: TargetContext,
  call: { tool: ExtendedTool; kwargs: Record<string, unknown>; asKey?: ExecutionKeyRef; caller?: CallerRef },
  run: () => Promise<R>,
): Promise<R | ExtensionOutcome> {
  const chain = await extensionChain(ctx.db, call.tool);
  if (!chain.length) return run();
  const base: Omit<ExtensionCall, "inner"> = {
    tool: call.tool.name,
    version: call.tool.kind === "preset" && call.tool.version !== undefined ? String(call.tool.version) : null,
    kwargs: call.kwargs,
    caller: callerOf(call.asKey ?? call.caller),
    now: () => ctx.now().getTime(),
    step: (name, fn) => timedStep(ctx, "tool", name, fn, attemptVerdict),
    sleep: (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
  };
  let next: () => Promise<CallResult> = run;
  chain.forEach((el, i) => {
    const inner = next;
    const info: ExtensionCall = { ...base, inner: JSON.stringify(chain.slice(0, i).map((e) => [e.def.name, e.config])) };
    next = () => el.def.apply(el.config, info, inner);
  });
  // Every element answers its inner result or an ExtensionOutcome, and the innermost is `run`.
  return (await next()) as R | ExtensionOutcome;
}
