/**
 * The manifest (docs/manifest.md): every declaration as one document, read whole and
 * replaced whole in one batch; its env references; what a replace keeps.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { fakeNetwork } from "../helpers/network";
import { admin, call, mintKey } from "../helpers/http";
import { MCP_URL, localMcpNetwork } from "../mcp/support/local-mcp";
import { manifest, name, replace } from "./helpers";
import { must } from "../../src/platform/must";

const apiTool = (title: string) => ({
  title,
  method: "GET",
  url: "https://api.example/things/{id}",
  parameters: [{ name: "id", in: "path", required: true }],
  input_schema: { type: "object", properties: { id: { type: "string" } }, required: ["id"] },
});

describe("the manifest", () => {
  // One file shares one D1: the tests below build on each other in order.
  const tool = name("t");
  const agent = name("a");
  const server = name("s");
  const api = name("api");

  it("reads every declaration as one document, secrets as references", async () => {
    localMcpNetwork();
    const k = await admin();
    await call("POST", "/api/tools-config/entries", {
      key: k,
      body: { title: tool, kind: "http", url: "https://t.example/run", headers: { "x-lit": "LITERAL-SECRET", authorization: { env: "SECRET_T" } } },
    });
    await call("POST", "/api/agents-config/entries", {
      key: k,
      body: { title: agent, kind: "http", config: { url: "https://a.example/run", headers: { "x-lit": "AGENT-SECRET" } } },
    });
    await call("POST", "/api/mcp-config/entries", {
      key: k,
      body: { title: server, config: { type: "http", url: MCP_URL, headers: { authorization: { env: "SECRET_MCP" } } } },
    });
    await call("POST", "/api/manifest/replace", { key: k, body: { ...(await manifest()), api_tools: [apiTool(api)] } });

    const m = await manifest();
    expect(m.version).toBe(1);
    expect(m.tools.find((t: any) => t.title === tool)).toEqual({
      title: tool,
      kind: "http",
      description: "",
      url: "https://t.example/run",
      method: "POST",
      headers: { "x-lit": "<redacted>", authorization: { env: "SECRET_T" } },
      timeout_seconds: 30,
    });
    expect(m.agents.find((a: any) => a.title === agent).config.headers).toEqual({ "x-lit": "<redacted>" });
    expect(m.mcp.find((s: any) => s.title === server)).toEqual({
      title: server,
      description: "",
      config: { type: "http", url: MCP_URL, headers: { authorization: { env: "SECRET_MCP" } } },
      include: [],
      exclude: [],
      timeout_seconds: 30,
    });
    expect(m.api_tools.find((t: any) => t.title === api)).toMatchObject({ title: api, method: "GET", body: "none", operation_id: null });
    expect(m.connectors).toEqual(["github"]);
    expect(JSON.stringify(m)).not.toContain("SECRET-");
  });

  it("lists the env references with where they are used and whether a value is there, never a value", async () => {
    await call("POST", "/api/mcp-config/secret-env", { key: await admin(), body: { name: "SECRET_MCP", value: "VALUE-NEVER-SHOWN" } });
    const r = await call("GET", "/api/manifest/mcp-env-refs", { key: await admin() });
    expect(r.status).toBe(200);
    const byName = Object.fromEntries(r.body.data.items.map((i: any) => [i.name, i]));
    expect(byName.SECRET_MCP).toEqual({
      name: "SECRET_MCP",
      referenced_by: [`mcp.${server}.config.headers.authorization`],
      env_set: false,
      secret_env_set: true,
    });
    expect(byName.SECRET_T).toEqual({ name: "SECRET_T", referenced_by: [`tools.${tool}.headers.authorization`], env_set: false, secret_env_set: false });
    expect(JSON.stringify(r.body)).not.toContain("VALUE-NEVER-SHOWN");
  });

  it("round-trips: a read document replaced as it is changes nothing and keeps the redacted literals", async () => {
    localMcpNetwork();
    const before = await manifest();
    const r = await replace(before);
    expect(r.status).toBe(200);
    expect(r.body.data).toMatchObject({ replaced: true, removed: { tools: [], agents: [], mcp: [], api_tools: [] }, mcp_status: [] });
    expect(await manifest()).toEqual(before);
    // The literal header is still stored: "<redacted>" stood for the stored value.
    const row = await env.DB.prepare("SELECT spec FROM tool_declarations WHERE title = ?").bind(tool).first<{ spec: string }>();
    expect(JSON.parse(must(row, "row").spec).headers["x-lit"]).toBe("LITERAL-SECRET");
    const agentRow = await env.DB.prepare("SELECT config FROM agent_declarations WHERE title = ?").bind(agent).first<{ config: string }>();
    expect(JSON.parse(must(agentRow, "agentRow").config).headers["x-lit"]).toBe("AGENT-SECRET");
  });

  it("replaces: entries not in the document are removed, new ones created, changed MCP servers listed again", async () => {
    localMcpNetwork();
    const m = await manifest();
    const newTool = name("t2");
    const doc = {
      ...m,
      tools: [{ title: newTool, kind: "http", url: "https://t2.example/run" }],
      agents: m.agents.filter((a: any) => a.title !== agent),
      mcp: m.mcp.map((s: any) => (s.title === server ? { ...s, include: ["add"] } : s)),
    };
    const r = await replace(doc);
    expect(r.status).toBe(200);
    expect(r.body.data.removed).toMatchObject({ tools: [tool], agents: [agent] });
    expect(r.body.data.mcp_status).toEqual([expect.objectContaining({ title: server, status: "ok", tools: [`${server}.add`] })]);
    const after = await manifest();
    expect(after.tools.map((t: any) => t.title)).toEqual([newTool]);
    expect(after.agents.map((a: any) => a.title)).not.toContain(agent);
    expect((await call("GET", `/api/tools/${tool}/schema`, { key: await admin() })).status).toBe(404);
  });

  it("validates the whole document first and writes nothing when any entry is refused", async () => {
    fakeNetwork(() => new Response("unused", { status: 500 }));
    const before = await manifest();
    const cases: Array<[unknown, number, string]> = [
      [{ ...before, tools: [...before.tools, { title: "echo", kind: "http", url: "https://x.example" }] }, 409, "built-in"],
      [{ ...before, tools: [...before.tools, { title: name("x"), kind: "http", url: "http://127.0.0.1/x" }] }, 400, `tools[${before.tools.length}]`],
      [{ ...before, mcp: [...before.mcp, { title: name("m"), config: { type: "http", url: MCP_URL, headers: { a: "<redacted>" } } }] }, 400, "<redacted>"],
      [{ ...before, api_tools: [apiTool(before.tools[0].title)] }, 400, "names another tool"],
      [{ ...before, connectors: ["other"] }, 400, "connectors"],
      [{ ...before, surprise: true }, 400, "surprise"],
      [{ ...before, tools: [before.tools[0], before.tools[0]] }, 400, "repeats"],
    ];
    for (const [doc, status, word] of cases) {
      const r = await replace(doc);
      expect(r.status, word).toBe(status);
      expect(r.body.error, word).toContain(word);
      expect(await manifest()).toEqual(before);
    }
  });

  it("keeps what it does not own: presets, built-ins, connectors, secret env values, plugin-owned declarations", async () => {
    const preset = name("p");
    await call("POST", "/api/presets", { key: await admin(), body: { name: preset, base_tool: "echo" } });
    const installed = await call("POST", "/api/marketplace/install", { key: await admin(), body: { ref: "examples/support-desk" } });
    expect(installed.status).toBe(200);
    const kept = await call("GET", "/api/manifest/preserved", { key: await admin() });
    expect(kept.status).toBe(200);
    expect(kept.body.data.presets).toContain(preset);
    expect(kept.body.data.builtin_tools).toContain("echo");
    expect(kept.body.data.connectors).toEqual(["github"]);
    expect(kept.body.data.secret_env).toContain("SECRET_MCP");
    const owned = [...kept.body.data.tools, ...kept.body.data.agents];
    expect(owned.length).toBeGreaterThan(0);
    const m = await manifest();
    for (const t of kept.body.data.tools) expect(m.tools.map((x: any) => x.title)).not.toContain(t);

    const r = await replace({ tools: [], agents: [], mcp: [], api_tools: [] });
    expect(r.status).toBe(200);
    const stillPreserved = await call("GET", "/api/manifest/preserved", { key: await admin() });
    expect(stillPreserved.body.data).toEqual(kept.body.data);
    expect((await call("GET", `/api/tools/${preset}/schema`, { key: await admin() })).status).toBe(200);
    const empty = await manifest();
    expect(empty).toMatchObject({ tools: [], agents: [], mcp: [], api_tools: [] });
    const taken = await replace({ agents: [{ title: kept.body.data.agents[0], kind: "http", config: { url: "https://x.example/r" } }] });
    expect(taken.status).toBe(409);
    expect(taken.body.error).toContain("marketplace plugin");
  });

  it("is admin-only to replace and readable with manifest:read", async () => {
    const reader = await mintKey({ scopes: ["manifest:read"] });
    expect((await call("GET", "/api/manifest", { key: reader.key })).status).toBe(200);
    expect((await call("GET", "/api/manifest/preserved", { key: reader.key })).status).toBe(200);
    const writer = await mintKey({ scopes: ["manifest:write"] });
    expect((await call("POST", "/api/manifest/replace", { key: writer.key, body: {} })).status).toBe(403);
  });
});

describe("POST /api/tools/remove", () => {
  it("removes an HTTP tool, an API tool, an MCP server or one MCP tool (kept away across reloads)", async () => {
    localMcpNetwork();
    const k = await admin();
    const srv = name("rs");
    await call("POST", "/api/mcp-config/entries", { key: k, body: { title: srv, config: { type: "http", url: MCP_URL } } });
    const one = await call("POST", "/api/tools/remove", { key: k, body: { name: `${srv}.shout` } });
    expect(one.body).toEqual({ data: { removed: true, name: `${srv}.shout`, kind: "mcp_tool" } });
    const reloaded = await call("POST", "/api/tools/reload", { key: k, body: { server: srv } });
    expect(reloaded.body.data.items[0].tools).not.toContain(`${srv}.shout`);
    expect(reloaded.body.data.items[0].tools).toContain(`${srv}.add`);

    const http = name("rh");
    await call("POST", "/api/tools-config/entries", { key: k, body: { title: http, kind: "http", url: "https://t.example/run" } });
    expect((await call("POST", "/api/tools/remove", { key: k, body: { name: http } })).body.data.kind).toBe("http_tool");
    const api = name("ra");
    await replace({ ...(await manifest()), api_tools: [apiTool(api)] });
    expect((await call("POST", "/api/tools/remove", { key: k, body: { name: api } })).body.data.kind).toBe("api_tool");
    expect((await call("POST", "/api/tools/remove", { key: k, body: { name: srv, kind: "mcp_server" } })).body.data.kind).toBe("mcp_server");
    expect((await call("GET", `/api/tools/${srv}.add/schema`, { key: k })).status).toBe(404);
  });

  it("refuses built-ins and presets (409), unknown names (404), an ambiguous name without kind (409), non-admins (403)", async () => {
    localMcpNetwork();
    const k = await admin();
    expect((await call("POST", "/api/tools/remove", { key: k, body: { name: "echo" } })).status).toBe(409);
    const preset = name("rp");
    await call("POST", "/api/presets", { key: k, body: { name: preset, base_tool: "echo" } });
    const p = await call("POST", "/api/tools/remove", { key: k, body: { name: preset } });
    expect(p.status).toBe(409);
    expect(p.body.error).toContain("DELETE /api/presets");
    expect((await call("POST", "/api/tools/remove", { key: k, body: { name: "nothing_here" } })).status).toBe(404);
    const both = name("rb");
    await call("POST", "/api/tools-config/entries", { key: k, body: { title: both, kind: "http", url: "https://t.example/run" } });
    await call("POST", "/api/mcp-config/entries", { key: k, body: { title: both, config: { type: "http", url: MCP_URL } } });
    expect((await call("POST", "/api/tools/remove", { key: k, body: { name: both } })).status).toBe(409);
    expect((await call("POST", "/api/tools/remove", { key: k, body: { name: both, kind: "mcp_server" } })).status).toBe(200);
    const writer = await mintKey({ scopes: ["tools:write"] });
    expect((await call("POST", "/api/tools/remove", { key: writer.key, body: { name: both } })).status).toBe(403);
  });

  it("reloads every server with tools:write", async () => {
    localMcpNetwork();
    const writer = await mintKey({ scopes: ["tools:write"] });
    const r = await call("POST", "/api/tools/reload", { key: writer.key });
    expect(r.status).toBe(200);
    expect(r.body.data.total).toBe(r.body.data.items.length);
  });
});
