/**
 * A tiny HTTP tool endpoint on 127.0.0.1 for end-to-end tests: it receives the kwargs the bridge
 * POSTs, records them, and answers with whatever `respond` returns as JSON (by default a string
 * that proves the tool, not the bridge, produced it).
 */
import { createServer, type Server } from "node:http";

export interface ToolCall {
  method: string;
  path: string;
  kwargs: any;
}

export interface ToolServer {
  /** `http://127.0.0.1:<port>/tool` */
  url: string;
  readonly calls: ToolCall[];
  stop: () => Promise<void>;
}

/** The default transform: `tool:` + the upper-cased message. */
export function shout(kwargs: any): unknown {
  return `tool:${String(kwargs?.message ?? "").toUpperCase()}`;
}

export async function startToolServer(respond: (kwargs: any) => unknown = shout): Promise<ToolServer> {
  const calls: ToolCall[] = [];
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", () => {
      let kwargs: unknown = null;
      try {
        kwargs = JSON.parse(Buffer.concat(chunks).toString("utf8"));
      } catch {
        res.writeHead(400, { "content-type": "application/json" }).end('{"error":"not JSON"}');
        return;
      }
      calls.push({ method: req.method ?? "", path: req.url ?? "", kwargs });
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify(respond(kwargs) ?? null));
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => resolve());
  });
  const a = server.address();
  const port = a && typeof a === "object" ? a.port : 0;
  return {
    url: `http://127.0.0.1:${port}/tool`,
    calls,
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
