/**
 * Runs one turn's target (spec §4.2, §3.1; decisions §13) and maps every failure to the fixed
 * client-safe error outcome, keeping the detail for admins. Never throws for a turn failure.
 */
import type { KeyWithOwner } from "../auth/key-store";
import { authorizeTurn } from "../auth/pass-role";
import { JqError, jqRun } from "../jq/engine";
import { runAgent } from "../targets/agents/run";
import { dispatchTool } from "../targets/dispatch";
import type { TargetContext } from "../targets/context";
import type { WriteOrigin } from "../contracts/state-rpc";
import type { JsonObject, JsonValue } from "../http/bounded-json";
import { heldSubjects, queueSave } from "../states/pending-saves";
import type { StateBinding } from "../states/state-binding";
import { mergeBindings } from "../states/binding-merge";
import { BindingError, applyStateUpdates, prepareStates } from "../states/turn-binding";
import { resolveTool } from "../targets/tools/registry";
import { buildPayload, defaultKwargs, type TurnInbound } from "./payload";
import { type AnswerStatus, TURN_ERROR_TEXT, isSilence } from "./record";
import type { RouteRow } from "./routes-store";

export interface TurnOutcome {
  answer_status: AnswerStatus;
  answer: string | null;
  error: string | null;
}

export const silentOutcome = (): TurnOutcome => ({ answer_status: "silent", answer: null, error: null });

export function errorOutcome(detail: string): TurnOutcome {
  return { answer_status: "error", answer: TURN_ERROR_TEXT, error: detail };
}

export function replyOutcome(reply: string | null): TurnOutcome {
  return isSilence(reply) ? silentOutcome() : { answer_status: "answered", answer: reply, error: null };
}

function typeName(v: unknown): string {
  return v === null ? "null" : Array.isArray(v) ? "array" : typeof v;
}

/** Runs a mapping program requiring exactly one output; the failure text never carries values. */
async function mapOne(name: "payload_expr" | "reply_expr", program: string, input: unknown): Promise<{ ok: true; value: unknown } | { ok: false; detail: string }> {
  try {
    const outs = await jqRun(program, input);
    if (outs.length !== 1) return { ok: false, detail: `${name} must emit exactly one value; it emitted ${outs.length}` };
    return { ok: true, value: outs[0] };
  } catch (err) {
    // A budget failure says so ("jq budget exceeded: …"): the operator must see why, and the
    // message names only the bound, never a value.
    if (err instanceof JqError) return { ok: false, detail: err.kind === "budget" ? `${name}: ${err.message}` : `${name} failed with a jq ${err.kind} error` };
    return { ok: false, detail: `${name} could not run` };
  }
}

/** Runs the route's target for `inbound` under the route's bound execution key; a tool target's state binding reads before and writes after dispatch. */
export async function runTarget(
  ctx: TargetContext,
  route: RouteRow,
  inbound: TurnInbound,
  prefetchedKey?: KeyWithOwner | null,
  bound: { binding: StateBinding; pendingSaves: number | null } | null = null,
): Promise<TurnOutcome> {
  const asKey = { user_id: route.execution_key, fingerprint: route.execution_key_fingerprint, prefetched: prefetchedKey };
  if (route.target_kind === "agent") {
    const r = await runAgent(ctx, route.target_name, { thread_id: inbound.thread_id, user_message: inbound.text ?? "" }, { asKey });
    if (!r.ok) return errorOutcome(`agent ${r.kind}: ${r.message}`);
    return replyOutcome(r.text);
  }

  let kwargs: unknown;
  if (route.payload_program) {
    const m = await mapOne("payload_expr", route.payload_program, buildPayload(inbound, route));
    if (!m.ok) return errorOutcome(m.detail);
    if (typeName(m.value) !== "object") return errorOutcome(`payload_expr must emit an object; it emitted ${typeName(m.value)}`);
    kwargs = m.value;
  } else {
    kwargs = defaultKwargs(inbound, route);
  }

  // The tool is resolved once: a preset may carry its own state binding, merged after the route's.
  const tool = await resolveTool(ctx.db, route.target_name);
  const binding = mergeBindings(bound?.binding ?? null, tool?.kind === "preset" ? tool.body.state_binding : null);
  let states: Awaited<ReturnType<typeof prepareStates>> | null = null;
  if (binding) {
    // A key that may not run the tool reads no state: authorized first, as the dispatch would.
    const auth = await authorizeTurn(ctx.db, asKey.user_id, asKey.fingerprint, { kind: "tool", name: route.target_name }, ctx.now(), asKey.prefetched);
    if (!auth.ok) return errorOutcome(`tool dispatch denied: ${auth.reason}`);
    try {
      const target = { target_kind: route.target_kind, target_name: route.target_name, person: inbound.person?.person_id ?? null };
      states = await prepareStates(ctx.env, binding, target, kwargs as JsonObject, ctx.now().getTime());
      kwargs = states.input;
    } catch (err) {
      if (err instanceof BindingError) return errorOutcome(err.message);
      throw err;
    }
  }

  const d = await dispatchTool(ctx, route.target_name, kwargs, { asKey, resolved: tool });
  if (!d.ok) return errorOutcome(`tool dispatch ${d.kind}: ${d.message}`);

  if (states) {
    const origin: WriteOrigin = {
      door: "turn",
      actor: route.execution_key,
      consumer: `conversation_config:${route.target_kind}/${route.target_name}`,
      meta: { route: route.route_name },
      run_id: null,
      op_id: null,
      turn_id: inbound.message_id,
      inbound_id: inbound.inbound_id,
    };
    try {
      const now = ctx.now().getTime();
      // The route read said whether this target has saves outstanding; only then are the held subjects read.
      const held = bound?.pendingSaves ? await heldSubjects(ctx.env.DB, route) : new Set<string>();
      const leftover = await applyStateUpdates(ctx.env, states, d.value, origin, now, held);
      if (leftover.length > 0) await queueSave(ctx.env.DB, route, inbound.message_id, { input: states.input, output: (d.value ?? null) as JsonValue, origin, items: leftover }, now);
    } catch (err) {
      if (err instanceof BindingError) return errorOutcome(err.message);
      throw err;
    }
  }

  let reply: unknown = d.value;
  if (route.reply_program) {
    const m = await mapOne("reply_expr", route.reply_program, d.value);
    if (!m.ok) return errorOutcome(m.detail);
    reply = m.value;
  }
  if (reply !== null && typeof reply !== "string") {
    return errorOutcome(`${route.reply_program ? "reply_expr" : "tool result"} must be a string or null; it was ${typeName(reply)}`);
  }
  return replyOutcome(reply);
}
