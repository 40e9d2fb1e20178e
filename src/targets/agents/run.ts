/**
 * Agents: the built-in `echo` and declared `llm` / `http` agents, run under an execution key.
 * Like the dispatcher, nothing here touches Hono: the bridge calls it from a Durable Object.
 */
import { authorizeTurn } from "../../auth/pass-role";
import type { CheckpointMessage } from "../checkpoints/types";
import type { ExecutionKeyRef, TargetContext } from "../context";
import { type DeclaredAgent, getDeclaredAgent, listDeclaredAgents } from "./declarations";
import { runEchoAgent } from "./echo";
import { AgentError, type AgentEvent, type Emit } from "./events";
import { runHttpAgent } from "./http-agent";
import { runLlmAgent } from "./llm";

export type { AgentEvent } from "./events";

export type AgentRunResult =
  | { ok: true; text: string | null }
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
    (a): AgentSummary => ({ name: a.title, description: a.description, kind: a.kind, input_schema: AGENT_INPUT_SCHEMA }),
  );
  return [...builtins, ...declared].sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
}

/**
 * Runs agent `name` on `input.thread_id`. With `asKey`, the key is re-read live and must grant
 * `agent:<name>` (and every tool call of the run is authorized as `tool:<tool>` the same way).
 * Events arrive through `onEvent` in order, awaited. Never throws for a run failure.
 */
export async function runAgent(
  ctx: TargetContext,
  name: string,
  input: { thread_id: string; user_message: string },
  opts: { asKey?: ExecutionKeyRef; onEvent?: (e: AgentEvent) => void | Promise<void> } = {},
): Promise<AgentRunResult> {
  if (opts.asKey) {
    const auth = await authorizeTurn(ctx.db, opts.asKey.user_id, opts.asKey.fingerprint, { kind: "agent", name }, ctx.now(), opts.asKey.prefetched);
    if (!auth.ok) return { ok: false, kind: "denied", message: auth.reason };
    // The prefetched read served the run's own authorization; each tool call reads the key again.
    opts = { ...opts, asKey: { user_id: opts.asKey.user_id, fingerprint: opts.asKey.fingerprint } };
  }
  const agent = await resolveAgent(ctx.db, name);
  if (!agent) return { ok: false, kind: "unknown_agent", message: "agent is not registered" };
  const emit: Emit = async (e) => {
    await opts.onEvent?.(e);
  };
  try {
    let text: string | null;
    if (agent.kind === "builtin") text = await runEchoAgent(ctx, input, emit);
    else if (agent.agent.kind === "llm") text = await runLlmAgent(ctx, agent.agent.config, input, { asKey: opts.asKey }, emit);
    else text = await runHttpAgent(ctx, agent.agent.config, input, emit);
    return { ok: true, text };
  } catch (err) {
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
 * §3.2). Throws when the agent is unknown or keeps no memory, or when the store fails: the
 * bridge turns that into a loud error outcome.
 */
export async function appendAgentMemory(
  ctx: TargetContext,
  name: string,
  thread_id: string,
  message: { role: "user" | "assistant"; content: string },
): Promise<void> {
  if (!(await agentKeepsMemory(ctx, name))) throw new Error(`agent ${name} keeps no thread memory`);
  const m: CheckpointMessage = { role: message.role, content: message.content };
  await ctx.checkpoints.append(thread_id, [m]);
}
