/**
 * MCP end to end: the shipped example MCP server (a real SDK server on 127.0.0.1) is
 * declared as a tool source of a real `wrangler dev`; a route whose target is one of its tools
 * answers through it under the route's execution key; a sub-MCP endpoint is listed and called by
 * the SDK's own MCP client; the manifest shows the declaration with its secret as a reference.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { http } from "./harness";
import { type ExampleMcpServer, startExampleMcpServer } from "./support/mcp-server";
import { sharedDev } from "./support/shared-dev";

const TOKEN = "example-mcp-token-value";

let mcp: ExampleMcpServer;
let base: string;
let admin: string;

beforeAll(async () => {
  mcp = await startExampleMcpServer({ token: TOKEN });
  ({ baseUrl: base, adminKey: admin } = await sharedDev());
});

afterAll(async () => {
  await mcp?.stop();
});

describe("MCP servers and sub-MCP endpoints against a real wrangler dev", () => {
  it("declares the example server with a stored secret header and registers its tools", async () => {
    // Written before the server is declared, so it names the server it may be sent to.
    const secret = await http(base, "POST", "/api/mcp-config/secret-env", {
      key: admin,
      body: { name: "SECRET_EXAMPLE_MCP", value: `Bearer ${TOKEN}`, origins: [mcp.url] },
    });
    expect(secret.body.data).toMatchObject({ name: "SECRET_EXAMPLE_MCP", set: true });
    const declared = await http(base, "POST", "/api/mcp-config/entries", {
      key: admin,
      body: { title: "example", config: { type: "http", url: mcp.url, headers: { authorization: { env: "SECRET_EXAMPLE_MCP" } } } },
    });
    expect(declared.status).toBe(200);
    expect(declared.body.data.status).toMatchObject({
      status: "ok",
      tools: ["example.add", "example.shout", "example.weather"],
      server: { name: "example-mcp-server" },
    });
    const tools = await http(base, "GET", "/api/tools", { key: admin });
    expect(tools.body.data).toEqual(expect.arrayContaining(["example.add", "example.shout", "example.weather"]));
    const ran = await http(base, "POST", "/api/run-tool", { key: admin, body: { tool_name: "example.weather", arguments: { city: "Lisbon" } } });
    expect(ran.body).toEqual({ data: { city: "Lisbon", temp_c: 21 } });
  });

  it("answers a route whose target is an MCP tool, as the route's execution key", async () => {
    const key = await http(base, "POST", "/api/auth/api-keys", {
      key: admin,
      body: { user_id: "shouter", description: "runs example.shout", scopes: ["tool:example.shout"] },
    });
    expect(key.status).toBe(200);
    const route = await http(base, "POST", "/api/conversations/shouting", {
      key: admin,
      body: { door: "api", target_kind: "tool", target_name: "example.shout", execution_key: "shouter", payload_expr: "{text: .message}" },
    });
    expect(route.status).toBe(200);
    const sent = await http(base, "POST", "/api/conversations/shouting/messages", {
      key: admin,
      body: { external_user_id: "ada", text: "hello mcp", wait_seconds: 20 },
    });
    expect(sent.status).toBe(200);
    expect(sent.body.data).toMatchObject({ status: "answered", answer: "HELLO MCP" });

    // The same route bound to a key without the grant is refused at the turn.
    await http(base, "POST", "/api/auth/api-keys", {
      key: admin,
      body: { user_id: "adder", description: "runs example.add only", scopes: ["tool:example.add"] },
    });
    await http(base, "POST", "/api/conversations/not-allowed", {
      key: admin,
      body: { door: "api", target_kind: "tool", target_name: "example.shout", execution_key: "adder", payload_expr: "{text: .message}" },
    });
    const refused = await http(base, "POST", "/api/conversations/not-allowed/messages", {
      key: admin,
      body: { external_user_id: "ada", text: "hi", wait_seconds: 20 },
    });
    expect(refused.body.data.status).toBe("error");
  });

  it("serves a sub-MCP endpoint that an MCP client lists and calls", async () => {
    const app = await http(base, "POST", "/api/sub-mcp", { key: admin, body: { slug: "math", tools: ["example.add", "echo"] } });
    expect(app.body.data.app).toMatchObject({ slug: "math", path: "/api/sub-mcp/math/mcp", transport: "http" });
    const caller = await http(base, "POST", "/api/auth/api-keys", {
      key: admin,
      body: { user_id: "mcp-client", description: "sub-MCP caller", scopes: ["tool:example.add", "tool:echo"] },
    });
    const transport = new StreamableHTTPClientTransport(new URL(`${base}/api/sub-mcp/math/mcp`), {
      requestInit: { headers: { authorization: `Bearer ${caller.body.data.api_key}` } },
    });
    const client = new Client({ name: "e2e-client", version: "1.0.0" });
    await client.connect(transport);
    const listed = await client.listTools();
    expect(listed.tools.map((t) => t.name)).toEqual(["example.add", "echo"]);
    const sum = await client.callTool({ name: "example.add", arguments: { a: 20, b: 22 } });
    expect(sum.content).toEqual([{ type: "text", text: "42" }]);
    await expect(client.callTool({ name: "example.shout", arguments: { text: "x" } })).rejects.toThrow(/unknown tool/);
    await client.close();
  });

  it("shows the declaration in the manifest, its secret as a reference only", async () => {
    const m = await http(base, "GET", "/api/manifest", { key: admin });
    expect(m.body.data.mcp).toEqual([
      {
        title: "example",
        description: "",
        config: { type: "http", url: mcp.url, headers: { authorization: { env: "SECRET_EXAMPLE_MCP" } } },
        include: [],
        exclude: [],
        timeout_seconds: 30,
      },
    ]);
    const refs = await http(base, "GET", "/api/manifest/mcp-env-refs", { key: admin });
    expect(refs.body.data.items).toEqual([
      { name: "SECRET_EXAMPLE_MCP", referenced_by: ["mcp.example.config.headers.authorization"], env_set: false, secret_env_set: true },
    ]);
    expect(JSON.stringify([m.body, refs.body])).not.toContain(TOKEN);
  });
});
