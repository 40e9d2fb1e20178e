/**
 * A streamed chat-completions answer (OpenAI's `stream: true`), rebuilt from its chunks as they
 * arrive: `data: {choices: [{delta: {content?, tool_calls?}}]}` events, then `data: [DONE]`.
 * Content goes out at once as `message_delta` chunks; tool calls arrive in pieces keyed by their
 * `index` (the id and name once, the arguments split anywhere) and are put together whole.
 */
import { z } from "zod";
import type { EventVerdict } from "../../outbound/stream";
import type { DeltaForwarder } from "./events";

const toolCallDeltaSchema = z.object({
  index: z.number().int().nonnegative(),
  id: z.string().nullish(),
  function: z.object({ name: z.string().nullish(), arguments: z.string().nullish() }).nullish(),
});

const chunkSchema = z.object({
  // A chunk without choices is possible (a usage report); an error object instead of a chunk is not.
  choices: z.array(
    z.object({
      index: z.number().int().nonnegative().optional(),
      delta: z.object({ content: z.string().nullish(), tool_calls: z.array(toolCallDeltaSchema).nullish() }).nullish(),
    }),
  ),
});

/** One whole tool call, as the model's assistant message carries it. */
export type ChatToolCall = {
  id: string;
  type?: "function";
  function: { name: string; arguments: string };
};

/** The assistant message a streamed answer adds up to. */
export interface ChatMessage {
  content: string | null;
  tool_calls: ChatToolCall[];
}

export class ChatStream {
  private readonly calls = new Map<number, { id: string; name: string; arguments: string }>();
  private sawContent = false;

  /** `deltas` forwards the content and keeps all of it. */
  constructor(private readonly deltas: DeltaForwarder) {}

  /** Takes one event's data (the `onEvent` of callStreamingEndpoint). */
  async take(data: string): Promise<EventVerdict> {
    if (data.trim() === "[DONE]") return "done";
    let raw: unknown;
    try {
      raw = JSON.parse(data);
    } catch {
      return "malformed";
    }
    const chunk = chunkSchema.safeParse(raw);
    if (!chunk.success) return "malformed";
    // Only the first choice is the answer (the request never asks for more than one).
    for (const choice of chunk.data.choices) {
      if ((choice.index ?? 0) !== 0 || !choice.delta) continue;
      for (const d of choice.delta.tool_calls ?? []) {
        const call = this.calls.get(d.index) ?? { id: "", name: "", arguments: "" };
        if (d.id) call.id = d.id;
        if (d.function?.name) call.name = d.function.name;
        call.arguments += d.function?.arguments ?? "";
        this.calls.set(d.index, call);
      }
      const content = choice.delta.content;
      if (typeof content === "string") {
        this.sawContent = true;
        await this.deltas.push(content);
      }
    }
    return "more";
  }

  /** The whole message once the stream ended; null when a tool call came without its id or name. */
  message(): ChatMessage | null {
    const tool_calls: ChatToolCall[] = [];
    for (const index of [...this.calls.keys()].sort((a, b) => a - b)) {
      const c = this.calls.get(index);
      if (!c?.id || !c.name) return null;
      tool_calls.push({ id: c.id, type: "function", function: { name: c.name, arguments: c.arguments } });
    }
    return { content: this.sawContent ? this.deltas.text : null, tool_calls };
  }
}
