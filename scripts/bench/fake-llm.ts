/**
 * A local OpenAI-compatible chat-completions endpoint whose answers a test scripts as a function of
 * the request (the messages so far), for agents that call tools and read their results. Every
 * request body is kept.
 *
 * By default every answer is one JSON body, whatever the request asks (as many OpenAI-compatible
 * servers do). With `stream` set, a request with `stream: true` is answered as a slow event stream:
 * the content cut into `chunks` pieces with `delayMs` before each, each tool call in two pieces
 * (its arguments split), then `data: [DONE]`; a browser test can watch a reply being typed.
 */
import { type Server, type ServerResponse, createServer } from "node:http";

/** How a streamed answer is paced. */
export interface FakeLlmStream {
  /** Pieces the answer's content is cut into (at least 1; fewer when the content is shorter). */
  chunks: number;
  /** Pause before each piece, in milliseconds. */
  delayMs: number;
}

export interface FakeLlm {
  /** The base URL an llm agent declares (`{url}/chat/completions` is answered). */
  url: string;
  calls: any[];
  /** Streams the answers to stream requests while set; null answers JSON. May change between requests. */
  stream: FakeLlmStream | null;
  /** How long a JSON answer waits before it is sent (0 by default), so a run can match a stream's length. */
  jsonDelayMs: number;
  close: () => Promise<void>;
}

/** The assistant message for one request: `{content}` or `{content: null, tool_calls}`. */
export type LlmScript = (body: {
  messages: Array<{ role: string; content: string | null; tool_call_id?: string; name?: string }>;
  tools?: unknown[];
  stream?: boolean;
}) => Record<string, unknown>;

/** Cuts `text` into at most `n` pieces of about equal length, never inside a character. */
function pieces(text: string, n: number): string[] {
  const chars = Array.from(text);
  const size = Math.max(1, Math.ceil(chars.length / Math.max(1, n)));
  const out: string[] = [];
  for (let at = 0; at < chars.length; at += size) out.push(chars.slice(at, at + size).join(""));
  return out;
}

/** The chunk events of one streamed answer, in order. */
function chunkEvents(message: Record<string, unknown>, chunks: number): unknown[] {
  const chunk = (delta: Record<string, unknown>, finish: string | null = null) => ({
    id: "x",
    object: "chat.completion.chunk",
    choices: [{ index: 0, delta, finish_reason: finish }],
  });
  const events: unknown[] = [chunk({ role: "assistant" })];
  if (typeof message.content === "string") for (const p of pieces(message.content, chunks)) events.push(chunk({ content: p }));
  const calls = Array.isArray(message.tool_calls) ? (message.tool_calls as Array<{ id: string; function: { name: string; arguments: string } }>) : [];
  calls.forEach((c, index) => {
    const args = c.function.arguments;
    const half = Math.floor(args.length / 2);
    events.push(chunk({ tool_calls: [{ index, id: c.id, type: "function", function: { name: c.function.name, arguments: args.slice(0, half) } }] }));
    events.push(chunk({ tool_calls: [{ index, function: { arguments: args.slice(half) } }] }));
  });
  events.push(chunk({}, calls.length ? "tool_calls" : "stop"));
  return events;
}

/** Writes `events` as a slow event stream; stops when the client goes away. */
function streamAnswer(res: ServerResponse, events: unknown[], delayMs: number, open: Set<ServerResponse>): void {
  open.add(res);
  res.on("close", () => open.delete(res));
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache" });
  let gone = false;
  let timer: ReturnType<typeof setTimeout> | undefined;
  res.on("close", () => {
    gone = true;
    if (timer) clearTimeout(timer);
  });
  const lines = [...events.map((e) => `data: ${JSON.stringify(e)}\n\n`), "data: [DONE]\n\n"];
  const next = (i: number) => {
    if (gone) return;
    if (i >= lines.length) return void res.end();
    res.write(lines[i]);
    timer = setTimeout(() => next(i + 1), delayMs);
  };
  timer = setTimeout(() => next(0), delayMs);
}

export async function startFakeLlm(script: LlmScript, opts: { stream?: FakeLlmStream } = {}): Promise<FakeLlm> {
  const calls: any[] = [];
  const streaming = new Set<ServerResponse>();
  const fake: FakeLlm = { url: "", calls, stream: opts.stream ?? null, jsonDelayMs: 0, close: async () => undefined };
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      let message: Record<string, unknown>;
      let wantsStream = false;
      try {
        const body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
        calls.push(body);
        wantsStream = body.stream === true;
        message = script(body);
      } catch (err) {
        res.writeHead(500, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: String(err) }));
        return;
      }
      const pace = fake.stream;
      if (pace && wantsStream) return streamAnswer(res, chunkEvents(message, pace.chunks), pace.delayMs, streaming);
      const answer = () => {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(
          JSON.stringify({ id: "x", object: "chat.completion", choices: [{ index: 0, finish_reason: "stop", message: { role: "assistant", ...message } }] }),
        );
      };
      if (fake.jsonDelayMs > 0) setTimeout(answer, fake.jsonDelayMs);
      else answer();
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const a = server.address();
  fake.url = `http://127.0.0.1:${typeof a === "object" && a ? a.port : 0}/v1`;
  fake.close = () =>
    new Promise<void>((resolve) => {
      // A stream still pacing would hold the server open.
      for (const res of streaming) res.destroy();
      server.close(() => resolve());
    });
  return fake;
}

/** One tool call of an assistant message. */
export function toolCall(id: string, name: string, args: unknown) {
  return { id, type: "function", function: { name, arguments: JSON.stringify(args) } };
}
