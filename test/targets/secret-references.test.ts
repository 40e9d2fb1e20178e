/**
 * Secret references are scoped (decisions §14): `{"env": "VAR"}` resolves
 * only `SECRET_*` names and names listed in SECRET_REFERENCE_ALLOWLIST; the service's own
 * settings, its bindings and channel secrets never resolve. The workers bindings allowlist the
 * names the other test files use (vitest.config.ts); these tests override the allowlist where it matters.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import type { Env } from "../../src/platform/env";
import { isForbiddenReference, isReferenceable } from "../../src/platform/settings/secret-references";
import { runAgent } from "../../src/targets/agents/run";
import { EnvRefError, resolveEnvRef, resolveHeaders } from "../../src/outbound/env-refs";
import { fakeFetch, fakeNetwork, json } from "../helpers/network";
import { admin, call, uniq } from "../helpers/http";
import { callWith, testContext } from "./helpers";

const NO_ALLOWLIST = { SECRET_REFERENCE_ALLOWLIST: "" };

async function declareTool(headers: Record<string, unknown>, vars?: Record<string, unknown>) {
  const title = uniq("scoped");
  const opts = { key: await admin(), body: { title, kind: "http", url: "https://tools.example/scoped", headers } };
  const r = vars ? await callWith(vars, "POST", "/api/tools-config/entries", opts) : await call("POST", "/api/tools-config/entries", opts);
  return { title, ...r };
}

async function declareAgent(body: Record<string, unknown>, vars?: Record<string, unknown>) {
  const title = uniq("scoped-agent");
  const opts = { key: await admin(), body: { title, ...body } };
  const r = vars ? await callWith(vars, "POST", "/api/agents-config/entries", opts) : await call("POST", "/api/agents-config/entries", opts);
  return { title, ...r };
}

function expectScopeRefusal(r: { status: number; body: any }, fields: string, hidden: string) {
  expect(r.status).toBe(400);
  expect(r.body.error).toMatch(
    new RegExp(
      `^invalid body: ${fields.replace(/[.*]/g, "\\$&")}: references? (an )?env vars? outside the secret-reference scope; only env vars named SECRET_\\* or listed in SECRET_REFERENCE_ALLOWLIST may be referenced`,
    ),
  );
  expect(JSON.stringify(r.body)).not.toContain(hidden);
}

describe("the secret-reference scope (pure)", () => {
  it("lets SECRET_* and allowlisted names through, nothing else", () => {
    expect(isReferenceable("SECRET_WEATHER", [])).toBe(true);
    expect(isReferenceable("WEATHER_TOKEN", [])).toBe(false);
    expect(isReferenceable("WEATHER_TOKEN", ["WEATHER_TOKEN"])).toBe(true);
    expect(isReferenceable("secret_weather", [])).toBe(false); // env names are case-sensitive
    expect(isReferenceable("not a name", ["not a name"])).toBe(false);
  });

  it.each([
    "ACCESS_CONTROL_BOOTSTRAP_TOKEN",
    "CONVERSATIONS_STORE_URL",
    "LLM_PROVIDER_CHECKPOINT",
    "OUTBOUND_ALLOW_PRIVATE_HOSTS",
    "JQ_BUDGET_STEPS",
    "SECRET_REFERENCE_ALLOWLIST",
    "CHANNEL_TELEGRAM_BOT_TOKEN",
    "CHANNEL_SLACK_SIGNING_SECRET",
    "Channel_Slack_Bot_Token",
    "DB",
    "THREADS",
  ])("never resolves %s, even when allowlisted", (name) => {
    expect(isForbiddenReference(name)).toBe(true);
    expect(isReferenceable(name, [name])).toBe(false);
  });

  it("treats a name bound to a non-string as a binding", () => {
    expect(isReferenceable("SECRET_BOUND", [], { SECRET_BOUND: {} })).toBe(false);
    expect(isReferenceable("SECRET_PLAIN", [], { SECRET_PLAIN: "v" })).toBe(true);
  });

  it("refuses at resolution too, naming the variable and the rule, never a value", () => {
    const e = {
      SECRET_OK: "ok-value",
      OTHER: "other-value",
      ACCESS_CONTROL_BOOTSTRAP_TOKEN: "boot-value",
      SECRET_REFERENCE_ALLOWLIST: "OTHER",
    } as unknown as Env;
    expect(resolveEnvRef(e, { env: "SECRET_OK" })).toBe("ok-value");
    expect(resolveEnvRef(e, { env: "OTHER" })).toBe("other-value");
    for (const name of ["ACCESS_CONTROL_BOOTSTRAP_TOKEN", "UNLISTED"]) {
      let err: unknown;
      try {
        resolveHeaders(e, { authorization: { env: name } }, "https://t.example/run");
      } catch (x) {
        err = x;
      }
      expect(err).toBeInstanceOf(EnvRefError);
      expect((err as Error).message).toBe(
        `env var ${name} referenced by the declaration may not be referenced (only env vars named SECRET_* or listed in SECRET_REFERENCE_ALLOWLIST may be referenced; the service's own settings, its bindings, channel secrets and connector client credentials never)`,
      );
      expect((err as Error).message).not.toContain("boot-value");
    }
  });
});

describe("secret references at the declaration doors", () => {
  it('refuses {"env": "ACCESS_CONTROL_BOOTSTRAP_TOKEN"} in a tool header with 400 naming the header', async () => {
    const r = await declareTool({ authorization: { env: "ACCESS_CONTROL_BOOTSTRAP_TOKEN" }, "x-ok": "literal" });
    expectScopeRefusal(r, "headers.authorization", "ACCESS_CONTROL_BOOTSTRAP_TOKEN");
    expect(JSON.stringify(r.body)).not.toContain(String(env.ACCESS_CONTROL_BOOTSTRAP_TOKEN));
  });

  it('refuses {"env": "CHANNEL_TELEGRAM_BOT_TOKEN"} in a tool header with 400, even when allowlisted in the request\'s env', async () => {
    const r = await declareTool({ "x-bot": { env: "CHANNEL_TELEGRAM_BOT_TOKEN" } });
    expectScopeRefusal(r, "headers.x-bot", "CHANNEL_TELEGRAM_BOT_TOKEN");
    // An allowlist naming it is itself invalid: the whole service answers 500 naming the setting.
    const listed = await declareTool({ "x-bot": { env: "CHANNEL_TELEGRAM_BOT_TOKEN" } }, { SECRET_REFERENCE_ALLOWLIST: "CHANNEL_TELEGRAM_BOT_TOKEN" });
    expect(listed.status).toBe(500);
    expect(JSON.stringify(listed.body)).toContain("SECRET_REFERENCE_ALLOWLIST");
    expect(JSON.stringify(listed.body)).not.toContain(String(env.CHANNEL_TELEGRAM_BOT_TOKEN));
  });

  it("names every refused header, and refuses llm api_key and http agent headers the same way", async () => {
    const two = await declareTool({ a: { env: "CONVERSATIONS_STORE_URL" }, b: { env: "SECRET_FINE" }, c: { env: "UNLISTED_VAR" } });
    expectScopeRefusal(two, "headers.a, headers.c", "UNLISTED_VAR");
    const llm = await declareAgent({
      kind: "llm",
      config: { base_url: "https://llm.example/v1", model: "m", api_key: { env: "ACCESS_CONTROL_BOOTSTRAP_TOKEN" } },
    });
    expectScopeRefusal(llm, "config.api_key", "ACCESS_CONTROL_BOOTSTRAP_TOKEN");
    const http = await declareAgent({ kind: "http", config: { url: "https://agent.example/turn", headers: { "x-key": { env: "CHANNEL_SLACK_BOT_TOKEN" } } } });
    expectScopeRefusal(http, "config.headers.x-key", "CHANNEL_SLACK_BOT_TOKEN");
  });

  it("refuses a name outside SECRET_* once the allowlist no longer lists it", async () => {
    const r = await declareTool({ authorization: { env: "TOOL_SECRET" } }, NO_ALLOWLIST);
    expectScopeRefusal(r, "headers.authorization", "TOOL_SECRET");
    const agent = await declareAgent({ kind: "llm", config: { base_url: "https://llm.example/v1", model: "m", api_key: { env: "LLM_KEY" } } }, NO_ALLOWLIST);
    expectScopeRefusal(agent, "config.api_key", "LLM_KEY");
  });
});

describe("secret references at call time", () => {
  it("resolves a SECRET_* name without any allowlist", async () => {
    const calls = fakeNetwork(() => json({ ok: true }));
    const tool = await declareTool({ authorization: { env: "SECRET_SCOPED_TOKEN" } }, NO_ALLOWLIST);
    expect(tool.status).toBe(200);
    const r = await callWith({ ...NO_ALLOWLIST, SECRET_SCOPED_TOKEN: "scoped-value-1" }, "POST", "/api/run-tool", {
      key: await admin(),
      body: { tool_name: tool.title, arguments: {} },
    });
    expect(r.status).toBe(200);
    expect(calls[0].headers.authorization).toBe("scoped-value-1");

    const agent = await declareAgent({ kind: "llm", config: { base_url: "https://llm.example/v1", model: "m", api_key: { env: "SECRET_LLM" } } }, NO_ALLOWLIST);
    expect(agent.status).toBe(200);
    const llm = fakeFetch(() => json({ choices: [{ message: { content: "hi" } }] }));
    const run = await runAgent(
      testContext({ fetch: llm.fetch, vars: { ...NO_ALLOWLIST, SECRET_LLM: "sk-scoped" } }),
      agent.title,
      { thread_id: uniq("t"), user_message: "x" },
      {},
    );
    expect(run).toEqual({ ok: true, text: "hi" });
    expect(llm.calls[0].headers.authorization).toBe("Bearer sk-scoped");
  });

  it("refuses again at call time a stored reference the allowlist no longer lists, and sends nothing", async () => {
    const calls = fakeNetwork(() => json({ ok: true }));
    const tool = await declareTool({ authorization: { env: "TOOL_SECRET" } });
    expect(tool.status).toBe(200);
    const r = await callWith({ ...NO_ALLOWLIST, TOOL_SECRET: "tool-secret-value" }, "POST", "/api/run-tool", {
      key: await admin(),
      body: { tool_name: tool.title, arguments: {} },
    });
    expect(r.status).toBe(500);
    expect(r.body.code).toBe("tool-error");
    expect(r.body.error).toContain("env var TOOL_SECRET referenced by the declaration may not be referenced");
    expect(r.text).not.toContain("tool-secret-value");
    expect(calls).toHaveLength(0);

    const agent = await declareAgent({ kind: "http", config: { url: "https://agent.example/turn", headers: { "x-agent-key": { env: "AGENT_KEY" } } } });
    expect(agent.status).toBe(200);
    const edge = fakeFetch(() => json({ text: "reached" }));
    const run = await runAgent(
      testContext({ fetch: edge.fetch, vars: { ...NO_ALLOWLIST, AGENT_KEY: "agent-secret" } }),
      agent.title,
      { thread_id: uniq("t"), user_message: "x" },
      {},
    );
    expect(run).toMatchObject({ ok: false, kind: "agent_error" });
    expect(JSON.stringify(run)).toContain("env var AGENT_KEY referenced by the declaration may not be referenced");
    expect(edge.calls).toHaveLength(0);
  });
});
