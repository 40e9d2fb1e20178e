/**
 * A declared `llm` agent: an OpenAI-compatible chat-completions endpoint with a tool-calling
 * loop over registry tools, bounded by `max_steps` model calls. Each call asks for a stream and
 * forwards the answer's text as it arrives; an endpoint that answers plain JSON works the same.
 * Every tool call goes through the one dispatcher under the run's execution key; a refused or
 * failed call is fed back to the model as an error tool result, so it can recover or explain. The
 * thread's messages are the memory: read at the start, the run's new messages appended once it
 * succeeds; a stopped run (TurnStopped) appends nothing.
 */
import { z } from "zod";
import { MAX_BODY_BYTES } from "../../platform/http/body";
import { checkJsonBounds } from "../../platform/http/bounded-json";
import type { AskUserInput } from "../../interactions/ask";
import type { CheckpointMessage } from "../../shared/agent-memory";
import type { AskSlot, ExecutionKeyRef, TargetContext } from "../context";
import { dispatchTool } from "../dispatch";
import { EnvRefError, resolveEnvRefFor } from "../../outbound/env-refs";
import { callStreamingEndpoint } from "../../outbound/stream";
import { outboundStepVerdict, timedStep } from "../../shared/run-steps";
import { allToolSchemas } from "../tools/registry";
import type { LlmConfig } from "./declarations";
import { functionAliases } from "./function-names";
import { AgentError, DeltaForwarder, type Emit, TurnStopped, throwIfStopped, toAnswer } from "./events";
import { type ChatMessage, ChatStream } from "./chat-stream";
import { type ParkedLlmRun, SKIPPED_CALL_RESULT } from "../../shared/parked-run";

const toolCallSchema = z.object({
  id: z.string(),
  type: z.literal("function").optional(),
  function: z.object({ name: z.string(), arguments: z.string() }),
});

const chatResponseSchema = z.object({
  choices: z
    .array(
      z.object({
        message: z.object({
          content: z.string().nullable().optional(),
          tool_calls: z.array(toolCallSchema).nullable().optional(),
        }),
      }),
    )
    .min(1),
});

/**
 * The stored memory replayed to the model: the newest `max` messages, starting at a user
 * message so no tool result or tool-calling turn is cut from its other half. Pure.
 */
export function memoryWindow(messages: CheckpointMessage[], max: number): CheckpointMessage[] {
  const tail = messages.slice(Math.max(0, messages.length - max));
  const firstUser = tail.findIndex((m) => m.role === "user");
  return firstUser < 0 ? [] : tail.slice(firstUser);
}

/**
 * Parses a model's tool-call arguments: a bounded JSON object, or not (with the broken bound when
 * that is the reason). The arguments are a string inside the model's answer, so the answer's own
 * bound never saw them. Pure.
 */
export function parseToolArguments(raw: string): { ok: true; value: Record<string, unknown> } | { ok: false; problem?: string } {
  try {
    const v = JSON.parse(raw === "" ? "{}" : raw);
    if (typeof v === "object" && v !== null && !Array.isArray(v)) {
      const broken = checkJsonBounds(v, MAX_BODY_BYTES);
      return broken ? { ok: false, problem: `tool arguments ${broken}` } : { ok: true, value: v as Record<string, unknown> };
    }
  } catch {
    /* fall through */
  }
  return { ok: false };
}

/** Text a tool result becomes in the tool message the model reads. Pure. */
export function toolMessageContent(result: unknown, isError: boolean): string {
  if (isError) return JSON.stringify({ error: result });
  return typeof result === "string" ? result : JSON.stringify(result ?? null);
}

/**
 * The function list offered to the model: configured names that are registered now, each under its
 * function name (`aliases`, alias → registry name: an MCP tool's dot is not allowed there).
 */
async function offeredTools(ctx: TargetContext, aliases: Map<string, string>) {
  if (!aliases.size) return [];
  const schemas = await allToolSchemas(ctx.db);
  return [...aliases]
    .filter(([, n]) => schemas[n])
    .map(([alias, n]) => ({ type: "function" as const, function: { name: alias, description: schemas[n].description, parameters: schemas[n].input } }));
}

async function runToolCall(
  ctx: TargetContext,
  config: LlmConfig,
  /** The registry name the model's function name stands for; null when it stands for none. */
  name: string | null,
  args: ReturnType<typeof parseToolArguments>,
  asKey: ExecutionKeyRef | undefined,
  ask: AskSlot | undefined,
): Promise<{ result: unknown; is_error: boolean }> {
  if (!args.ok) return { result: args.problem ?? "tool arguments are not a JSON object", is_error: true };
  if (name === null || !config.tool_names.includes(name)) return { result: "this tool is not available to this agent", is_error: true };
  // The slot is there only for this call: `ask_user` (or a preset over it) parks through it.
  if (ask) ctx.ask = ask;
  let r: Awaited<ReturnType<typeof dispatchTool>>;
  try {
    r = await dispatchTool(ctx, name, args.value, { asKey });
  } finally {
    if (ask) delete ctx.ask;
  }
  if (r.ok) return { result: r.value, is_error: false };
  // The model sees a fixed refusal, not the key's internal state (disabled, re-minted, ...).
  return { result: r.kind === "denied" ? "permission denied: the execution key may not call this tool" : r.message, is_error: true };
}

/** Largest parked run (JSON) an interaction stores; a larger run's `ask_user` fails as a tool error. */
export const MAX_PARKED_RUN_BYTES = 1024 * 1024;

/** How an llm run is started or resumed. */
export interface LlmRunOptions {
  asKey?: ExecutionKeyRef;
  /** The caller can store a parked run: `ask_user` may suspend this run. */
  park?: boolean;
  /** Resume a parked run: its messages so far (the ask's result included) and the model calls already spent. */
  resume?: { fresh: CheckpointMessage[]; stepsUsed: number };
}

/** How an llm run ended: an answer, or parked on `ask_user` (the caller stores `parked` as an interaction). */
export type LlmRunEnd =
  | { kind: "final"; text: string | null }
  | { kind: "suspended"; ask: AskUserInput; parked: Omit<ParkedLlmRun, "kind" | "agent" | "as_key"> };

/**
 * The messages a parked run resumes with: its own, then the ask's result (`content`, the
 * interaction's outcome as JSON) and a fixed "not run" result for each call of that step after the ask. Pure.
 */
export function resumedMessages(parked: Pick<ParkedLlmRun, "fresh" | "call_id" | "skipped">, content: string): CheckpointMessage[] {
  return [
    ...parked.fresh,
    { role: "tool", tool_call_id: parked.call_id, name: "ask_user", content },
    ...parked.skipped.map(
      (c): CheckpointMessage => ({
        role: "tool",
        tool_call_id: c.call_id,
        name: c.tool,
        content: toolMessageContent(SKIPPED_CALL_RESULT, true),
      }),
    ),
  ];
}

/**
 * One model call as one `llm` step of the run's trace (when the context is traced,
 * src/shared/run-steps.ts), spanning the whole streamed answer. The answer's text goes out as
 * `message_delta` chunks while it streams; a JSON answer emits nothing here (`streamed: false`).
 */
async function callModel(
  ctx: TargetContext,
  config: LlmConfig,
  url: string,
  headers: Record<string, string>,
  body: Record<string, unknown>,
  emit: Emit,
): Promise<ChatMessage & { streamed: boolean }> {
  const stream = new ChatStream(new DeltaForwarder(emit));
  const r = await timedStep(
    ctx,
    "llm",
    config.model,
    () =>
      callStreamingEndpoint(
        ctx.fetch,
        {
          label: "LLM endpoint",
          url,
          method: "POST",
          headers,
          body: { ...body, stream: true },
          timeoutMs: config.timeout_seconds * 1000,
          guard: ctx.settings.outbound,
          signal: ctx.signal,
        },
        (data) => stream.take(data),
      ),
    outboundStepVerdict,
  );
  if (!r.ok) {
    if (r.kind === "stopped") throw new TurnStopped();
    throw new AgentError(r.kind === "malformed" ? "LLM endpoint streamed a chunk that is not a chat-completions chunk" : r.message);
  }
  if (r.streamed) {
    const message = stream.message();
    if (!message) throw new AgentError("LLM endpoint streamed a tool call without its id or name");
    return { ...message, streamed: true };
  }
  const parsed = chatResponseSchema.safeParse(r.value);
  if (!parsed.success) throw new AgentError("LLM endpoint answered an unexpected body");
  const message = parsed.data.choices[0].message;
  return { content: message.content ?? null, tool_calls: message.tool_calls ?? [], streamed: false };
}

export async function runLlmAgent(
  ctx: TargetContext,
  config: LlmConfig,
  input: { thread_id: string; user_message: string },
  opts: LlmRunOptions,
  emit: Emit,
): Promise<LlmRunEnd> {
  const headers: Record<string, string> = {};
  if (config.api_key) {
    try {
      headers.authorization = `Bearer ${resolveEnvRefFor(ctx.env, config.api_key, config.base_url)}`;
    } catch (err) {
      if (err instanceof EnvRefError) throw new AgentError(err.message);
      throw err;
    }
  }
  const memory = memoryWindow(await ctx.checkpoints.read(input.thread_id), config.memory_window);
  const aliases = functionAliases(config.tool_names);
  const tools = await offeredTools(ctx, aliases);
  const system: CheckpointMessage[] = config.system_prompt ? [{ role: "system", content: config.system_prompt }] : [];
  const fresh: CheckpointMessage[] = opts.resume ? [...opts.resume.fresh] : [{ role: "user", content: input.user_message }];
  const url = `${config.base_url.replace(/\/+$/, "")}/chat/completions`;
  // A resumed run keeps counting its model calls, but always gets at least one to use the answer.
  const first = opts.resume ? Math.min(opts.resume.stepsUsed, config.max_steps - 1) : 0;

  for (let step = first; step < config.max_steps; step++) {
    throwIfStopped(ctx.signal);
    const body: Record<string, unknown> = { model: config.model, messages: [...system, ...memory, ...fresh] };
    if (tools.length) body.tools = tools;
    if (config.temperature !== undefined) body.temperature = config.temperature;
    const message = await callModel(ctx, config, url, headers, body, emit);
    const calls = message.tool_calls;

    if (calls.length) {
      fresh.push({ role: "assistant", content: message.content, tool_calls: calls });
      for (let i = 0; i < calls.length; i++) {
        throwIfStopped(ctx.signal);
        const call = calls[i];
        // Events name the registry tool; the messages the model reads keep its function name.
        const fn = call.function.name;
        const registered = aliases.get(fn) ?? null;
        const tool = registered ?? fn;
        const args = parseToolArguments(call.function.arguments);
        await emit({ type: "tool_call_step", tool, args: args.ok ? args.value : call.function.arguments, call_id: call.id });
        // Closures do not narrow, so the slot writes into a holder.
        const held: { ask: AskUserInput | null } = { ask: null };
        const slot: AskSlot | undefined = opts.park ? { park: (q) => void (held.ask = q) } : undefined;
        let out = await runToolCall(ctx, config, registered, args, opts.asKey, slot);
        const asked = held.ask;
        if (asked && !out.is_error) {
          const parked = {
            thread_id: input.thread_id,
            user_message: input.user_message,
            fresh: [...fresh],
            call_id: call.id,
            skipped: calls.slice(i + 1).map((c) => ({ call_id: c.id, tool: c.function.name })),
            steps_used: step + 1,
          };
          if (new TextEncoder().encode(JSON.stringify(parked)).byteLength <= MAX_PARKED_RUN_BYTES) return { kind: "suspended", ask: asked, parked };
          out = { result: "ask_user could not wait: the run is too large to park; answer without asking", is_error: true };
        }
        await emit({ type: "tool_result_step", tool, call_id: call.id, result: out.result, is_error: out.is_error });
        fresh.push({ role: "tool", tool_call_id: call.id, name: fn, content: toolMessageContent(out.result, out.is_error) });
      }
      continue;
    }

    const text = toAnswer(message.content);
    // A silent answer stores no assistant message: an empty assistant turn confuses later calls.
    if (text !== null) fresh.push({ role: "assistant", content: text });
    await ctx.checkpoints.append(input.thread_id, fresh);
    // A streamed answer's deltas went out as it arrived; a JSON answer is one delta.
    if (text !== null && !message.streamed) await emit({ type: "message_delta", text });
    await emit({ type: "message_final", text });
    return { kind: "final", text };
  }
  throw new AgentError(`LLM agent used its ${config.max_steps} steps without a final answer`);
}
