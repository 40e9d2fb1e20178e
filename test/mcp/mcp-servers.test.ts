/**
 * MCP servers as tool sources (docs/mcp.md): declaring, listing, status, calls through
 * the dispatcher under the execution key, header references, the outbound guard, and the MCP
 * config doors. The server is a real MCP server built with the same SDK, answered at the network
 * edge (test/mcp/support/local-mcp.ts).
 */
import type { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { describe, expect, it } from "vitest";
import { z } from "zod";
import { createRoute, send } from "../helpers/bridge";
import { fakeNetwork } from "../helpers/network";
import { admin, call, mintKey, uniq } from "../helpers/http";
import { MCP_URL, localMcpNetwork } from "./support/local-mcp";

const title = () => uniq("srv").replace(/-/g, "_").slice(0, 30);

async function declare(body: Record<string, unknown>) {
  return call("POST", "/api/mcp-config/entries", { key: await admin(), body: { config: { type: "http", url: MCP_URL }, ...body } });
}

describe("declaring an MCP server", () => {
  it("lists its tools at once and registers them as <server>.<tool> with the server's input schemas", async () => {
    localMcpNetwork();
    const t = title();
    const r = await declare({ title: t, description: "the local test server" });
    expect(r.status).toBe(200);
    expect(r.body.data.created).toBe(true);
    expect(r.body.data.status).toMatchObject({ title: t, status: "ok", last_error: null, server: { name: "local-test-server", version: "1.2.3" } });
    expect(r.body.data.status.tools).toEqual([`${t}.add`, `${t}.fails`, `${t}.picture`, `${t}.shout`, `${t}.slow`, `${t}.weather`]);
    expect(r.body.data.server).toMatchObject({ title: t, config: { type: "http", url: MCP_URL, headers: {} }, include: [], exclude: [], timeout_seconds: 30 });

    const names = await call("GET", "/api/tools", { key: await admin() });
    expect(names.body.data).toEqual(expect.arrayContaining([`${t}.add`, `${t}.weather`]));
    const schema = await call("GET", `/api/tools/${t}.add/schema`, { key: await admin() });
    expect(schema.status).toBe(200);
    expect(schema.body.data.description).toBe("Adds two numbers");
    expect(schema.body.data.input).toMatchObject({ type: "object", properties: { a: { type: "number" }, b: { type: "number" } }, required: ["a", "b"] });
    const weather = await call("GET", `/api/tools/${t}.weather/schema`, { key: await admin() });
    expect(weather.body.data.output).toMatchObject({ type: "object", properties: { temp_c: { type: "number" } } });
    const all = await call("GET", "/api/tools-schema", { key: await admin() });
    expect(all.body.data[`${t}.shout`].input.properties.text).toEqual({ type: "string" });
  });

  it("registers only what include/exclude admit; a name in both lists is 400", async () => {
    localMcpNetwork();
    const t = title();
    const r = await declare({ title: t, include: ["add", "shout"] });
    expect(r.body.data.status.tools).toEqual([`${t}.add`, `${t}.shout`]);
    const u = title();
    const ex = await declare({ title: u, exclude: ["fails", "slow", "picture", "weather"] });
    expect(ex.body.data.status.tools).toEqual([`${u}.add`, `${u}.shout`]);
    const both = await declare({ title: title(), include: ["add"], exclude: ["add"] });
    expect(both.status).toBe(400);
    expect(both.body.error).toContain("include");
  });

  it("skips remote tools it cannot register and says why", async () => {
    localMcpNetwork({
      extra: (s: McpServer) => {
        s.registerTool("has.dot", { inputSchema: {} }, async () => ({ content: [] }));
        s.registerTool("backref", { inputSchema: { v: z.string().regex(/^(a)\1$/) } }, async () => ({ content: [] }));
      },
    });
    const t = title();
    const r = await declare({ title: t });
    expect(r.body.data.status.status).toBe("ok");
    expect(r.body.data.status.tools).not.toContain(`${t}.has.dot`);
    expect(r.body.data.status.skipped).toEqual(
      expect.arrayContaining([
        { name: "has.dot", reason: expect.stringContaining("characters") },
        { name: "backref", reason: expect.stringContaining("RE2") },
      ]),
    );
  });

  it("refuses a private or local URL at declaration (400 naming the field, never the URL)", async () => {
    const r = await declare({ title: title(), config: { type: "http", url: "http://127.0.0.1:9/mcp" } });
    expect(r.status).toBe(400);
    expect(r.body.error).toContain("config.url");
    expect(r.body.error).not.toContain("127.0.0.1");
  });

  it("refuses unknown fields, stdio configs and an env reference outside the secret scope", async () => {
    expect((await declare({ title: title(), surprise: 1 })).status).toBe(400);
    const stdio = await call("POST", "/api/mcp-config/entries", { key: await admin(), body: { title: title(), config: { type: "stdio", command: "npx" } } });
    expect(stdio.status).toBe(400);
    const scope = await declare({ title: title(), config: { type: "http", url: MCP_URL, headers: { authorization: { env: "CONVERSATIONS_STORE_URL" } } } });
    expect(scope.status).toBe(400);
    expect(scope.body.error).toContain("config.headers.authorization");
    expect(scope.body.error).not.toContain("CONVERSATIONS_STORE_URL");
  });

  it("is admin-only to declare, and readable with manifest:read", async () => {
    const writer = await mintKey({ scopes: ["manifest:write"] });
    expect((await call("POST", "/api/mcp-config/entries", { key: writer.key, body: { title: title(), config: { type: "http", url: MCP_URL } } })).status).toBe(
      403,
    );
    const reader = await mintKey({ scopes: ["manifest:read"] });
    expect((await call("GET", "/api/mcp-status", { key: reader.key })).status).toBe(200);
  });

  it("keeps a server it cannot list, as failed with a label and status (no server text), and lists it on reload", async () => {
    let down = true;
    localMcpNetwork({ override: () => (down ? new Response("SERVER_SIDE_DETAIL", { status: 503 }) : null) });
    const t = title();
    const r = await declare({ title: t });
    expect(r.status).toBe(200);
    expect(r.body.data.status).toMatchObject({ status: "failed", tools: [], last_error: `MCP server ${t} answered HTTP 503` });
    expect(JSON.stringify(r.body)).not.toContain("SERVER_SIDE_DETAIL");
    const failed = await call("GET", "/api/mcp-status/failed", { key: await admin() });
    expect(failed.body.data.items.map((s: any) => s.title)).toContain(t);

    down = false;
    const again = await call("POST", "/api/mcp-status/reload-failed", { key: await admin() });
    expect(again.status).toBe(200);
    const mine = again.body.data.items.find((s: any) => s.title === t);
    expect(mine).toMatchObject({ status: "ok", last_error: null });
    expect(mine.tools).toContain(`${t}.add`);
    const after = await call("GET", "/api/mcp-status/failed", { key: await admin() });
    expect(after.body.data.items.map((s: any) => s.title)).not.toContain(t);
  });

  it("keeps the last good tools when a reload fails", async () => {
    let down = false;
    localMcpNetwork({ override: () => (down ? new Response("no", { status: 500 }) : null) });
    const t = title();
    await declare({ title: t });
    down = true;
    const r = await call("POST", `/api/mcp-status/${t}/reload`, { key: await admin() });
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ status: "failed", last_error: `MCP server ${t} answered HTTP 500` });
    expect(r.body.data.tools).toContain(`${t}.add`);
  });

  it("deregisters a server's tools until its next reload", async () => {
    localMcpNetwork();
    const t = title();
    await declare({ title: t });
    const d = await call("POST", `/api/mcp-status/${t}/deregister`, { key: await admin() });
    expect(d.status).toBe(200);
    expect(d.body.data).toMatchObject({ status: "deregistered", tools: [] });
    expect((await call("GET", `/api/tools/${t}.add/schema`, { key: await admin() })).status).toBe(404);
    const back = await call("POST", "/api/tools/reload", { key: await admin(), body: { server: t } });
    expect(back.status).toBe(200);
    expect(back.body.data.items[0]).toMatchObject({ title: t, status: "ok" });
    expect((await call("GET", `/api/tools/${t}.add/schema`, { key: await admin() })).status).toBe(200);
    expect((await call("POST", "/api/mcp-status/nosuch/deregister", { key: await admin() })).status).toBe(404);
    expect((await call("POST", "/api/mcp-status/nosuch/reload", { key: await admin() })).status).toBe(404);
    expect((await call("POST", "/api/tools/reload", { key: await admin(), body: { server: "nosuch" } })).status).toBe(404);
  });

  it("removes a server and its tools; an unknown title is 404", async () => {
    localMcpNetwork();
    const t = title();
    await declare({ title: t });
    const r = await call("DELETE", `/api/mcp-config/entries/${t}`, { key: await admin() });
    expect(r.body).toEqual({ data: { removed: true, title: t } });
    expect((await call("GET", `/api/tools/${t}.add/schema`, { key: await admin() })).status).toBe(404);
    expect((await call("DELETE", `/api/mcp-config/entries/${t}`, { key: await admin() })).status).toBe(404);
  });
});

describe("calling an MCP server's tools", () => {
  it("runs tools/call through run-tool and maps text, structured, other content and isError", async () => {
    const calls = localMcpNetwork();
    const t = title();
    await declare({ title: t });
    const k = await admin();
    const add = await call("POST", "/api/run-tool", { key: k, body: { tool_name: `${t}.add`, arguments: { a: 2, b: 3 } } });
    expect(add.body).toEqual({ data: "5" });
    const weather = await call("POST", "/api/run-tool", { key: k, body: { tool_name: `${t}.weather`, arguments: { city: "Lisbon" } } });
    expect(weather.body).toEqual({ data: { city: "Lisbon", temp_c: 21 } });
    const picture = await call("POST", "/api/run-tool", { key: k, body: { tool_name: `${t}.picture`, arguments: {} } });
    expect(picture.body).toEqual({ data: { content: [{ type: "image", data: "aGk=", mimeType: "image/png" }] } });
    const fails = await call("POST", "/api/run-tool", { key: k, body: { tool_name: `${t}.fails`, arguments: {} } });
    expect(fails.status).toBe(500);
    expect(fails.body).toEqual({ error: `MCP tool ${t}.fails answered an error`, code: "tool-error" });
    // Every request reached the server through the edge, as MCP over POST.
    expect(calls.filter((c) => c.method === "POST").some((c) => c.body.includes('"tools/call"'))).toBe(true);
  });

  it("validates kwargs against the server's input schema before calling", async () => {
    const calls = localMcpNetwork();
    const t = title();
    await declare({ title: t });
    const before = calls.length;
    const r = await call("POST", "/api/run-tool", { key: await admin(), body: { tool_name: `${t}.add`, arguments: { a: "SECRET-VALUE" } } });
    expect(r.status).toBe(400);
    expect(r.body.error).toContain("/a: type");
    expect(r.body.error).not.toContain("SECRET-VALUE");
    expect(calls.length).toBe(before);
  });

  it("bounds a call by the server's timeout_seconds", async () => {
    localMcpNetwork();
    const t = title();
    await declare({ title: t, timeout_seconds: 0.3 });
    const r = await call("POST", "/api/run-tool", { key: await admin(), body: { tool_name: `${t}.slow`, arguments: {} } });
    expect(r.status).toBe(500);
    expect(r.body).toEqual({ error: `MCP server ${t} did not answer within 0.3s`, code: "tool-timeout" });
  });

  it("sends literal, secret-env and env-referenced headers, and fails a call whose reference is unset, naming the variable", async () => {
    const calls = localMcpNetwork();
    const t = title();
    // Written before any server references it, so it names where it may go (docs/mcp.md "Secret env values").
    const set = await call("POST", "/api/mcp-config/secret-env", {
      key: await admin(),
      body: { name: "SECRET_MCP_TOKEN", value: "tok-123", origins: [MCP_URL] },
    });
    expect(set.body).toEqual({ data: { name: "SECRET_MCP_TOKEN", set: true, updated_at: expect.any(String) } });
    const r = await declare({
      title: t,
      config: { type: "http", url: MCP_URL, headers: { authorization: { env: "SECRET_MCP_TOKEN" }, "x-static": "lit-value" } },
    });
    expect(r.body.data.status.status).toBe("ok");
    expect(r.body.data.server.config.headers).toEqual({ authorization: { env: "SECRET_MCP_TOKEN" }, "x-static": "<redacted>" });
    const run = await call("POST", "/api/run-tool", { key: await admin(), body: { tool_name: `${t}.add`, arguments: { a: 1, b: 1 } } });
    expect(run.body).toEqual({ data: "2" });
    const sent = calls.filter((c) => c.url === MCP_URL && c.method === "POST");
    expect(sent.length).toBeGreaterThan(0);
    for (const c of sent) expect(c.headers).toMatchObject({ authorization: "tok-123", "x-static": "lit-value" });

    const unset = await call("POST", "/api/mcp-config/secret-env", { key: await admin(), body: { name: "SECRET_MCP_TOKEN", value: null } });
    expect(unset.body.data.set).toBe(false);
    const fail = await call("POST", "/api/run-tool", { key: await admin(), body: { tool_name: `${t}.add`, arguments: { a: 1, b: 1 } } });
    expect(fail.status).toBe(500);
    expect(fail.body.error).toBe("env var SECRET_MCP_TOKEN referenced by the declaration is not set");
  });

  it("refuses a secret env name outside the scope (400) and never shows a value", async () => {
    const r = await call("POST", "/api/mcp-config/secret-env", { key: await admin(), body: { name: "CONVERSATIONS_STORE_URL", value: "x" } });
    expect(r.status).toBe(400);
    const refs = await call("GET", "/api/manifest/mcp-env-refs", { key: await admin() });
    expect(JSON.stringify(refs.body)).not.toContain("tok-123");
  });

  it("applies the outbound guard before each request: a redirect off the origin is not followed", async () => {
    localMcpNetwork({
      override: (req) =>
        req.method === "POST" && new URL(req.url).pathname === "/mcp"
          ? new Response(null, { status: 307, headers: { location: "https://elsewhere.example/mcp" } })
          : null,
    });
    const t = title();
    const r = await declare({ title: t });
    expect(r.body.data.status.status).toBe("failed");
    expect(r.body.data.status.last_error).toBe(`MCP server ${t} answered HTTP 307`);
  });

  it("runs a routed turn under the route's execution key: denied without tool:<server>.<tool>, answered with it", async () => {
    localMcpNetwork();
    const t = title();
    await declare({ title: t });
    const allowed = await mintKey({ scopes: [`tool:${t}.shout`] });
    const route = await createRoute({
      door: "api",
      target_kind: "tool",
      target_name: `${t}.shout`,
      execution_key: allowed.user_id,
      payload_expr: "{text: .message}",
    });
    const ok = await send(route.name, { external_user_id: "u1", text: "hello there", wait_seconds: 10 });
    expect(ok.status).toBe(200);
    expect(ok.body.data).toMatchObject({ status: "answered", answer: "HELLO THERE" });

    const narrow = await mintKey({ scopes: [`tool:${t}.add`] });
    const denied = await createRoute({
      door: "api",
      target_kind: "tool",
      target_name: `${t}.shout`,
      execution_key: narrow.user_id,
      payload_expr: "{text: .message}",
    });
    const no = await send(denied.name, { external_user_id: "u1", text: "hello", wait_seconds: 10 });
    expect(no.body.data.status).toBe("error");
  });

  it("refuses a route to an MCP tool that is not registered (404)", async () => {
    const r = await call("POST", `/api/conversations/${uniq("r").toLowerCase()}`, {
      key: await admin(),
      body: { door: "api", target_kind: "tool", target_name: "nosuchserver.add", execution_key: "root" },
    });
    expect(r.status).toBe(404);
  });
});

describe("the whole MCP config", () => {
  it("replaces the declared servers in one batch, keeps unchanged ones' listings and answers each status", async () => {
    localMcpNetwork();
    const a = title();
    const b = title();
    const c = title();
    await declare({ title: a });
    const bDeclared = await declare({ title: b });
    const r = await call("POST", "/api/mcp-config", {
      key: await admin(),
      body: {
        mcp: [
          { title: b, config: { type: "http", url: MCP_URL } },
          { title: c, config: { type: "http", url: MCP_URL }, include: ["add"] },
        ],
      },
    });
    expect(r.status).toBe(200);
    expect(r.body.data.removed).toContain(a);
    expect(r.body.data.servers.map((s: any) => s.title).sort()).toEqual([b, c].sort());
    expect(r.body.data.status.find((s: any) => s.title === c)).toMatchObject({ status: "ok", tools: [`${c}.add`] });
    // b is identical to its stored declaration: not re-declared (same updated_at), listed again.
    expect(r.body.data.servers.find((s: any) => s.title === b).updated_at).toBe(bDeclared.body.data.server.updated_at);
    expect(r.body.data.status.find((s: any) => s.title === b)).toMatchObject({ status: "ok" });
    const status = await call("GET", "/api/mcp-status", { key: await admin() });
    const titles = status.body.data.items.map((s: any) => s.title);
    expect(titles).not.toContain(a);
    expect(titles).toEqual(expect.arrayContaining([b, c]));
  });

  it("refuses a document with a repeated title or a bad entry and writes nothing", async () => {
    fakeNetwork(() => new Response("unused", { status: 500 }));
    const keep = title();
    await declare({ title: keep });
    const dup = await call("POST", "/api/mcp-config", {
      key: await admin(),
      body: {
        mcp: [
          { title: "x1", config: { type: "http", url: MCP_URL } },
          { title: "x1", config: { type: "http", url: MCP_URL } },
        ],
      },
    });
    expect(dup.status).toBe(400);
    const bad = await call("POST", "/api/mcp-config", {
      key: await admin(),
      body: { mcp: [{ title: "x2", config: { type: "http", url: "http://10.0.0.1/mcp" } }] },
    });
    expect(bad.status).toBe(400);
    expect(bad.body.error).toContain("mcp[0].config.url");
    const status = await call("GET", "/api/mcp-status", { key: await admin() });
    expect(status.body.data.items.map((s: any) => s.title)).toContain(keep);
  });

  it("publishes the JSON Schema of the config and of one entry", async () => {
    const r = await call("GET", "/api/mcp-config/schema", { key: await admin() });
    expect(r.status).toBe(200);
    expect(r.body.data.entry.properties.config.properties.type).toMatchObject({ const: "http" });
    expect(r.body.data.config.properties.mcp.type).toBe("array");
  });
});
