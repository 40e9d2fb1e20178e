/**
 * A connection's access token goes only to its provider's API (docs/connectors.md "The tool
 * header"; docs/security.md "Where a stored secret may go"): the provider descriptor lists
 * `api_origins` (CONNECTORS_PROVIDERS, env only), and a tool, agent or MCP server header naming the
 * connection is refused at declaration when the declaration's URL is elsewhere (400 naming the
 * header, never the id or URL), and again before each call (a failed call, with nothing sent and no
 * refresh asked for). A provider without the field lends its connections to no declaration.
 * Without this, an admin could declare a tool at its own host and collect any user's token.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { parseProvidersDocument } from "../../src/platform/settings/connector-settings";
import { runAgent } from "../../src/targets/agents/run";
import { admin, uniq } from "../helpers/http";
import { MCP_HOST, MCP_URL, localMcpNetwork } from "../mcp/support/local-mcp";
import { callWith, testContext } from "../targets/helpers";
import { AGENT_URL, PROVIDERS, TOOL_URL, VARS, call, connect, connectorsUser, declareTool, expectNoSecrets, fakeProvider, runTool } from "./helpers";

const COLLECTOR = "https://collector.example";
const NOT_AT_ORIGINS = "this URL's origin is not among the api_origins of the connection's provider (CONNECTORS_PROVIDERS)";
const NO_ORIGINS = "the connection's provider lists no api_origins (CONNECTORS_PROVIDERS), so its connections are lent to no declaration";

/** VARS with the acme provider's api_origins replaced (or removed, with null). */
function withOrigins(origins: string[] | null): Record<string, unknown> {
  const providers = PROVIDERS.map((p) => {
    if (p.id !== "acme") return p;
    const { api_origins: _dropped, ...rest } = p as typeof p & { api_origins?: string[] };
    return origins ? { ...rest, api_origins: origins } : rest;
  });
  return { ...VARS, CONNECTORS_PROVIDERS: JSON.stringify(providers) };
}

async function count(table: string, title: string): Promise<number> {
  return Number(await env.DB.prepare(`SELECT COUNT(*) AS n FROM ${table} WHERE title = ?`).bind(title).first("n"));
}

describe("api_origins in a provider descriptor", () => {
  it("takes origins only (https, http on loopback, :* for any port), at least one, checked with the settings", () => {
    const acme = PROVIDERS[0];
    const errorsOf = (api_origins: unknown) => {
      const errors: string[] = [];
      parseProvidersDocument(JSON.stringify([{ ...acme, api_origins }]), errors);
      return errors;
    };
    expect(errorsOf(["https://api.acme.example", "http://127.0.0.1:*"])).toEqual([]);
    expect(errorsOf(["https://api.acme.example/v1"])).toEqual([
      expect.stringMatching(/^CONNECTORS_PROVIDERS \[0\]\.api_origins\[0\]: must be an origin: https:\/\/host\[:port\]/),
    ]);
    expect(errorsOf(["https://api.acme.example", "http://api.acme.example"])).toEqual([
      expect.stringMatching(/^CONNECTORS_PROVIDERS \[0\]\.api_origins\[1\]: must be an origin/),
    ]);
    expect(errorsOf([])).toEqual([
      "CONNECTORS_PROVIDERS [0].api_origins: must list at least one origin (leave the field out to lend connections to no declaration)",
    ]);
    expect(errorsOf(["https://api.acme.example/v1"]).join(" ")).not.toContain("api.acme.example");
  });

  it("is not shown in the catalog", async () => {
    const r = await call("GET", "/api/connectors/providers", { key: await admin() });
    expect(r.status).toBe(200);
    expect(r.text).not.toContain("api_origins");
    expect(r.text).not.toContain("tools.fake");
  });
});

describe("declaring a connection header elsewhere than the provider's API", () => {
  it("refuses a tool an admin declares at its own host with a user's connection, naming the header; nothing stored, nothing sent", async () => {
    const fake = fakeProvider();
    const user = await connectorsUser();
    const { id } = await connect(fake, { key: user.key });
    const title = uniq("collect");
    const r = await call("POST", "/api/tools-config/entries", {
      key: await admin(),
      body: { title, kind: "http", url: `${COLLECTOR}/collect`, headers: { authorization: { connection: id } } },
    });
    expect(r.status).toBe(400);
    expect(r.body.error).toBe(`invalid body: headers.authorization: ${NOT_AT_ORIGINS}`);
    expect(r.text).not.toContain(id);
    expect(r.text).not.toContain("collector.example");
    expect(await count("tool_declarations", title)).toBe(0);
    expect(fake.toolCalls).toHaveLength(0);
    expect(fake.tokenCalls.map((t) => t.grant_type)).toEqual(["authorization_code"]);
    // At the provider's API the same header is fine.
    expect((await declareTool(uniq("lent"), { authorization: { connection: id } })).status).toBe(200);
  });

  it("refuses it on an http agent, an API tool and an MCP server too, and in a manifest replace", async () => {
    const fake = fakeProvider();
    const { id } = await connect(fake);
    const key = await admin();
    const agent = uniq("collect-agent");
    const a = await call("POST", "/api/agents-config/entries", {
      key,
      body: { title: agent, kind: "http", config: { url: `${COLLECTOR}/turn`, headers: { "x-token": { connection: id } } } },
    });
    expect(a.status).toBe(400);
    expect(a.body.error).toBe(`invalid body: config.headers.x-token: ${NOT_AT_ORIGINS}`);
    expect(await count("agent_declarations", agent)).toBe(0);

    const api = await call("POST", "/api/api-tools", {
      key,
      body: {
        operation_id: "collectToken",
        headers: { authorization: { connection: id } },
        openapi: {
          openapi: "3.0.3",
          info: { title: "c", version: "1" },
          servers: [{ url: `${COLLECTOR}/v1` }],
          paths: { "/x": { get: { operationId: "collectToken" } } },
        },
      },
    });
    expect(api.status).toBe(400);
    expect(api.body.error).toBe(`invalid body: headers.authorization: ${NOT_AT_ORIGINS}`);
    expect(await count("api_tools", "collectToken")).toBe(0);

    const server = uniq("collect_mcp").replace(/-/g, "_");
    const m = await call("POST", "/api/mcp-config/entries", {
      key,
      body: { title: server, config: { type: "http", url: `${COLLECTOR}/mcp`, headers: { authorization: { connection: id } } } },
    });
    expect(m.status).toBe(400);
    expect(m.body.error).toBe(`invalid body: config.headers.authorization: ${NOT_AT_ORIGINS}`);
    expect(await count("mcp_servers", server)).toBe(0);

    const current = await call("GET", "/api/manifest", { key });
    const doc = {
      ...current.body.data,
      tools: [...current.body.data.tools, { title: uniq("mtool"), kind: "http", url: `${COLLECTOR}/x`, headers: { authorization: { connection: id } } }],
    };
    const replaced = await call("POST", "/api/manifest/replace", { key, body: doc });
    expect(replaced.status).toBe(400);
    expect(replaced.body.error).toBe(`invalid body: tools[${doc.tools.length - 1}].headers.authorization: ${NOT_AT_ORIGINS}`);
    expect(fake.toolCalls).toHaveLength(0);
  });

  it("a provider without api_origins lends its connections to no declaration, wherever the URL", async () => {
    const fake = fakeProvider();
    const { id } = await connect(fake);
    const r = await declareTool(uniq("unlent"), { authorization: { connection: id } }, withOrigins(null));
    expect(r.status).toBe(400);
    expect(r.body.error).toBe(`invalid body: headers.authorization: ${NO_ORIGINS}`);
  });

  it("names every refused header, grouped by reason", async () => {
    const fake = fakeProvider();
    const { id } = await connect(fake);
    const missing = "00000000-0000-4000-8000-000000000000";
    const r = await call("POST", "/api/tools-config/entries", {
      key: await admin(),
      body: {
        title: uniq("many"),
        kind: "http",
        url: `${COLLECTOR}/x`,
        headers: { a: { connection: id }, b: { connection: missing }, c: { connection: id, format: "token {access_token}" } },
      },
    });
    expect(r.status).toBe(400);
    expect(r.body.error).toBe(`invalid body: headers.a, headers.c: ${NOT_AT_ORIGINS}; headers.b: no such connection`);
  });
});

describe("a stored declaration whose provider no longer lends to its URL", () => {
  it("an HTTP tool's call fails before anything is sent, and no refresh is asked for", async () => {
    const fake = fakeProvider();
    // 30 s left, under the default skew: a lending call would refresh first.
    fake.next.code = { expires_in: 30 };
    const { id } = await connect(fake);
    const title = uniq("narrowed");
    expect((await declareTool(title, { authorization: { connection: id } })).status).toBe(200);

    for (const [vars, reason] of [
      [withOrigins([new URL(AGENT_URL).origin]), NOT_AT_ORIGINS],
      [withOrigins(null), NO_ORIGINS],
      [
        { ...VARS, CONNECTORS_PROVIDERS: JSON.stringify(PROVIDERS.filter((p) => p.id !== "acme")) },
        "the connection's provider is not configured (CONNECTORS_PROVIDERS)",
      ],
    ] as const) {
      const r = await runTool(title, {}, vars);
      expect(r.status).toBe(500);
      expect(r.body).toEqual({ error: `${reason}; the token was not sent`, code: "tool-error" });
      expectNoSecrets(r.text, fake);
    }
    expect(fake.toolCalls).toHaveLength(0);
    expect(fake.tokenCalls.map((t) => t.grant_type)).toEqual(["authorization_code"]);

    // Lent again, the same declaration works (refreshing first).
    const back = await runTool(title);
    expect(back.status, back.text).toBe(200);
    expect(fake.toolCalls).toHaveLength(1);
    expect(new URL(fake.toolCalls[0].url).origin).toBe(new URL(TOOL_URL).origin);
  });

  it("an http agent's run fails the same way, sending nothing", async () => {
    const fake = fakeProvider();
    const { id } = await connect(fake);
    const agent = uniq("narrowed-agent");
    expect(
      (
        await call("POST", "/api/agents-config/entries", {
          key: await admin(),
          body: { title: agent, kind: "http", config: { url: AGENT_URL, headers: { authorization: { connection: id } } } },
        })
      ).status,
    ).toBe(200);
    const run = await runAgent(testContext({ vars: withOrigins([new URL(TOOL_URL).origin]) }), agent, { thread_id: uniq("t"), user_message: "hi" }, {});
    expect(run).toEqual({ ok: false, kind: "agent_error", message: `${NOT_AT_ORIGINS}; the token was not sent` });
    expect(fake.toolCalls).toHaveLength(0);
  });

  it("an MCP server's listing fails the same way, and its host receives the token no more", async () => {
    const fake = fakeProvider();
    const { id } = await connect(fake);
    const lent = withOrigins([new URL(TOOL_URL).origin, `https://${MCP_HOST}`]);
    const calls = localMcpNetwork();
    const server = uniq("lent_mcp").replace(/-/g, "_");
    const declared = await callWith(lent, "POST", "/api/mcp-config/entries", {
      key: await admin(),
      body: { title: server, config: { type: "http", url: MCP_URL, headers: { authorization: { connection: id } } } },
    });
    expect(declared.status, declared.text).toBe(200);
    expect(declared.body.data.status.status).toBe("ok");
    expect(calls.length).toBeGreaterThan(0);
    expect(calls.every((c) => c.headers.authorization === `Bearer ${fake.lastAccess()}`)).toBe(true);
    const before = calls.length;

    const reload = await callWith(VARS, "POST", "/api/tools/reload", { key: await admin(), body: { server } });
    expect(reload.status).toBe(200);
    expect(reload.body.data.items[0]).toMatchObject({ status: "failed" });
    expect(reload.body.data.items[0].last_error).toContain(`${NOT_AT_ORIGINS}; the token was not sent`);
    expectNoSecrets(reload.text, fake);
    expect(calls).toHaveLength(before);
  });
});
