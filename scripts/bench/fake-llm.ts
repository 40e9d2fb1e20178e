/**
 * A local OpenAI-compatible chat-completions endpoint whose answers a test scripts as a function of
 * the request (the messages so far), for agents that call tools and read their results. Every
 * request body is kept.
 */
import { type Server, createServer } from "node:http";

export interface FakeLlm {
  /** The base URL an llm agent declares (`{url}/chat/completions` is answered). */
  url: string;
  calls: any[];
  close: () => Promise<void>;
}

/** The assistant message for one request: `{content}` or `{content: null, tool_calls}`. */
export type LlmScript = (body: {
  messages: Array<{ role: string; content: string | null; tool_call_id?: string; name?: string }>;
  tools?: unknown[];
}) => Record<string, unknown>;

export async function startFakeLlm(script: LlmScript): Promise<FakeLlm> {
  const calls: any[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      let message: Record<string, unknown>;
      try {
        const body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
        calls.push(body);
        message = script(body);
      } catch (err) {
        res.writeHead(500, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: String(err) }));
        return;
      }
      res.writeHead(200, { "content-type": "application/json" });
      res.end(
        JSON.stringify({ id: "x", object: "chat.completion", choices: [{ index: 0, finish_reason: "stop", message: { role: "assistant", ...message } }] }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const a = server.address();
  return {
    url: `http://127.0.0.1:${typeof a === "object" && a ? a.port : 0}/v1`,
    calls,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

/** One tool call of an assistant message. */
export function toolCall(id: string, name: string, args: unknown) {
  return { id, type: "function", function: { name, arguments: JSON.stringify(args) } };
}

/** How the streaming fake answers: `chunks` pieces of text, one every `intervalMs`. */
export interface StreamShape {
  chunks: number;
  intervalMs: number;
  /** Answer one JSON body after the same total time instead of a stream (the comparison run). */
  whole: boolean;
}

/**
 * A local OpenAI-compatible endpoint that answers every request with the same text, as a
 * `text/event-stream` of content deltas paced by `shape` (or, with `shape.whole`, as one JSON body
 * after the same total time). The text is the words `w0 w1 …`, so a reader can tell how much of it
 * has arrived. `shape` is read per request, so one server serves both runs.
 */
export async function startStreamingLlm(shape: StreamShape): Promise<FakeLlm & { text: () => string }> {
  const calls: any[] = [];
  const text = () => Array.from({ length: shape.chunks }, (_, i) => `w${i}`).join(" ");
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      calls.push(JSON.parse(Buffer.concat(chunks).toString("utf8") || "{}"));
      const words = text().split(" ");
      if (shape.whole) {
        setTimeout(() => {
          res.writeHead(200, { "content-type": "application/json" });
          res.end(
            JSON.stringify({
              id: "x",
              object: "chat.completion",
              choices: [{ index: 0, finish_reason: "stop", message: { role: "assistant", content: text() } }],
            }),
          );
        }, shape.chunks * shape.intervalMs);
        return;
      }
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
      let i = 0;
      const next = () => {
        if (i === words.length) {
          res.write(`data: ${JSON.stringify({ id: "x", object: "chat.completion.chunk", choices: [{ index: 0, delta: {}, finish_reason: "stop" }] })}\n\n`);
          res.end("data: [DONE]\n\n");
          return;
        }
        const content = i === 0 ? words[0] : ` ${words[i]}`;
        res.write(
          `data: ${JSON.stringify({ id: "x", object: "chat.completion.chunk", choices: [{ index: 0, delta: { content }, finish_reason: null }] })}\n\n`,
        );
        i++;
        setTimeout(next, shape.intervalMs);
      };
      next();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const a = server.address();
  return {
    url: `http://127.0.0.1:${typeof a === "object" && a ? a.port : 0}/v1`,
    calls,
    text,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
