/**
 * A declared `http` agent: one POST `{thread_id, messages, input}` per run (`input.attachments`
 * when a conversation turn carried some), answered with
 * `{text}` (`{text: null}` is silence), or streamed as server-sent events: `message_delta {text}`
 * frames forwarded as they arrive, then optionally `message_final {text}`. It keeps no memory
 * here; the endpoint owns its own.
 */
import { z } from "zod";
import { ConnectionRefError, connectionHeaderValue } from "../../connectors/token-resolution";
import type { TargetContext } from "../context";
import { EnvRefError, resolveCallHeaders } from "../../outbound/env-refs";
import { type EventVerdict, callStreamingEndpoint } from "../../outbound/stream";
import { outboundStepVerdict, timedStep } from "../../shared/run-steps";
import type { HttpAgentConfig } from "./declarations";
import type { AgentInput } from "./input";
import { AgentError, DeltaForwarder, type Emit, TurnStopped, throwIfStopped, toAnswer } from "./events";

const answerSchema = z.object({ text: z.string().nullable() });

/** One streamed frame: a typed JSON object. Types other than message_delta and message_final are skipped (room to grow). */
const frameSchema = z.object({ type: z.string(), text: z.string().nullable().optional() });

/** Reads the frames of a streamed answer: deltas forwarded as they come, the final frame ends it. */
class AgentStream {
  /** The final frame's text, when one came. */
  final: { text: string | null } | null = null;

  constructor(readonly deltas: DeltaForwarder) {}

  async take(data: string): Promise<EventVerdict> {
    let raw: unknown;
    try {
      raw = JSON.parse(data);
    } catch {
      return "malformed";
    }
    const frame = frameSchema.safeParse(raw);
    if (!frame.success) return "malformed";
    const { type, text } = frame.data;
    if (type === "message_delta") {
      if (typeof text !== "string") return "malformed";
      await this.deltas.push(text);
    } else if (type === "message_final") {
      if (text === undefined) return "malformed";
      this.final = { text };
      return "done";
    }
    return "more";
  }
}

export async function runHttpAgent(ctx: TargetContext, config: HttpAgentConfig, input: AgentInput, emit: Emit): Promise<string | null> {
  let headers: Record<string, string>;
  try {
    headers = await resolveCallHeaders(ctx.env, config.headers, config.url, (ref) => connectionHeaderValue(ctx, ref, config.url));
  } catch (err) {
    if (err instanceof EnvRefError || err instanceof ConnectionRefError) throw new AgentError(err.message);
    throw err;
  }
  throwIfStopped(ctx.signal);
  const stream = new AgentStream(new DeltaForwarder(emit));
  // One `agent_endpoint` step of the run's trace when the context is traced (src/shared/run-steps.ts), spanning a streamed answer whole.
  const r = await timedStep(
    ctx,
    "agent_endpoint",
    "agent endpoint",
    () =>
      callStreamingEndpoint(
        ctx.fetch,
        {
          label: "agent endpoint",
          url: config.url,
          method: "POST",
          headers,
          body: {
            thread_id: input.thread_id,
            messages: [{ role: "user", content: input.user_message }],
            input: { user_message: input.user_message, ...(input.attachments?.length ? { attachments: input.attachments } : {}) },
          },
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
    throw new AgentError(r.kind === "malformed" ? "agent endpoint streamed a frame that is not a message_delta or message_final object" : r.message);
  }
  let text: string | null;
  if (r.streamed) {
    // The final frame's text is the answer; without one, the deltas joined are.
    text = toAnswer(stream.final ? stream.final.text : stream.deltas.text);
  } else {
    const parsed = answerSchema.safeParse(r.value);
    if (!parsed.success) throw new AgentError("agent endpoint answered without a text field (string or null)");
    text = toAnswer(parsed.data.text);
    if (text !== null) await emit({ type: "message_delta", text });
  }
  await emit({ type: "message_final", text });
  return text;
}
