/**
 * Runs one turn's target (spec §4.2, §3.1; decisions §13) and maps every failure to the fixed
 * client-safe error outcome, keeping the detail for admins. Never throws for a turn failure.
 *
 * What the run needs of the other areas (agents, tools, questions, states, channels, access) comes
 * in as `turn`, the thread's turn plugins (src/conversations/thread/deps.ts), not as imports: the
 * areas plug into the turn, and a test can hand the runner other plugins.
 */
import type { KeyWithOwner } from "../../access-control/key-store";
import { JqError, jqRun } from "../../platform/jq/engine";
import type { ParkedRun } from "../../shared/parked-run";
import type { AskUserInput } from "../../interactions/ask";
import type { InteractionOrigin, InteractionState } from "../../interactions/record";
import type { RichPart } from "../../channels/rich/types";
import type { TargetContext } from "../../targets/context";
import type { AgentEvent } from "../../targets/agents/events";
import type { WriteOrigin } from "../../states/rpc";
import type { JsonObject, JsonValue } from "../../platform/http/bounded-json";
import type { StateBinding } from "../../shared/state-binding";
import type { TurnPlugins } from "./deps";
import { buildPayload, defaultKwargs, type TurnInbound } from "../model/payload";
import { type AnswerStatus, TURN_ERROR_TEXT, isSilence } from "../model/record";
import type { Route } from "../model/route";
import { must } from "../../platform/must";

export interface TurnOutcome {
  answer_status: AnswerStatus;
  answer: string | null;
  error: string | null;
  /** A parked turn's question: its reply options or form, where the channel shows them. */
  answer_part?: RichPart | null;
  /** The turn parked on ask_user: the thread notes the interaction where the turn settles. Not stored on the record. */
  parked?: { interaction_id: string; expires_at: string };
  /** The turn answered this parked interaction (its participant's inbound): the thread drops its note. Not stored on the record. */
  resolved?: string;
  /** A stop door ended the turn (the record's `stopped`). */
  stopped?: true;
}

/** Where a run's agent events go while it runs (the thread's live turn); absent, nowhere. */
export type TurnEvents = (e: AgentEvent) => void;

/** Where a turn's run parks on ask_user: its thread and record (null: it may not park, no interactions store). */
export type ParkOrigin = Omit<Extract<InteractionOrigin, { kind: "thread" }>, "kind">;

export const silentOutcome = (): TurnOutcome => ({ answer_status: "silent", answer: null, error: null });

export function errorOutcome(detail: string): TurnOutcome {
  return { answer_status: "error", answer: TURN_ERROR_TEXT, error: detail };
}

export function replyOutcome(reply: string | null): TurnOutcome {
  return isSilence(reply) ? silentOutcome() : { answer_status: "answered", answer: reply, error: null };
}

/** A stopped turn's outcome: the draft its run had written is the answer; nothing drafted is silence. */
export function stoppedOutcome(draft: string): TurnOutcome {
  return { ...replyOutcome(draft), stopped: true };
}

function typeName(v: unknown): string {
  return v === null ? "null" : Array.isArray(v) ? "array" : typeof v;
}

/** Runs a mapping program requiring exactly one output; the failure text never carries values. */
async function mapOne(
  name: "payload_expr" | "reply_expr",
  program: string,
  input: unknown,
): Promise<{ ok: true; value: unknown } | { ok: false; detail: string }> {
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
  turn: TurnPlugins,
  ctx: TargetContext,
  route: Route,
  inbound: TurnInbound,
  prefetchedKey?: KeyWithOwner | null,
  /** The target config's binding, its pending saves and who wrote it (its live key and owner, read with the route). */
  bound: { binding: StateBinding; pendingSaves: number | null; writer?: { stored_by: string; holder: KeyWithOwner | null } } | null = null,
  park: ParkOrigin | null = null,
  onEvent?: TurnEvents,
): Promise<TurnOutcome> {
  const asKey = { user_id: route.execution_key, fingerprint: route.execution_key_fingerprint, prefetched: prefetchedKey };
  if (route.target_kind === "agent") {
    const r = await turn.agents.run(
      ctx,
      route.target_name,
      { thread_id: inbound.thread_id, user_message: inbound.text ?? "", ...(inbound.attachments?.length ? { attachments: inbound.attachments } : {}) },
      { asKey, park: park !== null, onEvent },
    );
    if (!r.ok) return errorOutcome(`agent ${r.kind}: ${r.message}`);
    if (r.suspended) return parkTurn(turn, ctx, route, parkedAt(park), r.suspended.ask, r.suspended.parked, { kind: "agent", name: route.target_name });
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
  const tool = await turn.tools.resolve(ctx.db, route.target_name);
  const binding = turn.states.merge(bound?.binding ?? null, tool?.kind === "preset" ? tool.body.state_binding : null);
  let states: Awaited<ReturnType<TurnPlugins["states"]["prepare"]>> | null = null;
  if (binding) {
    // A key that may not run the tool reads no state: authorized first, as the dispatch would.
    const auth = await turn.access.authorizeTurn(
      ctx.db,
      asKey.user_id,
      asKey.fingerprint,
      { kind: "tool", name: route.target_name },
      ctx.now(),
      asKey.prefetched,
    );
    if (!auth.ok) return errorOutcome(`tool dispatch denied: ${auth.reason}`);
    const refused = bindingRefusal(turn, bound, tool);
    if (refused) return errorOutcome(refused);
    try {
      const target = { target_kind: route.target_kind, target_name: route.target_name, person: inbound.person?.person_id ?? null };
      states = await turn.states.prepare(ctx.env, binding, target, kwargs as JsonObject, ctx.now().getTime());
      kwargs = states.input;
    } catch (err) {
      if (err instanceof turn.states.BindingError) return errorOutcome(err.message);
      throw err;
    }
  }

  // A tool target that is ask_user (or a preset over it) parks the turn: the slot is
  // there only for this dispatch, and only where the turn can park.
  const held: { ask: AskUserInput | null } = { ask: null };
  if (park) ctx.ask = { park: (q) => void (held.ask = q) };
  let d: Awaited<ReturnType<TurnPlugins["tools"]["dispatch"]>>;
  try {
    d = await turn.tools.dispatch(ctx, route.target_name, kwargs, { asKey, resolved: tool });
  } finally {
    delete ctx.ask;
  }
  if (!d.ok) return errorOutcome(`tool dispatch ${d.kind}: ${d.message}`);
  if (held.ask)
    return parkTurn(turn, ctx, route, parkedAt(park), held.ask, { kind: "tool_turn", tool: route.target_name }, { kind: "tool", name: route.target_name });

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
      const held = bound?.pendingSaves ? await turn.states.heldSubjects(ctx.env.DB, route) : new Set<string>();
      const leftover = await turn.states.apply(ctx.env, states, d.value, origin, now, held);
      if (leftover.length > 0)
        await turn.states.queueSave(
          ctx.env,
          route,
          inbound.message_id,
          { input: states.input, output: (d.value ?? null) as JsonValue, origin, items: leftover },
          now,
        );
    } catch (err) {
      if (err instanceof turn.states.BindingError) return errorOutcome(err.message);
      throw err;
    }
  }

  return mapReply(route, d.value);
}

/**
 * Why the turn's state bindings may not run now, or null: each part is bounded by the key that
 * stored it (docs/security.md, "Confused deputy"): the target config's by its writer, a preset's by
 * whoever made its active version active. Both keys were read with what they stored.
 */
function bindingRefusal(turn: TurnPlugins, bound: Parameters<typeof runTarget>[5], tool: Awaited<ReturnType<TurnPlugins["tools"]["resolve"]>>): string | null {
  const { storedByRefusal } = turn.access;
  if (bound) {
    const why = bound.writer ? storedByRefusal(bound.writer.stored_by, bound.writer.holder, turn.states.refs(bound.binding)) : "its writer was not read";
    if (why) return `the target config's state binding may not run: ${why}`;
  }
  if (tool?.kind === "preset" && tool.body.state_binding) {
    const why = storedByRefusal(tool.stored_by, tool.holder, turn.states.refs(tool.body.state_binding));
    if (why) return `the preset's state binding may not run: ${why}`;
  }
  return null;
}

/** A tool result through the route's reply_expr (or as it is): a string or null is the reply. */
async function mapReply(route: Route, value: unknown): Promise<TurnOutcome> {
  let reply: unknown = value;
  if (route.reply_program) {
    const m = await mapOne("reply_expr", route.reply_program, value);
    if (!m.ok) return errorOutcome(m.detail);
    reply = m.value;
  }
  if (reply !== null && typeof reply !== "string") {
    return errorOutcome(`${route.reply_program ? "reply_expr" : "tool result"} must be a string or null; it was ${typeName(reply)}`);
  }
  return replyOutcome(reply);
}

/** Where a suspended run parks: a run is asked to park only where the turn may (`park` set). */
function parkedAt(park: ParkOrigin | null): ParkOrigin {
  return must(park, "where the turn parks");
}

/**
 * Parks the turn on `ask`: stores the interaction (one object call), and answers the
 * question as the turn's answer, delivered through the thread's door like any answer.
 */
async function parkTurn(
  turn: TurnPlugins,
  ctx: TargetContext,
  route: Route,
  park: ParkOrigin,
  ask: AskUserInput,
  parked: ParkedRun,
  target: InteractionState["target"],
): Promise<TurnOutcome> {
  let created: InteractionState;
  try {
    created = await turn.questions.create(ctx.env, ctx.settings, { ask, origin: { kind: "thread", ...park }, target, parked }, ctx.now().getTime());
  } catch (err) {
    console.error("parking a turn on ask_user failed", err instanceof Error ? err.message : "unknown error");
    return errorOutcome("the run asked the user (ask_user), but its interaction could not be stored");
  }
  const q = turn.questions.answerOf(created, route.door === "channel" && route.channel ? turn.channels.adapterFor(route.channel) : undefined);
  return {
    answer_status: "answered",
    answer: q.answer,
    error: null,
    answer_part: q.answer_part,
    parked: { interaction_id: created.interaction_id, expires_at: created.expires_at },
  };
}

/**
 * Resumes a run parked on ask_user in a turn of its thread: `result` is what the ask
 * answers (the interaction's outcome). An llm run goes on as the route's execution key as it is
 * now (grants are enforced when the run resumes) and may park again; a tool turn maps `result`
 * through the route's reply_expr.
 */
export async function resumeParked(
  turn: TurnPlugins,
  ctx: TargetContext,
  route: Route,
  parked: ParkedRun,
  result: JsonObject,
  park: ParkOrigin | null,
  prefetchedKey?: KeyWithOwner | null,
  onEvent?: TurnEvents,
): Promise<TurnOutcome> {
  // A background tool run never parks in a thread: its interaction's origin is the run.
  if (parked.kind === "tool_run") return errorOutcome("the parked run is not this thread's");
  if (parked.kind === "tool_turn") {
    // No tool runs again, but the key must still be allowed the tool now: a revoked key answers nothing.
    const auth = await turn.access.authorizeTurn(
      ctx.db,
      route.execution_key,
      route.execution_key_fingerprint,
      { kind: "tool", name: parked.tool },
      ctx.now(),
      prefetchedKey,
    );
    if (!auth.ok) return errorOutcome(`tool dispatch denied: ${auth.reason}`);
    return mapReply(route, result);
  }
  const run = { ...parked, as_key: { user_id: route.execution_key, fingerprint: route.execution_key_fingerprint } };
  const r = await turn.agents.resume(ctx, run, JSON.stringify(result), { park: park !== null, prefetched: prefetchedKey, onEvent });
  if (!r.ok) return errorOutcome(`agent ${r.kind}: ${r.message}`);
  if (r.suspended) return parkTurn(turn, ctx, route, parkedAt(park), r.suspended.ask, r.suspended.parked, { kind: "agent", name: parked.agent });
  return replyOutcome(r.text);
}
