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
