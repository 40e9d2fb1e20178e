/**
 * A declared `llm` agent: an OpenAI-compatible chat-completions endpoint with a tool-calling
 * loop over registry tools, bounded by `max_steps` model calls. Every tool call goes through
 * the one dispatcher under the run's execution key; a refused or failed call is fed back to the
 * model as an error tool result, so it can recover or explain. The thread's messages are the
 * memory: read at the start, the run's new messages appended once it succeeds.
 */
import { z } from "zod";
import { MAX_BODY_BYTES } from "../../http/body";
import { checkJsonBounds } from "../../http/bounded-json";
import type { CheckpointMessage } from "../checkpoints/types";
import type { ExecutionKeyRef, TargetContext } from "../context";
import { dispatchTool } from "../dispatch";
import { EnvRefError, resolveEnvRef } from "../env-refs";
import { callJsonEndpoint } from "../outbound";
import { outboundStepVerdict, timedStep } from "../../runs/steps";
import { allToolSchemas } from "../tools/registry";
import type { LlmConfig } from "./declarations";
import { AgentError, type Emit, toAnswer } from "./events";

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

/** The function list offered to the model: configured names that are registered now. */
async function offeredTools(ctx: TargetContext, names: string[]) {
  if (!names.length) return [];
  const schemas = await allToolSchemas(ctx.db);
  return names
    .filter((n) => schemas[n])
    .map((n) => ({ type: "function" as const, function: { name: n, description: schemas[n].description, parameters: schemas[n].input } }));
}

async function runToolCall(
  ctx: TargetContext,
  config: LlmConfig,
  name: string,
  args: ReturnType<typeof parseToolArguments>,
  asKey: ExecutionKeyRef | undefined,
): Promise<{ result: unknown; is_error: boolean }> {
  if (!args.ok) return { result: args.problem ?? "tool arguments are not a JSON object", is_error: true };
  if (!config.tool_names.includes(name)) return { result: "this tool is not available to this agent", is_error: true };
  const r = await dispatchTool(ctx, name, args.value, { asKey });
  if (r.ok) return { result: r.value, is_error: false };
  // The model sees a fixed refusal, not the key's internal state (disabled, re-minted, ...).
  return { result: r.kind === "denied" ? "permission denied: the execution key may not call this tool" : r.message, is_error: true };
}

export async function runLlmAgent(
  ctx: TargetContext,
  config: LlmConfig,
  input: { thread_id: string; user_message: string },
  opts: { asKey?: ExecutionKeyRef },
  emit: Emit,
): Promise<string | null> {
  const headers: Record<string, string> = {};
  if (config.api_key) {
    try {
      headers.authorization = `Bearer ${resolveEnvRef(ctx.env, config.api_key)}`;
    } catch (err) {
      if (err instanceof EnvRefError) throw new AgentError(err.message);
      throw err;
    }
  }
  const memory = memoryWindow(await ctx.checkpoints.read(input.thread_id), config.memory_window);
  const tools = await offeredTools(ctx, config.tool_names);
  const system: CheckpointMessage[] = config.system_prompt ? [{ role: "system", content: config.system_prompt }] : [];
  const fresh: CheckpointMessage[] = [{ role: "user", content: input.user_message }];
  const url = `${config.base_url.replace(/\/+$/, "")}/chat/completions`;

  for (let step = 0; step < config.max_steps; step++) {
    const body: Record<string, unknown> = { model: config.model, messages: [...system, ...memory, ...fresh] };
    if (tools.length) body.tools = tools;
    if (config.temperature !== undefined) body.temperature = config.temperature;
    // One `llm` step of the run's trace when the context is traced (src/runs/steps.ts).
    const r = await timedStep(
      ctx,
      "llm",
      config.model,
      () =>
        callJsonEndpoint(ctx.fetch, {
          label: "LLM endpoint",
          url,
          method: "POST",
          headers,
          body,
          timeoutMs: config.timeout_seconds * 1000,
          guard: ctx.settings.outbound,
        }),
      outboundStepVerdict,
    );
    if (!r.ok) throw new AgentError(r.message);
    const parsed = chatResponseSchema.safeParse(r.value);
    if (!parsed.success) throw new AgentError("LLM endpoint answered an unexpected body");
    const message = parsed.data.choices[0].message;
    const calls = message.tool_calls ?? [];

    if (calls.length) {
      fresh.push({ role: "assistant", content: message.content ?? null, tool_calls: calls });
      for (const call of calls) {
        const tool = call.function.name;
        const args = parseToolArguments(call.function.arguments);
        await emit({ type: "tool_call_step", tool, args: args.ok ? args.value : call.function.arguments, call_id: call.id });
        const out = await runToolCall(ctx, config, tool, args, opts.asKey);
        await emit({ type: "tool_result_step", tool, call_id: call.id, result: out.result, is_error: out.is_error });
        fresh.push({ role: "tool", tool_call_id: call.id, name: tool, content: toolMessageContent(out.result, out.is_error) });
      }
      continue;
    }

    const text = toAnswer(message.content);
    // A silent answer stores no assistant message: an empty assistant turn confuses later calls.
    if (text !== null) fresh.push({ role: "assistant", content: text });
    await ctx.checkpoints.append(input.thread_id, fresh);
    if (text !== null) await emit({ type: "message_delta", text });
    await emit({ type: "message_final", text });
    return text;
  }
  throw new AgentError(`LLM agent used its ${config.max_steps} steps without a final answer`);
}
