/**
 * Running one attempt of a background tool run (docs/tool-runs.md "Who a run runs as").
 * A run executes as its execution key (the submitting caller's own key, or a schedule's bound
 * key), re-read live at the start of every attempt through the same authorizer a bridge turn uses
 * (src/access-control/pass-role.ts `authorizeTurn`): the key must still exist, be enabled, carry the
 * fingerprint it had when the run was submitted or the schedule bound, and grant the tool; its
 * conditions (own, role, owner's role) must allow it without a request. A refusal is the run's
 * `denied` failure. Registry tools go through the one dispatcher; maintenance tools need an admin key.
 *
 * A run whose tool is `ask_user` (or a preset over it) may ask (docs/interactions.md):
 * with the interactions store configured, the attempt hands the dispatcher an ask slot, and a
 * question parked there ends the attempt as `asked`; the ToolRun object then stores the
 * interaction and waits for its outcome. A state-bound run gets no slot (its writes after the
 * dispatch would have nothing to write), so `ask_user` refuses there.
 */
import { authorizeTurn } from "../access-control/pass-role";
import type { KeyWithOwner } from "../access-control/key-store";
import { isAdminKey } from "../access-control/scopes";
import type { JsonObject, JsonValue } from "../platform/http/bounded-json";
import type { AskUserInput } from "../interactions/ask";
import { canPark } from "../interactions/create";
import type { InteractionStatus } from "../interactions/record";
import { timedStep } from "../shared/run-steps";
import { type TargetContext, dispatchTool } from "../targets/dispatch";
import { checkAgainstSchema } from "../platform/json-schema";
import { MAX_TOOL_TIMEOUT_SECONDS } from "../targets/tools/http-tools";
import { withTimeout } from "../platform/timeout";
import { executeBoundRun } from "./bound-run";
import { MAINTENANCE_INPUT_SCHEMA, isMaintenanceTool, runMaintenanceTool } from "./maintenance";
import type { ToolRunRecord } from "./record";
import type { RunEnd } from "./run-store";

export type RunAuthority = { ok: true } | { ok: false; reason: string };

/**
 * May `caller` run tool `name` now? The live authorizer, plus the admin rule of maintenance tools.
 * `prefetched` is the key and owner a door authenticated moments ago (no second read).
 */
export async function authorizeToolRun(
  db: D1Database,
  caller: { user_id: string; fingerprint: string },
  name: string,
  now: Date,
  prefetched?: KeyWithOwner,
): Promise<RunAuthority> {
  const auth = await authorizeTurn(db, caller.user_id, caller.fingerprint, { kind: "tool", name }, now, prefetched);
  if (!auth.ok) return auth;
  if (isMaintenanceTool(name) && !isAdminKey(auth.key)) return { ok: false, reason: "maintenance tools run only as an admin key" };
  return { ok: true };
}

function failed(kind: string, error: string): RunEnd {
  return { status: "failed", result: null, error, error_kind: kind };
}

/** How an attempt ended: the run's end, or a question its tool asked (the run then waits). */
export type AttemptEnd = RunEnd | { status: "asked"; ask: AskUserInput };

/**
 * The end of a run that waited on a question (pure): answered or cancelled, the run succeeds with
 * what `ask_user` answers (`outcome` is `askResult` of src/interactions/record.ts: the answer, or
 * the cancellation the tool sees); expired, it fails `timeout`.
 */
export function askedRunEnd(outcome: JsonObject, status: Exclude<InteractionStatus, "pending">): RunEnd {
  if (status === "expired") return { status: "failed", result: null, error: "the question expired unanswered", error_kind: "timeout" };
  return { status: "succeeded", result: outcome, error: null, error_kind: null };
}

/** What one attempt needs of its run. */
export type RunToExecute = Pick<ToolRunRecord, "run_id" | "tool_name" | "arguments" | "origin" | "hook_name" | "schedule_name" | "state_binding"> &
  Partial<Pick<ToolRunRecord, "binding_by">>;

/**
 * Runs one attempt of `run`'s tool with its arguments as `caller`. Never throws for a tool's
 * failure. The attempt is one `tool` step of a traced context (the dispatcher records it for a
 * registry tool). A run with a state binding (a hook's or schedule's fire) reads its states before
 * and writes them after the dispatch (src/tool-runs/bound-run.ts).
 */
export async function executeToolRun(ctx: TargetContext, run: RunToExecute, caller: { user_id: string; fingerprint: string }): Promise<AttemptEnd> {
  const name = run.tool_name;
  const args = run.arguments;
  if (isMaintenanceTool(name)) return timedStep(ctx, "tool", name, () => runMaintenance(ctx, name, args, caller), stepVerdict);
  if (run.state_binding) {
    const binding = run.state_binding;
    return executeBoundRun(ctx, { ...run, state_binding: binding, binding_by: run.binding_by ?? null }, caller, () =>
      authorizeToolRun(ctx.db, caller, name, ctx.now()),
    );
  }
  // Closures do not narrow, so the slot writes into a holder.
  const held: { ask: AskUserInput | null } = { ask: null };
  if (canPark(ctx.settings)) ctx.ask = { park: (q) => void (held.ask = q) };
  let r: Awaited<ReturnType<typeof dispatchTool>>;
  try {
    r = await dispatchTool(ctx, name, args, { asKey: caller });
  } finally {
    delete ctx.ask;
  }
  if (r.ok && held.ask) return { status: "asked", ask: held.ask };
  return r.ok ? { status: "succeeded", result: toJson(r.value), error: null, error_kind: null } : failed(r.kind, r.message);
}

async function runMaintenance(ctx: TargetContext, name: string, args: JsonObject, caller: { user_id: string; fingerprint: string }): Promise<RunEnd> {
  const auth = await authorizeToolRun(ctx.db, caller, name, ctx.now());
  if (!auth.ok) return failed("denied", auth.reason);
  const check = checkAgainstSchema(MAINTENANCE_INPUT_SCHEMA, args);
  if (!check.ok) return failed("invalid_kwargs", `invalid kwargs: ${check.problems.join("; ")}`);
  try {
    const timed = await withTimeout(MAX_TOOL_TIMEOUT_SECONDS * 1000, () => runMaintenanceTool(ctx.env, ctx.settings, name, ctx.now()));
    if (!timed.ok) return failed("timeout", `tool ${name} did not finish within ${MAX_TOOL_TIMEOUT_SECONDS}s`);
    return { status: "succeeded", result: timed.value, error: null, error_kind: null };
  } catch (err) {
    console.error(`maintenance tool ${name} failed:`, err instanceof Error ? err.message : "unknown error");
    return failed("tool_error", `tool ${name} failed`);
  }
}

function stepVerdict(end: RunEnd): { outcome: "ok" | "error" | "denied" | "timeout"; error: string | null } {
  if (end.status === "succeeded") return { outcome: "ok", error: null };
  const outcome = end.error_kind === "denied" ? "denied" : end.error_kind === "timeout" ? "timeout" : "error";
  return { outcome, error: `${end.error_kind}: ${end.error}` };
}

/** A dispatch result as stored JSON (`undefined` is null; everything else came from JSON or a built-in). */
function toJson(v: unknown): JsonValue {
  return v === undefined ? null : (v as JsonValue);
}
