/**
 * A local OpenAI-compatible chat-completions endpoint that writes its answer slowly, for the live
 * turn tests: a request with `stream: true` gets the answer as server-sent chunks, one word every
 * `every` ms, then `[DONE]`; any other request gets the whole answer as one JSON body after the
 * same total time. What it answers is a function of the last user message. Each request is kept
 * with whether it finished and whether the caller went away before the end (a stopped turn).
 */
import { type Server, createServer } from "node:http";

export interface SlowCall {
  user: string;
  stream: boolean;
  /** Words written so far. */
  written: number;
  finished: boolean;
  /** The client closed the connection before the answer was whole. */
  aborted: boolean;
}

export interface SlowLlm {
  /** The base URL an llm agent declares (`{url}/chat/completions` is answered). */
  url: string;
  calls: SlowCall[];
  close: () => Promise<void>;
}

/** The answer to the last user message: its words, and the pause before each. */
export type SlowScript = (user: string) => { words: string[]; every: number };

function lastUser(body: unknown): string {
  const messages =
    body && typeof body === "object" && Array.isArray((body as { messages?: unknown }).messages) ? (body as { messages: unknown[] }).messages : [];
  for (let i = messages.length - 1; i >= 0; i--) {
    const m = messages[i] as { role?: unknown; content?: unknown };
    if (m?.role === "user" && typeof m.content === "string") return m.content;
  }
  return "";
}

/** The text `words` make once joined: what the stream's chunks add up to. */
export const joined = (words: string[]): string => words.join(" ");

export async function startSlowLlm(script: SlowScript): Promise<SlowLlm> {
  const calls: SlowCall[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      let body: Record<string, unknown>;
      try {
        body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
      } catch {
        res.writeHead(400, { "content-type": "application/json" });
        res.end(JSON.stringify({ error: { message: "not JSON" } }));
        return;
      }
      const call: SlowCall = { user: lastUser(body), stream: body.stream === true, written: 0, finished: false, aborted: false };
      calls.push(call);
      const { words, every } = script(call.user);
      let timer: NodeJS.Timeout | undefined;
      res.on("close", () => {
        clearTimeout(timer);
        if (!call.finished) call.aborted = true;
      });
      if (!call.stream) {
        timer = setTimeout(() => {
          call.written = words.length;
          call.finished = true;
          res.writeHead(200, { "content-type": "application/json" });
          res.end(
            JSON.stringify({
              id: "slow",
              object: "chat.completion",
              choices: [{ index: 0, finish_reason: "stop", message: { role: "assistant", content: joined(words) } }],
            }),
          );
        }, every * words.length);
        return;
      }
      res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-cache", connection: "keep-alive" });
      const chunk = (delta: Record<string, unknown>, finish: string | null) =>
        `data: ${JSON.stringify({ id: "slow", object: "chat.completion.chunk", choices: [{ index: 0, delta, finish_reason: finish }] })}\n\n`;
      res.write(chunk({ role: "assistant", content: "" }, null));
      const next = () => {
        if (call.written === words.length) {
          call.finished = true;
          res.end(`${chunk({}, "stop")}data: [DONE]\n\n`);
          return;
        }
        const word = call.written === 0 ? words[0] : ` ${words[call.written]}`;
        call.written += 1;
        res.write(chunk({ content: word }, null));
        timer = setTimeout(next, every);
      };
      timer = setTimeout(next, every);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const a = server.address();
  return {
    url: `http://127.0.0.1:${typeof a === "object" && a ? a.port : 0}/v1`,
    calls,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
