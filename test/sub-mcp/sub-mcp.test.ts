/**
 * Sub-MCP endpoints (docs/mcp.md "Sub-MCP endpoints"): an app serves a chosen subset of
 * the registry as an MCP server; the SDK's own client lists and calls exactly those tools, each
 * call authorized as the calling key and run through the dispatcher.
 */
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CfWorkerJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/cfworker";
import { describe, expect, it } from "vitest";
import { fakeNetwork } from "../helpers/network";
import { BASE, admin, call, mintKey, uniq, dispatch } from "../helpers/http";
import { MCP_URL, localMcpNetwork } from "../mcp/support/local-mcp";

const slug = () => uniq("app").toLowerCase();

async function createApp(body: Record<string, unknown>, key?: string) {
  return call("POST", "/api/sub-mcp", { key: key ?? (await admin()), body });
}

/** An SDK client connected to the app's endpoint with `key` (Bearer when asked). */
async function connect(appSlug: string, key: string, bearer = false): Promise<Client> {
  const transport = new StreamableHTTPClientTransport(new URL(`${BASE}/api/sub-mcp/${appSlug}/mcp`), {
    fetch: (input, init) => dispatch(input as string, init),
    requestInit: { headers: bearer ? { authorization: `Bearer ${key}` } : { "x-api-key": key } },
  });
  const client = new Client({ name: "sub-mcp-test", version: "1" }, { jsonSchemaValidator: new CfWorkerJsonSchemaValidator() });
  await client.connect(transport);
  return client;
}

describe("sub-MCP apps", () => {
  it("creates, lists and removes an app; its tools must be registered", async () => {
    const s = slug();
    const r = await createApp({ slug: s, tools: ["echo"] });
    expect(r.status).toBe(200);
    expect(r.body.data).toEqual({
      created: true,
      app: { slug: s, tools: ["echo"], transport: "http", path: `/api/sub-mcp/${s}/mcp`, created_at: expect.any(String), updated_at: expect.any(String) },
    });
    const again = await createApp({ slug: s, tools: ["echo", "set_conversation_mode"] });
    expect(again.body.data.created).toBe(false);
    const list = await call("GET", "/api/sub-mcp", { key: await admin() });
    expect(list.body.data.items.find((a: any) => a.slug === s).tools).toEqual(["echo", "set_conversation_mode"]);

    const unknown = await createApp({ slug: slug(), tools: ["echo", "no_such_tool"] });
    expect(unknown.status).toBe(400);
    expect(unknown.body.error).toContain("tools[1]");
    expect((await createApp({ slug: "Bad Slug", tools: ["echo"] })).status).toBe(400);
    expect((await createApp({ slug: slug(), tools: ["echo"], transport: "sse" })).status).toBe(400);

    const del = await call("DELETE", `/api/sub-mcp/${s}`, { key: await admin() });
    expect(del.body).toEqual({ data: { removed: true, slug: s } });
    expect((await call("DELETE", `/api/sub-mcp/${s}`, { key: await admin() })).status).toBe(404);
  });

  it("lets an MCP client list and call exactly the app's tools, MCP server tools included", async () => {
    localMcpNetwork();
    const t = uniq("srv").replace(/-/g, "_").slice(0, 30);
    const declared = await call("POST", "/api/mcp-config/entries", { key: await admin(), body: { title: t, config: { type: "http", url: MCP_URL } } });
    expect(declared.body.data.status.status).toBe("ok");
    const s = slug();
    await createApp({ slug: s, tools: ["echo", `${t}.add`, `${t}.weather`] });

    const client = await connect(s, await admin());
    const listed = await client.listTools();
    expect(listed.tools.map((x) => x.name)).toEqual(["echo", `${t}.add`, `${t}.weather`]);
    expect(listed.tools[1].inputSchema).toMatchObject({ type: "object", properties: { a: { type: "number" } } });

    expect(await client.callTool({ name: "echo", arguments: { message: "hi" } })).toMatchObject({ content: [{ type: "text", text: "hi" }] });
    expect(await client.callTool({ name: `${t}.add`, arguments: { a: 4, b: 5 } })).toMatchObject({ content: [{ type: "text", text: "9" }] });
    expect(await client.callTool({ name: `${t}.weather`, arguments: { city: "Porto" } })).toMatchObject({ structuredContent: { city: "Porto", temp_c: 21 } });

    // Outside the app: the same "unknown tool" error as a tool that does not exist.
    await expect(client.callTool({ name: `${t}.shout`, arguments: { text: "x" } })).rejects.toThrow(/unknown tool/);
    await expect(client.callTool({ name: "no_such", arguments: {} })).rejects.toThrow(/unknown tool/);
    // Bad kwargs: a tool error result the client can read (locations, never values).
    const bad = await client.callTool({ name: `${t}.add`, arguments: { a: "SECRET-VALUE" } });
    expect(bad.isError).toBe(true);
    expect(JSON.stringify(bad.content)).toContain("/a: type");
    expect(JSON.stringify(bad.content)).not.toContain("SECRET-VALUE");
    await client.close();
  });

  it("lists only the tools the caller may run and refuses a call beyond its grants", async () => {
    const s = slug();
    await createApp({ slug: s, tools: ["echo", "set_conversation_mode"] });
    const narrow = await mintKey({ scopes: ["tool:echo"] });
    const client = await connect(s, narrow.key, true);
    expect((await client.listTools()).tools.map((x) => x.name)).toEqual(["echo"]);
    expect(await client.callTool({ name: "echo", arguments: { message: "ok" } })).toMatchObject({ content: [{ type: "text", text: "ok" }] });
    await expect(client.callTool({ name: "set_conversation_mode", arguments: { mode: "manual" } })).rejects.toThrow(/unknown tool/);
    await client.close();

    const off = await mintKey({ scopes: ["tool:echo"], condition: "false" });
    const denied = await connect(s, off.key);
    expect((await denied.listTools()).tools).toEqual([]);
    await expect(denied.callTool({ name: "echo", arguments: { message: "x" } })).rejects.toThrow(/unknown tool/);
    await denied.close();
  });

  it("scopes the cache extension to the calling key: a caller never gets another key's cached result", async () => {
    const tool = uniq("tool");
    const declared = await call("POST", "/api/tools-config/entries", {
      key: await admin(),
      body: { title: tool, kind: "http", url: "https://tools.example/secret-lookup" },
    });
    expect(declared.status).toBe(200);
    expect(
      (await call("POST", `/api/tools/${tool}/extensions`, { key: await admin(), body: { combos: [[{ name: "cache", config: { ttl_seconds: 60 } }]] } }))
        .status,
    ).toBe(200);
    let n = 0;
    fakeNetwork(() => new Response(JSON.stringify({ answer_for_call: ++n }), { headers: { "content-type": "application/json" } }));
    const s = slug();
    await createApp({ slug: s, tools: [tool] });
    const first = await mintKey({ scopes: [`tool:${tool}`] });
    const second = await mintKey({ scopes: [`tool:${tool}`] });

    const a = await connect(s, first.key);
    expect(await a.callTool({ name: tool, arguments: { q: "same" } })).toMatchObject({ structuredContent: { answer_for_call: 1 } });
    // The same key, the same call: answered from the cache.
    expect(await a.callTool({ name: tool, arguments: { q: "same" } })).toMatchObject({ structuredContent: { answer_for_call: 1 } });
    await a.close();
    // Another key, the same call: its own call, not the first key's result.
    const b = await connect(s, second.key);
    expect(await b.callTool({ name: tool, arguments: { q: "same" } })).toMatchObject({ structuredContent: { answer_for_call: 2 } });
    expect(await b.callTool({ name: tool, arguments: { q: "same" } })).toMatchObject({ structuredContent: { answer_for_call: 2 } });
    await b.close();
    expect(n).toBe(2);
  });

  it("needs a valid key (401), an existing app (404) and answers GET with 405", async () => {
    const s = slug();
    await createApp({ slug: s, tools: ["echo"] });
    const init = {
      jsonrpc: "2.0",
      id: 1,
      method: "initialize",
      params: { protocolVersion: "2025-06-18", capabilities: {}, clientInfo: { name: "x", version: "1" } },
    };
    const headers = { accept: "application/json, text/event-stream" };
    expect((await call("POST", `/api/sub-mcp/${s}/mcp`, { body: init, headers })).status).toBe(401);
    expect((await call("POST", `/api/sub-mcp/${s}/mcp`, { key: `sk-${"A".repeat(43)}`, body: init, headers })).status).toBe(401);
    const missing = await call("POST", "/api/sub-mcp/nope/mcp", { key: await admin(), body: init, headers });
    expect(missing.status).toBe(404);
    const ok = await call("POST", `/api/sub-mcp/${s}/mcp`, { key: await admin(), body: init, headers });
    expect(ok.status).toBe(200);
    expect(ok.body).toMatchObject({ jsonrpc: "2.0", id: 1, result: { serverInfo: { name: `sub-mcp:${s}` }, capabilities: { tools: {} } } });
    expect((await call("GET", `/api/sub-mcp/${s}/mcp`, { key: await admin() })).status).toBe(405);
    // A malformed message is the transport's JSON-RPC error, without any detail of ours.
    const junk = await call("POST", `/api/sub-mcp/${s}/mcp`, {
      key: await admin(),
      rawBody: "{not json",
      headers: { ...headers, "content-type": "application/json" },
    });
    expect(junk.status).toBe(400);
    expect(junk.body).toEqual({ jsonrpc: "2.0", error: { code: -32700, message: "Parse error: Invalid JSON" }, id: null });
  });

  it("needs tools:write to create or remove an app, tools:read to list", async () => {
    const reader = await mintKey({ scopes: ["tools:read"] });
    expect((await call("GET", "/api/sub-mcp", { key: reader.key })).status).toBe(200);
    expect((await createApp({ slug: slug(), tools: ["echo"] }, reader.key)).status).toBe(403);
  });
});
