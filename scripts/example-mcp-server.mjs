#!/usr/bin/env node
/**
 * A tiny MCP server for trying MCP tool sources on your own machine (docs/mcp.md) and for the
 * end-to-end test (test/e2e/mcp.e2e.test.ts). Built with the same SDK the bridge uses: McpServer
 * and the Streamable HTTP transport, stateless (a fresh server per request) with JSON answers.
 *
 *   node scripts/example-mcp-server.mjs                 # http://127.0.0.1:8790/mcp
 *   node scripts/example-mcp-server.mjs --port 9000
 *   node scripts/example-mcp-server.mjs --token s3cret  # requires "authorization: Bearer s3cret"
 *
 * Tools: add {a, b} → the sum as text; shout {text} → the text upper-cased; weather {city} →
 * structured {city, temp_c}. It prints one line, `listening <url>`, once it accepts requests.
 */
import { createServer } from "node:http";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { z } from "zod";

function arg(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i > 0 && process.argv[i + 1] ? process.argv[i + 1] : fallback;
}

const port = Number(arg("port", process.env.EXAMPLE_MCP_PORT ?? "8790"));
const token = arg("token", process.env.EXAMPLE_MCP_TOKEN ?? "");

function buildServer() {
  const server = new McpServer({ name: "example-mcp-server", version: "1.0.0" });
  server.registerTool("add", { description: "Adds two numbers", inputSchema: { a: z.number(), b: z.number() } }, async ({ a, b }) => ({
    content: [{ type: "text", text: String(a + b) }],
  }));
  server.registerTool("shout", { description: "Upper-cases a text", inputSchema: { text: z.string() } }, async ({ text }) => ({
    content: [{ type: "text", text: text.toUpperCase() }],
  }));
  server.registerTool(
    "weather",
    { description: "Today's (made-up) weather for a city", inputSchema: { city: z.string() }, outputSchema: { city: z.string(), temp_c: z.number() } },
    async ({ city }) => ({ content: [{ type: "text", text: `${city}: 21°C` }], structuredContent: { city, temp_c: 21 } }),
  );
  return server;
}

const http = createServer(async (req, res) => {
  if (new URL(req.url ?? "/", "http://x").pathname !== "/mcp") {
    res.writeHead(404, { "content-type": "application/json" }).end('{"error":"not found"}');
    return;
  }
  if (token && req.headers.authorization !== `Bearer ${token}`) {
    res.writeHead(401, { "content-type": "application/json" }).end('{"error":"unauthorized"}');
    return;
  }
  const server = buildServer();
  const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  res.on("close", () => {
    transport.close();
    server.close();
  });
  try {
    await server.connect(transport);
    await transport.handleRequest(req, res);
  } catch (err) {
    console.error("example-mcp-server: request failed:", err);
    if (!res.headersSent) res.writeHead(500, { "content-type": "application/json" }).end('{"error":"internal"}');
  }
});

http.listen(port, "127.0.0.1", () => {
  console.log(`listening http://127.0.0.1:${http.address().port}/mcp`);
});

for (const signal of ["SIGINT", "SIGTERM"]) process.on(signal, () => http.close(() => process.exit(0)));
