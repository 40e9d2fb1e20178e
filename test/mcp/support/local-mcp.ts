/**
 * A local MCP server built with the same SDK (`McpServer` + the web-standard Streamable HTTP
 * transport, stateless, JSON answers), answered at the network edge (test/helpers/network.ts) for
 * requests to its host. Its tools cover each result shape the bridge maps.
 */
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { CfWorkerJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/cfworker";
import { z } from "zod";
import { fakeNetwork, type NetCall } from "../../helpers/network";

export interface LocalMcpOptions {
  /** Extra tools registered besides the standard ones. */
  extra?: (server: McpServer) => void;
  /** Answer every request with this instead (a broken or refusing server). */
  override?: (req: Request) => Response | Promise<Response> | null;
}

/** The standard tools of the local server. */
export function standardTools(server: McpServer): void {
  server.registerTool("add", { description: "Adds two numbers", inputSchema: { a: z.number(), b: z.number() } }, async ({ a, b }) => ({
    content: [{ type: "text", text: String(a + b) }],
  }));
  server.registerTool("shout", { description: "Upper-cases a text", inputSchema: { text: z.string() } }, async ({ text }) => ({
    content: [{ type: "text", text: text.toUpperCase() }],
  }));
  server.registerTool(
    "weather",
    { description: "Structured weather", inputSchema: { city: z.string() }, outputSchema: { city: z.string(), temp_c: z.number() } },
    async ({ city }) => ({ content: [{ type: "text", text: `${city}: 21C` }], structuredContent: { city, temp_c: 21 } }),
  );
  server.registerTool("fails", { description: "Always an error result", inputSchema: { why: z.string().optional() } }, async () => ({
    isError: true,
    content: [{ type: "text", text: "SERVER_SIDE_DETAIL that must not leak" }],
  }));
  server.registerTool("picture", { description: "An image", inputSchema: {} }, async () => ({
    content: [{ type: "image", data: "aGk=", mimeType: "image/png" }],
  }));
  server.registerTool("slow", { description: "Never answers in time", inputSchema: {} }, async () => {
    await new Promise((r) => setTimeout(r, 5_000));
    return { content: [{ type: "text", text: "late" }] };
  });
}

/** Answers one request as the local server (stateless: a fresh server and transport each time). */
export async function serveLocalMcp(req: Request, opts: LocalMcpOptions = {}): Promise<Response> {
  const server = new McpServer({ name: "local-test-server", version: "1.2.3" }, { jsonSchemaValidator: new CfWorkerJsonSchemaValidator() });
  standardTools(server);
  opts.extra?.(server);
  const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  await server.connect(transport);
  return transport.handleRequest(req);
}

export const MCP_HOST = "mcp.example.com";
export const MCP_URL = `https://${MCP_HOST}/mcp`;

/**
 * Puts the local server at MCP_URL's host on the fake network (other hosts: `others`, else a
 * failed fetch). Answers the recorded calls.
 */
export function localMcpNetwork(opts: LocalMcpOptions & { others?: (req: Request) => Response | Promise<Response> } = {}): NetCall[] {
  return fakeNetwork(async (req) => {
    if (new URL(req.url).host === MCP_HOST) {
      const over = opts.override?.(req);
      if (over) return over;
      return serveLocalMcp(req, opts);
    }
    if (opts.others) return opts.others(req);
    throw new Error(`unexpected outbound request: ${req.method} ${req.url}`);
  });
}
