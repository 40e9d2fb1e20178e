/**
 * A stored literal header does not follow its declaration to a new origin (docs/security.md "Where a
 * stored secret may go"; src/outbound/origin-lock.ts). A manifest replace's "<redacted>" keeps the
 * stored value only while the entry's URL keeps its origin: an HTTP tool, an http agent, an MCP
 * server or an API tool moved to another scheme, host or port needs the value entered again (400
 * naming the header, nothing written), and the literal never reaches the new host. An API tool's
 * placeholders may not reach its origin either, so whoever runs it cannot choose the host.
 */
import { describe, expect, it } from "vitest";
import { fakeNetwork } from "../helpers/network";
import { admin, call } from "../helpers/http";
import { MCP_URL, localMcpNetwork } from "../mcp/support/local-mcp";
import { manifest, name, replace } from "./helpers";

const LITERAL = "LOCKED-LITERAL-VALUE";

describe("manifest replace: a kept literal header stays at its origin", () => {
  it('an HTTP tool moved to another host with "<redacted>" is refused naming the header; the literal never reaches that host', async () => {
    const calls = fakeNetwork((req) => Response.json({ host: new URL(req.url).host }));
    const tool = name("lock_t");
    const declared = await call("POST", "/api/tools-config/entries", {
      key: await admin(),
      body: { title: tool, kind: "http", url: "https://tools.example/run", headers: { "x-api-key": LITERAL } },
    });
    expect(declared.status).toBe(200);
    const before = await manifest();
    const i = before.tools.findIndex((t: any) => t.title === tool);
    expect(before.tools[i].headers).toEqual({ "x-api-key": "<redacted>" });

    for (const url of ["https://collector.example/run", "http://tools.example/run", "https://tools.example:8443/run"]) {
      const moved = { ...before, tools: before.tools.map((t: any) => (t.title === tool ? { ...t, url } : t)) };
      const r = await replace(moved);
      expect(r.status, url).toBe(400);
      expect(r.body.error).toContain(`tools[${i}].headers.x-api-key`);
      expect(r.body.error).toContain("origin");
      expect(r.body.error).not.toContain(LITERAL);
      expect(r.body.error).not.toContain("collector");
      expect(await manifest()).toEqual(before);
    }

    // The same origin (another path) keeps it; so does entering the value again at the new origin.
    const samePlace = { ...before, tools: before.tools.map((t: any) => (t.title === tool ? { ...t, url: "https://tools.example/v2/run" } : t)) };
    expect((await replace(samePlace)).status).toBe(200);
    const run = await call("POST", "/api/run-tool", { key: await admin(), body: { tool_name: tool, arguments: {} } });
    expect(run.status, JSON.stringify(run.body)).toBe(200);
    const reentered = {
      ...before,
      tools: before.tools.map((t: any) => (t.title === tool ? { ...t, url: "https://elsewhere.example/run", headers: { "x-api-key": "A-NEW-VALUE" } } : t)),
    };
    expect((await replace(reentered)).status).toBe(200);
    await call("POST", "/api/run-tool", { key: await admin(), body: { tool_name: tool, arguments: {} } });
    expect(calls.filter((c) => c.headers["x-api-key"] === LITERAL).map((c) => c.url)).toEqual(["https://tools.example/v2/run"]);
    expect(calls.find((c) => c.url.startsWith("https://elsewhere.example/"))?.headers["x-api-key"]).toBe("A-NEW-VALUE");
  });

  it("the same for an http agent, an MCP server and an API tool", async () => {
    localMcpNetwork();
    const k = await admin();
    const agent = name("lock_a");
    const server = name("lock_s");
    const api = name("lock_api");
    expect(
      (
        await call("POST", "/api/agents-config/entries", {
          key: k,
          body: { title: agent, kind: "http", config: { url: "https://agents.example/turn", headers: { "x-lit": LITERAL } } },
        })
      ).status,
    ).toBe(200);
    expect(
      (
        await call("POST", "/api/mcp-config/entries", {
          key: k,
          body: { title: server, config: { type: "http", url: MCP_URL, headers: { "x-lit": LITERAL } } },
        })
      ).status,
    ).toBe(200);
    const withApi = await manifest();
    const apiEntry = {
      title: api,
      method: "GET",
      url: "https://api.example/things/{id}",
      parameters: [{ name: "id", in: "path", required: true }],
      headers: { "x-lit": LITERAL },
      input_schema: { type: "object" },
    };
    expect((await replace({ ...withApi, api_tools: [...withApi.api_tools, apiEntry] })).status).toBe(200);
    const before = await manifest();

    const cases: Array<[string, (m: any) => any, string]> = [
      [
        "agent",
        (m) => ({ ...m, agents: m.agents.map((a: any) => (a.title === agent ? { ...a, config: { ...a.config, url: "https://collector.example/turn" } } : a)) }),
        "agents[",
      ],
      [
        "mcp",
        (m) => ({ ...m, mcp: m.mcp.map((s: any) => (s.title === server ? { ...s, config: { ...s.config, url: "https://collector.example/mcp" } } : s)) }),
        "mcp[",
      ],
      [
        "api",
        (m) => ({ ...m, api_tools: m.api_tools.map((t: any) => (t.title === api ? { ...t, url: "https://collector.example/things/{id}" } : t)) }),
        "api_tools[",
      ],
    ];
    for (const [what, move, field] of cases) {
      const r = await replace(move(before));
      expect(r.status, what).toBe(400);
      expect(r.body.error, what).toContain(field);
      expect(r.body.error, what).toContain("headers.x-lit");
      expect(r.body.error, what).toContain("origin");
      expect(await manifest()).toEqual(before);
    }
  });

  it("an API tool's placeholders may not reach its scheme, host or port (whoever runs it would choose where its headers go)", async () => {
    fakeNetwork(() => new Response("unused", { status: 500 }));
    const before = await manifest();
    for (const url of ["https://{tenant}.example.com/things", "https://api.{zone}/things", "https://api.example{suffix}/things"]) {
      const holes = [...url.matchAll(/\{(\w+)\}/g)].map((m) => m[1]);
      const entry = {
        title: name("hosted"),
        method: "GET",
        url,
        parameters: holes.map((h) => ({ name: h, in: "path", required: true })),
        headers: { "x-lit": LITERAL },
        input_schema: { type: "object" },
      };
      const r = await replace({ ...before, api_tools: [...before.api_tools, entry] });
      expect(r.status, url).toBe(400);
      expect(r.body.error, url).toContain("url");
      expect(await manifest()).toEqual(before);
    }
  });
});
