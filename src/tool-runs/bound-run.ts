/**
 * A background run with a state binding (spec §2.6: hook registrations and schedule creation carry
 * a StateBinding; docs/hooks.md and docs/schedules.md "State bindings"). The run does what a bound
 * tool turn does (src/conversations/thread/turn-runner.ts), with the run's own identity in place of the turn's:
 *
 * 1. the execution key is authorized for the tool first, so a key that may not run it reads no state,
 *    and the key that stored the binding must still hold the states grants it needs
 *    (src/access-control/stored-by.ts);
 * 2. each bound state's subject is read and its injections land in the tool input
 *    (`prepareStates`, target `{tool, <name>}` with no person: a fire has no door that resolved one);
 * 3. the tool is dispatched with that input;
 * 4. the updates are applied with a WriteOrigin naming the door (`hook` or `schedule`), the key as
 *    actor, the hook or schedule as consumer and the run id; what cannot apply now (an object out of
 *    reach, a subject an older save holds) waits as a pending save keyed by the run id.
 *
 * A BindingError at any step fails the run with `error_kind: "state_binding"` and its message
 * (which names the state and the step, never a value).
 */
import { STORED_BEFORE_RECORDING, readStoredBy, storedByRefusal } from "../access-control/stored-by";
import type { WriteOrigin } from "../states/rpc";
import { bindingRefs } from "../states/binding-refs";
import type { JsonObject, JsonValue } from "../platform/http/bounded-json";
import { heldSubjects, queueSave } from "../states/pending-saves";
import { BindingError, applyStateUpdates, prepareStates } from "../states/turn-binding";
import { type TargetContext, dispatchTool } from "../targets/dispatch";
import type { RunEnd } from "./run-store";
import type { ToolRunRecord } from "./record";

export type BoundRun = Pick<ToolRunRecord, "run_id" | "tool_name" | "arguments" | "origin" | "hook_name" | "schedule_name" | "binding_by"> & {
  state_binding: NonNullable<ToolRunRecord["state_binding"]>;
};

/** Who wrote, as the state's audit trail records it. */
export function boundRunOrigin(run: Pick<ToolRunRecord, "run_id" | "origin" | "hook_name" | "schedule_name">, actor: string): WriteOrigin {
  const hook = run.origin === "hook";
  const name = (hook ? run.hook_name : run.schedule_name) ?? "(once)";
  return {
    door: hook ? "hook" : "schedule",
    actor,
    consumer: `${hook ? "hook" : "schedule"}:${name}`,
    meta: hook ? { hook: name } : { schedule: name },
    run_id: run.run_id,
    op_id: null,
    turn_id: null,
    inbound_id: null,
  };
}

const failed = (error_kind: string, error: string): RunEnd => ({ status: "failed", result: null, error, error_kind });

/**
 * Runs `run`'s tool with its binding as `caller`. `authorize` is the live authorizer the run uses
 * (src/tool-runs/execute.ts), passed in so this module does not import its caller.
 */
export async function executeBoundRun(
  ctx: TargetContext,
  run: BoundRun,
  caller: { user_id: string; fingerprint: string },
  authorize: () => Promise<{ ok: true } | { ok: false; reason: string }>,
): Promise<RunEnd> {
  const auth = await authorize();
  if (!auth.ok) return failed("denied", auth.reason);
  // The binding runs bounded by the key that stored it (the hook's or schedule's writer), read live:
  // a background run, off the per-message path. A run stored without its writer has none.
  const writer = run.binding_by ?? STORED_BEFORE_RECORDING;
  const refused = storedByRefusal(writer, await readStoredBy(ctx.db, writer), bindingRefs(run.state_binding));
  if (refused) return failed("denied", `the state binding may not run: ${refused}`);
  const target = { target_kind: "tool" as const, target_name: run.tool_name, person: null };
  let states: Awaited<ReturnType<typeof prepareStates>>;
  try {
    states = await prepareStates(ctx.env, run.state_binding, target, run.arguments, ctx.now().getTime());
  } catch (err) {
    if (err instanceof BindingError) return failed("state_binding", err.message);
    throw err;
  }
  const d = await dispatchTool(ctx, run.tool_name, states.input, { asKey: caller });
  if (!d.ok) return failed(d.kind, d.message);
  const output = (d.value ?? null) as JsonValue;
  const origin = boundRunOrigin(run, caller.user_id);
  try {
    const now = ctx.now().getTime();
    // A subject an older pending save of this tool still holds waits behind it (a save's order is kept).
    const held = await heldSubjects(ctx.env.DB, target);
    const leftover = await applyStateUpdates(ctx.env, states, d.value, origin, now, held);
    if (leftover.length > 0) await queueSave(ctx.env, target, run.run_id, { input: states.input as JsonObject, output, origin, items: leftover }, now);
  } catch (err) {
    if (err instanceof BindingError) return failed("state_binding", err.message);
    throw err;
  }
  return { status: "succeeded", result: output, error: null, error_kind: null };
}
