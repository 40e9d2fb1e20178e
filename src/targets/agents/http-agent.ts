/**
 * A declared `http` agent: one POST `{thread_id, messages, input}` per run, answered with
 * `{text}` (`{text: null}` is silence). It keeps no memory here; the endpoint owns its own.
 */
import { z } from "zod";
import { ConnectionRefError, connectionHeaderValue } from "../../connectors/token-resolution";
import type { TargetContext } from "../context";
import { EnvRefError, resolveCallHeaders } from "../../outbound/env-refs";
import { callJsonEndpoint } from "../../outbound/fetch";
import { outboundStepVerdict, timedStep } from "../../shared/run-steps";
import type { HttpAgentConfig } from "./declarations";
import { AgentError, type Emit, toAnswer } from "./events";

const answerSchema = z.object({ text: z.string().nullable() });

export async function runHttpAgent(
  ctx: TargetContext,
  config: HttpAgentConfig,
  input: { thread_id: string; user_message: string },
  emit: Emit,
): Promise<string | null> {
  let headers: Record<string, string>;
  try {
    headers = await resolveCallHeaders(ctx.env, config.headers, config.url, (ref) => connectionHeaderValue(ctx, ref, config.url));
  } catch (err) {
    if (err instanceof EnvRefError || err instanceof ConnectionRefError) throw new AgentError(err.message);
    throw err;
  }
  // One `agent_endpoint` step of the run's trace when the context is traced (src/shared/run-steps.ts).
  const r = await timedStep(
    ctx,
    "agent_endpoint",
    "agent endpoint",
    () =>
      callJsonEndpoint(ctx.fetch, {
        label: "agent endpoint",
        url: config.url,
        method: "POST",
        headers,
        body: {
          thread_id: input.thread_id,
          messages: [{ role: "user", content: input.user_message }],
          input: { user_message: input.user_message },
        },
        timeoutMs: config.timeout_seconds * 1000,
        guard: ctx.settings.outbound,
      }),
    outboundStepVerdict,
  );
  if (!r.ok) throw new AgentError(r.message);
  const parsed = answerSchema.safeParse(r.value);
  if (!parsed.success) throw new AgentError("agent endpoint answered without a text field (string or null)");
  const text = toAnswer(parsed.data.text);
  if (text !== null) await emit({ type: "message_delta", text });
  await emit({ type: "message_final", text });
  return text;
}
