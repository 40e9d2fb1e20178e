/**
 * Agents: the built-in `echo` and declared `llm` / `http` agents, run under an execution key.
 * Like the dispatcher, nothing here touches Hono: the bridge calls it from a Durable Object.
 */
import { authorizeTurn } from "../../access-control/pass-role";
import type { CheckpointMessage } from "../../shared/agent-memory";
import type { ExecutionKeyRef, TargetContext } from "../context";
import type { AgentInput } from "./input";
import type { AskUserInput } from "../../interactions/ask";
import { type DeclaredAgent, getDeclaredAgent, listDeclaredAgents } from "./declarations";
import { runEchoAgent } from "./echo";
import { AgentError, type AgentEvent, type Emit, TurnStopped, throwIfStopped } from "./events";
import { runHttpAgent } from "./http-agent";
import { type LlmRunEnd, resumedMessages, runLlmAgent } from "./llm";
import type { ParkedLlmRun } from "../../shared/parked-run";

export type { AgentEvent } from "./events";

/** A run parked on ask_user: the question and what the run needs to go on. */
export interface AgentSuspension {
  ask: AskUserInput;
  parked: ParkedLlmRun;
}

/**
 * How a run ended. `suspended` appears only for a run started with `park: true`: the run waits for
 * the answer, which the caller stores as an interaction (src/interactions/create.ts).
 */
export type AgentRunResult =
  | { ok: true; text: string | null; suspended?: undefined }
  | { ok: true; text: null; suspended: AgentSuspension }
  | { ok: false; kind: "unknown_agent" | "denied" | "agent_error"; message: string };

type ResolvedAgent = { kind: "builtin"; name: "echo" } | { kind: "declared"; agent: DeclaredAgent };

async function resolveAgent(db: D1Database, name: string): Promise<ResolvedAgent | null> {
  if (name === "echo") return { kind: "builtin", name };
  const agent = await getDeclaredAgent(db, name);
  return agent ? { kind: "declared", agent } : null;
}

/** The input every agent takes (the runs door's body and the bridge's turn). */
export const AGENT_INPUT_SCHEMA = {
  type: "object",
  properties: {
    user_message: { type: "string", minLength: 1 },
    thread_id: { type: "string", description: "Memory thread; omitted means a fresh one. Ids starting bridge: are the bridge's." },
  },
  required: ["user_message"],
  additionalProperties: false,
} as const;

/** One `GET /api/agents` item. */
export interface AgentSummary {
  name: string;
  description: string;
  kind: "builtin" | "llm" | "http";
  input_schema: Record<string, unknown>;
}

/** Every registered agent, sorted by name. */
export async function listAgents(db: D1Database): Promise<AgentSummary[]> {
  const builtins: AgentSummary[] = [
    { name: "echo", description: "Answers `echo: <text>` and keeps thread memory.", kind: "builtin", input_schema: AGENT_INPUT_SCHEMA },
  ];
  const declared = (await listDeclaredAgents(db)).map(
    (a): AgentSummary => ({
      name: a.title,
      description: a.description,
      kind: a.kind,
      input_schema: AGENT_INPUT_SCHEMA,
    }),
  );
  return [...builtins, ...declared].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/** How a run is started: as which key, with which event sink, and whether it may park on ask_user. */
export interface AgentRunOptions {
  asKey?: ExecutionKeyRef;
  onEvent?: (e: AgentEvent) => void | Promise<void>;
  /** The caller stores parked runs (a bridge turn, the agent run door, a resumed run): `ask_user` may suspend an llm run. */
  park?: boolean;
}

/**
 * Runs agent `name` on `input.thread_id`. With `asKey`, the key is re-read live and must grant
 * `agent:<name>` (and every tool call of the run is authorized as `tool:<tool>` the same way).
 * Events arrive through `onEvent` in order, awaited. Never throws for a run failure; throws
 * TurnStopped when `ctx.signal` aborts (a stop is not a failure: the caller decides what the
 * text drafted so far becomes).
 */
export async function runAgent(ctx: TargetContext, name: string, input: AgentInput, opts: AgentRunOptions = {}): Promise<AgentRunResult> {
  return guardedRun(ctx, name, opts, async (agent, asKey, emit) => {
    if (agent.kind === "builtin") return { kind: "final", text: await runEchoAgent(ctx, input, emit) };
    if (agent.agent.kind === "llm") return runLlmAgent(ctx, agent.agent.config, input, { asKey, park: opts.park }, emit);
    return { kind: "final", text: await runHttpAgent(ctx, agent.agent.config, input, emit) };
  });
}

/**
 * Resumes a run parked on ask_user: `content` is the ask's result (the interaction's
 * outcome as JSON text) the model reads as the tool result. The key is authorized again, live,
 * and the agent must still be an llm agent. May park again when `opts.park` is set.
 */
export async function resumeAgent(
  ctx: TargetContext,
  parked: ParkedLlmRun,
  content: string,
  opts: Omit<AgentRunOptions, "asKey"> & { prefetched?: ExecutionKeyRef["prefetched"] } = {},
): Promise<AgentRunResult> {
  // The key as the turn read it moments ago (batched with its route) serves the first authorization only.
  const asKey = parked.as_key ? { ...parked.as_key, prefetched: opts.prefetched } : undefined;
  return guardedRun(ctx, parked.agent, { ...opts, asKey }, async (agent, key, emit) => {
    if (agent.kind !== "declared" || agent.agent.kind !== "llm") throw new AgentError("the parked run's agent is no longer an llm agent");
    let result: unknown = content;
    try {
      result = JSON.parse(content);
    } catch {
      /* shown as text */
    }
    await emit({ type: "tool_result_step", tool: "ask_user", call_id: parked.call_id, result, is_error: false });
    const input = { thread_id: parked.thread_id, user_message: parked.user_message };
    return runLlmAgent(
      ctx,
      agent.agent.config,
      input,
      { asKey: key, park: opts.park, resume: { fresh: resumedMessages(parked, content), stepsUsed: parked.steps_used } },
      emit,
    );
  });
}

/** Authorizes, resolves and runs; maps every failure to a result (throws only TurnStopped). */
async function guardedRun(
  ctx: TargetContext,
  name: string,
  opts: AgentRunOptions,
  run: (agent: ResolvedAgent, asKey: ExecutionKeyRef | undefined, emit: Emit) => Promise<LlmRunEnd>,
): Promise<AgentRunResult> {
  let asKey = opts.asKey;
  if (asKey) {
    const auth = await authorizeTurn(ctx.db, asKey.user_id, asKey.fingerprint, { kind: "agent", name }, ctx.now(), asKey.prefetched);
    if (!auth.ok) return { ok: false, kind: "denied", message: auth.reason };
    // The prefetched read served the run's own authorization; each tool call reads the key again.
    asKey = { user_id: asKey.user_id, fingerprint: asKey.fingerprint };
  }
  const agent = await resolveAgent(ctx.db, name);
  if (!agent) return { ok: false, kind: "unknown_agent", message: "agent is not registered" };
  const emit: Emit = async (e) => {
    await opts.onEvent?.(e);
  };
  try {
    throwIfStopped(ctx.signal);
    const end = await run(agent, asKey, emit);
    if (end.kind === "final") return { ok: true, text: end.text };
    const as_key = asKey ? { user_id: asKey.user_id, fingerprint: asKey.fingerprint } : null;
    return { ok: true, text: null, suspended: { ask: end.ask, parked: { kind: "llm", agent: name, as_key, ...end.parked } } };
  } catch (err) {
    if (err instanceof TurnStopped) throw err;
    if (err instanceof AgentError) return { ok: false, kind: "agent_error", message: err.message };
    const errorId = crypto.randomUUID().replace(/-/g, "");
    console.error(`[${errorId}] agent ${name} failed:`, err);
    return { ok: false, kind: "agent_error", message: `agent run failed (error_id ${errorId})` };
  }
}

/** Is `name` a registered agent? */
export async function agentExists(ctx: TargetContext, name: string): Promise<boolean> {
  return (await resolveAgent(ctx.db, name)) !== null;
}

/** Does the agent keep thread memory (and so implement memory append)? echo and llm do; http does not. */
export async function agentKeepsMemory(ctx: TargetContext, name: string): Promise<boolean> {
  const agent = await resolveAgent(ctx.db, name);
  if (!agent) return false;
  return agent.kind === "builtin" || agent.agent.kind === "llm";
}

/**
 * Appends one message to the agent's memory of the thread (manual mode, operator send: spec
 * §3.2; a private note as a system message when the route's inbox policy asks). Throws when the agent is unknown or keeps no memory, or when the store fails: the
 * bridge turns that into a loud error outcome.
 */
export async function appendAgentMemory(
  ctx: TargetContext,
  name: string,
  thread_id: string,
  message: { role: "user" | "assistant" | "system"; content: string },
): Promise<void> {
  if (!(await agentKeepsMemory(ctx, name))) throw new Error(`agent ${name} keeps no thread memory`);
  const m: CheckpointMessage = { role: message.role, content: message.content };
  await ctx.checkpoints.append(thread_id, [m]);
}
