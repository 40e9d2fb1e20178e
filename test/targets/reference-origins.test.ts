/**
 * A referenced env secret goes only where the deployment lets it (docs/security.md "Secret
 * references", "Where a stored secret may go"): `SECRET_REFERENCE_ORIGINS` (env only) binds each
 * referenceable name to origins, and a declaration sending a reference anywhere else is refused at
 * declaration (400 naming the field, never the variable or the URL) and again before each send
 * (the usual tool error, agent error or MCP failure, with nothing sent). Without it, an admin could
 * declare a tool at its own host referencing a deployment secret and receive it.
 *
 * The workers bindings bind the other test files' names to their fake hosts (vitest.config.ts);
 * https://collector.example stands for the admin's own host and is bound for none of them.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { formatOriginPattern, originAllowed, parseOriginPattern } from "../../src/platform/settings/origin-patterns";
import { parseReferenceOrigins } from "../../src/platform/settings/secret-references";
import { parseSettings } from "../../src/platform/settings/settings";
import { runAgent } from "../../src/targets/agents/run";
import { fakeFetch, fakeNetwork, json } from "../helpers/network";
import { admin, call, uniq } from "../helpers/http";
import { MCP_HOST, MCP_URL, localMcpNetwork } from "../mcp/support/local-mcp";
import { callWith, testContext } from "./helpers";
import { must } from "../../src/platform/must";

const COLLECTOR = "https://collector.example";
const TOOL_VALUE = "tool-secret-VALUE-never-sent";

/** The test bindings with `name` bound to `origins` instead (or unbound, with null). */
function rebound(name: string, origins: string[] | null): Record<string, string> {
  const current = JSON.parse(String((env as unknown as Record<string, unknown>).SECRET_REFERENCE_ORIGINS)) as Record<string, string[]>;
  const next = { ...current };
  if (origins) next[name] = origins;
  else delete next[name];
  return { SECRET_REFERENCE_ORIGINS: JSON.stringify(next) };
}

async function count(table: string, title: string): Promise<number> {
  return Number(await env.DB.prepare(`SELECT COUNT(*) AS n FROM ${table} WHERE title = ?`).bind(title).first("n"));
}

function expectOriginRefusal(r: { status: number; body: any }, fields: string) {
  expect(r.status).toBe(400);
  expect(r.body.error).toBe(
    `invalid body: ${fields}: ${fields.includes(",") ? "reference env vars" : "references an env var"} that may not be sent to this URL's origin; SECRET_REFERENCE_ORIGINS binds each referenceable name to the origins its value may be sent to; a name it does not bind goes nowhere`,
  );
  expect(JSON.stringify(r.body)).not.toContain("collector.example");
}

describe("origin patterns (pure)", () => {
  it("accept https origins, http only on loopback, :* for any port; nothing after the host", () => {
    for (const [text, shown] of [
      ["https://api.github.com", "https://api.github.com"],
      ["https://API.GitHub.com/", "https://api.github.com"],
      ["https://api.example:8443", "https://api.example:8443"],
      ["https://api.example:443", "https://api.example"],
      ["http://127.0.0.1:*", "http://127.0.0.1:*"],
      ["http://localhost:8790", "http://localhost:8790"],
      ["http://[::1]:*", "http://[::1]:*"],
    ]) {
      const p = parseOriginPattern(text);
      expect(p, text).not.toBeNull();
      expect(formatOriginPattern(must(p, "p"))).toBe(shown);
    }
    for (const text of [
      "http://api.example",
      "http://10.0.0.1",
      "https://api.example/v1",
      "https://api.example?x=1",
      "https://api.example#f",
      "https://user:pw@api.example",
      "https://api.example:8443:*",
      "ftp://api.example",
      "api.example",
      "https://",
      "https://*.example",
      42,
    ]) {
      expect(parseOriginPattern(text), String(text)).toBeNull();
    }
  });

  it("match a URL's origin exactly: no port means the scheme's default, :* any port of that host", () => {
    const exact = [must(parseOriginPattern("https://api.example"), 'parseOriginPattern("https://api.exampl…')];
    expect(originAllowed(exact, "https://api.example/v1/run?x=1")).toBe(true);
    expect(originAllowed(exact, "https://api.example:443/v1")).toBe(true);
    expect(originAllowed(exact, "https://api.example:8443/v1")).toBe(false);
    expect(originAllowed(exact, "http://api.example/v1")).toBe(false);
    expect(originAllowed(exact, "https://evil.api.example/v1")).toBe(false);
    expect(originAllowed(exact, "https://api.example.evil/v1")).toBe(false);
    expect(originAllowed(exact, "not a url")).toBe(false);
    const anyPort = [must(parseOriginPattern("http://127.0.0.1:*"), 'parseOriginPattern("http://127.0.0.1:*")')];
    expect(originAllowed(anyPort, "http://127.0.0.1:41234/mcp")).toBe(true);
    expect(originAllowed(anyPort, "http://127.0.0.1/mcp")).toBe(true);
    expect(originAllowed(anyPort, "https://127.0.0.1:41234/mcp")).toBe(false);
    expect(originAllowed(anyPort, "http://localhost:41234/mcp")).toBe(false);
  });
});

describe("SECRET_REFERENCE_ORIGINS is checked with the settings", () => {
  it("refuses a document that is not an object of name to origins, naming the place and the rule, never an origin", () => {
    const bad = (doc: unknown) => {
      const errors: string[] = [];
      const out = parseReferenceOrigins(typeof doc === "string" ? doc : JSON.stringify(doc), undefined, errors);
      expect(out).toEqual({});
      return errors;
    };
    expect(bad("not json")[0]).toMatch(/^SECRET_REFERENCE_ORIGINS must be a JSON object of env var name to an array of origins/);
    expect(bad(["https://a.example"])[0]).toMatch(/^SECRET_REFERENCE_ORIGINS must be a JSON object/);
    expect(bad({ SECRET_A: [] })).toEqual(["SECRET_REFERENCE_ORIGINS.SECRET_A must be an array of 1 to 32 origins"]);
    expect(bad({ SECRET_A: "https://a.example" })).toEqual(["SECRET_REFERENCE_ORIGINS.SECRET_A must be an array of 1 to 32 origins"]);
    const path = bad({ SECRET_A: ["https://a.example", "https://leak.example/path"] });
    expect(path).toEqual([expect.stringMatching(/^SECRET_REFERENCE_ORIGINS\.SECRET_A\[1\] must be an origin: https:\/\/host\[:port\]/)]);
    expect(path.join(" ")).not.toContain("leak.example");
    expect(bad({ "not-a-name": ["https://a.example"] })).toEqual(["SECRET_REFERENCE_ORIGINS has a key that is not an env var name (letters, digits, _)"]);
    // One of the service's own settings is never bound, and its name is not echoed.
    const own = bad({ ACCESS_CONTROL_BOOTSTRAP_TOKEN: ["https://a.example"] });
    expect(own).toEqual([expect.stringContaining("SECRET_REFERENCE_ORIGINS binds a variable that is never referenceable")]);
    expect(own.join(" ")).not.toContain("ACCESS_CONTROL_BOOTSTRAP_TOKEN");
  });

  it("makes every request answer invalid configuration when the document is broken", async () => {
    const r = await callWith({ SECRET_REFERENCE_ORIGINS: JSON.stringify({ TOOL_SECRET: ["http://plain.example"] }) }, "GET", "/api/tools", {
      key: await admin(),
    });
    expect(r.status).toBe(500);
    expect(r.body).toMatchObject({ code: "invalid-configuration" });
    expect(r.text).toContain("SECRET_REFERENCE_ORIGINS.TOOL_SECRET[0]");
    expect(r.text).not.toContain("plain.example");
    const parsed = parseSettings({ ...env, SECRET_REFERENCE_ORIGINS: "" });
    expect(parsed.ok && parsed.settings.referenceOrigins).toEqual({});
  });
});

describe("at declaration: a reference only to an origin its name is bound to", () => {
  it("refuses an HTTP tool declared at the admin's own host with an env reference, naming the header, storing nothing", async () => {
    const title = uniq("collect");
    const r = await call("POST", "/api/tools-config/entries", {
      key: await admin(),
      body: { title, kind: "http", url: `${COLLECTOR}/collect`, headers: { authorization: { env: "TOOL_SECRET" } } },
    });
    expectOriginRefusal(r, "headers.authorization");
    expect(r.body.error).not.toContain("TOOL_SECRET");
    expect(await count("tool_declarations", title)).toBe(0);
    // The same reference at a bound host is fine.
    const ok = await call("POST", "/api/tools-config/entries", {
      key: await admin(),
      body: { title, kind: "http", url: "https://tools.example/run", headers: { authorization: { env: "TOOL_SECRET" } } },
    });
    expect(ok.status, JSON.stringify(ok.body)).toBe(200);
  });

  it("refuses a name with no binding at all, wherever the URL, and lists every refused field", async () => {
    const title = uniq("unbound");
    const r = await call("POST", "/api/tools-config/entries", {
      key: await admin(),
      body: {
        title,
        kind: "http",
        url: "https://tools.example/run",
        headers: { a: { env: "SECRET_NEVER_BOUND" }, b: { env: "TOOL_SECRET" }, c: { env: "SECRET_ALSO_UNBOUND" } },
      },
    });
    expectOriginRefusal(r, "headers.a, headers.c");
    expect(await count("tool_declarations", title)).toBe(0);
  });

  it("matches the port: a binding without a port is the default port only", async () => {
    const r = await call("POST", "/api/tools-config/entries", {
      key: await admin(),
      body: { title: uniq("port"), kind: "http", url: "https://tools.example:8443/run", headers: { authorization: { env: "TOOL_SECRET" } } },
    });
    expectOriginRefusal(r, "headers.authorization");
  });

  it("refuses an http agent's header and an llm agent's api_key at the admin's own host", async () => {
    const http = uniq("collect-agent");
    expectOriginRefusal(
      await call("POST", "/api/agents-config/entries", {
        key: await admin(),
        body: { title: http, kind: "http", config: { url: `${COLLECTOR}/turn`, headers: { "x-key": { env: "AGENT_KEY" } } } },
      }),
      "config.headers.x-key",
    );
    const llm = uniq("collect-llm");
    expectOriginRefusal(
      await call("POST", "/api/agents-config/entries", {
        key: await admin(),
        body: { title: llm, kind: "llm", config: { base_url: `${COLLECTOR}/v1`, model: "m", api_key: { env: "LLM_KEY" } } },
      }),
      "config.api_key",
    );
    expect(await count("agent_declarations", http)).toBe(0);
    expect(await count("agent_declarations", llm)).toBe(0);
  });

  it("refuses an API tool and an MCP server at the admin's own host", async () => {
    const api = await call("POST", "/api/api-tools", {
      key: await admin(),
      body: {
        operation_id: "collectIt",
        headers: { authorization: { env: "TOOL_SECRET" } },
        openapi: {
          openapi: "3.0.3",
          info: { title: "c", version: "1" },
          servers: [{ url: `${COLLECTOR}/v1` }],
          paths: { "/x": { get: { operationId: "collectIt" } } },
        },
      },
    });
    expectOriginRefusal(api, "headers.authorization");
    expect(await count("api_tools", "collectIt")).toBe(0);
    const calls = fakeNetwork(() => new Response(null, { status: 500 }));
    const server = uniq("collect_mcp").replace(/-/g, "_");
    expectOriginRefusal(
      await call("POST", "/api/mcp-config/entries", {
        key: await admin(),
        body: { title: server, config: { type: "http", url: `${COLLECTOR}/mcp`, headers: { authorization: { env: "SECRET_MCP" } } } },
      }),
      "config.headers.authorization",
    );
    expect(await count("mcp_servers", server)).toBe(0);
    expect(calls).toHaveLength(0);
  });

  it("refuses the same in a manifest replace, naming the entry's field", async () => {
    const key = await admin();
    const current = await call("GET", "/api/manifest", { key });
    const doc = {
      ...current.body.data,
      tools: [...current.body.data.tools, { title: uniq("mtool"), kind: "http", url: `${COLLECTOR}/x`, headers: { authorization: { env: "TOOL_SECRET" } } }],
    };
    const r = await call("POST", "/api/manifest/replace", { key, body: doc });
    expect(r.status).toBe(400);
    expect(r.body.error).toContain(`tools[${doc.tools.length - 1}]`);
    expect(r.body.error).toContain("may not be sent to this URL's origin");
  });
});

describe("at call time: a binding narrowed in env stops the value before anything is sent", () => {
  it("an HTTP tool stored while its name was bound to its host fails with a tool error and sends nothing there", async () => {
    const calls = fakeNetwork(() => json({ ok: true }));
    const title = uniq("narrowed");
    expect(
      (
        await call("POST", "/api/tools-config/entries", {
          key: await admin(),
          body: { title, kind: "http", url: "https://tools.example/run", headers: { authorization: { env: "TOOL_SECRET" } } },
        })
      ).status,
    ).toBe(200);
    const bound = await callWith({ TOOL_SECRET: TOOL_VALUE }, "POST", "/api/run-tool", { key: await admin(), body: { tool_name: title, arguments: {} } });
    expect(bound.status).toBe(200);
    expect(calls.map((c) => c.headers.authorization)).toEqual([TOOL_VALUE]);

    for (const [origins, why] of [
      [["https://elsewhere.example"], "binds it to other origins"],
      [null, "binds no origin to it"],
    ] as const) {
      const r = await callWith({ TOOL_SECRET: TOOL_VALUE, ...rebound("TOOL_SECRET", origins ? [...origins] : null) }, "POST", "/api/run-tool", {
        key: await admin(),
        body: { tool_name: title, arguments: {} },
      });
      expect(r.status).toBe(500);
      expect(r.body).toEqual({
        error: `env var TOOL_SECRET referenced by the declaration may not be sent to this URL's origin (SECRET_REFERENCE_ORIGINS ${why})`,
        code: "tool-error",
      });
      expect(r.text).not.toContain(TOOL_VALUE);
    }
    expect(calls).toHaveLength(1);
  });

  it("an API tool, an llm agent and an http agent send nothing once their names are bound elsewhere", async () => {
    const network = fakeNetwork(() => json({ ok: true }));
    const api = await call("POST", "/api/api-tools", {
      key: await admin(),
      body: {
        operation_id: "narrowedOp",
        headers: { authorization: { env: "TOOL_SECRET" } },
        openapi: {
          openapi: "3.0.3",
          info: { title: "n", version: "1" },
          servers: [{ url: "https://api.example/v1" }],
          paths: {
            "/items/{id}": { get: { operationId: "narrowedOp", parameters: [{ name: "id", in: "path", required: true, schema: { type: "string" } }] } },
          },
        },
      },
    });
    expect(api.status, JSON.stringify(api.body)).toBe(200);
    const elsewhere = rebound("TOOL_SECRET", ["https://tools.example"]);
    const r = await callWith({ TOOL_SECRET: TOOL_VALUE, ...elsewhere }, "POST", "/api/run-tool", {
      key: await admin(),
      body: { tool_name: "narrowedOp", arguments: { id: "1" } },
    });
    expect(r.status).toBe(500);
    expect(r.body.code).toBe("tool-error");
    expect(r.body.error).toContain("env var TOOL_SECRET referenced by the declaration may not be sent to this URL's origin");
    expect(network).toHaveLength(0);

    const llm = uniq("narrowed-llm");
    expect(
      (
        await call("POST", "/api/agents-config/entries", {
          key: await admin(),
          body: { title: llm, kind: "llm", config: { base_url: "https://llm.example/v1", model: "m", api_key: { env: "LLM_KEY" } } },
        })
      ).status,
    ).toBe(200);
    const model = fakeFetch(() => json({ choices: [{ message: { content: "hi" } }] }));
    const llmRun = await runAgent(
      testContext({ fetch: model.fetch, vars: { LLM_KEY: "sk-never-sent", ...rebound("LLM_KEY", ["https://llm.example.com"]) } }),
      llm,
      { thread_id: uniq("t"), user_message: "x" },
      {},
    );
    expect(llmRun).toEqual({
      ok: false,
      kind: "agent_error",
      message: "env var LLM_KEY referenced by the declaration may not be sent to this URL's origin (SECRET_REFERENCE_ORIGINS binds it to other origins)",
    });
    expect(model.calls).toHaveLength(0);

    const http = uniq("narrowed-http");
    expect(
      (
        await call("POST", "/api/agents-config/entries", {
          key: await admin(),
          body: { title: http, kind: "http", config: { url: "https://agent.example/turn", headers: { "x-key": { env: "AGENT_KEY" } } } },
        })
      ).status,
    ).toBe(200);
    const endpoint = fakeFetch(() => json({ text: "reached" }));
    const httpRun = await runAgent(
      testContext({ fetch: endpoint.fetch, vars: { AGENT_KEY: "agent-never-sent", ...rebound("AGENT_KEY", null) } }),
      http,
      { thread_id: uniq("t"), user_message: "x" },
      {},
    );
    expect(httpRun).toEqual({
      ok: false,
      kind: "agent_error",
      message: "env var AGENT_KEY referenced by the declaration may not be sent to this URL's origin (SECRET_REFERENCE_ORIGINS binds no origin to it)",
    });
    expect(endpoint.calls).toHaveLength(0);
  });

  it("an MCP server's env reference (from the Worker env) fails its listing and reaches the server no more", async () => {
    const calls = localMcpNetwork();
    const VALUE = "Bearer mcp-env-VALUE";
    const title = uniq("narrowed_mcp").replace(/-/g, "_");
    const declared = await callWith({ SECRET_MCP: VALUE }, "POST", "/api/mcp-config/entries", {
      key: await admin(),
      body: { title, config: { type: "http", url: MCP_URL, headers: { authorization: { env: "SECRET_MCP" } } } },
    });
    expect(declared.status, declared.text).toBe(200);
    expect(declared.body.data.status.status).toBe("ok");
    const before = calls.length;
    expect(calls.every((c) => c.headers.authorization === VALUE)).toBe(true);

    const reload = await callWith({ SECRET_MCP: VALUE, ...rebound("SECRET_MCP", ["https://elsewhere.example"]) }, "POST", "/api/tools/reload", {
      key: await admin(),
      body: { server: title },
    });
    expect(reload.status).toBe(200);
    expect(reload.body.data.items[0]).toMatchObject({ status: "failed" });
    expect(reload.body.data.items[0].last_error).toContain("env var SECRET_MCP referenced by the declaration may not be sent to this URL's origin");
    expect(reload.text).not.toContain(VALUE);
    expect(calls.slice(before).filter((c) => new URL(c.url).host === MCP_HOST)).toHaveLength(0);
  });
});

describe("stored MCP secret env values stay within the deployment's binding", () => {
  it("refuses to store a value for a name the deployment binds nowhere, or for an origin outside its binding", async () => {
    const key = await admin();
    const unbound = await call("POST", "/api/mcp-config/secret-env", { key, body: { name: "SECRET_NEVER_BOUND", value: "v-1", origins: [MCP_URL] } });
    expect(unbound.status).toBe(400);
    expect(unbound.body.error).toBe(
      "invalid body: name: SECRET_REFERENCE_ORIGINS binds no origin to this name, so its value could be sent nowhere; the operator binds it (env only)",
    );
    const outside = await call("POST", "/api/mcp-config/secret-env", {
      key,
      body: { name: "SECRET_MCP_TOKEN", value: "v-2", origins: [MCP_URL, `${COLLECTOR}/mcp`] },
    });
    expect(outside.status).toBe(400);
    expect(outside.body.error).toBe("invalid body: origins[1]: not an origin SECRET_REFERENCE_ORIGINS binds this name to");
    expect(JSON.stringify(outside.body)).not.toContain("v-2");
    expect(await env.DB.prepare("SELECT COUNT(*) AS n FROM mcp_secret_env WHERE name IN ('SECRET_NEVER_BOUND', 'SECRET_MCP_TOKEN')").first("n")).toBe(0);
  });
});
