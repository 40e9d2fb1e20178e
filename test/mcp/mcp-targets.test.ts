/**
 * An MCP server's tool as every kind of target: routes, agents and presets can target them, and
 * every call runs under the turn's execution key (docs/mcp.md "Where an MCP tool can be
 * named"). Routes are covered in mcp-servers.test.ts; here: a preset standing on one, an llm agent
 * offering one to its model under a dot-free function name, a background tool run, a run-once
 * schedule and a hook fire. The server is the local SDK server at the network edge.
 */
import { describe, expect, it } from "vitest";
import { type AgentEvent, runAgent } from "../../src/targets/agents/run";
import { admin, call, mintKey, uniq } from "../helpers/http";
import { testContext } from "../targets/helpers";
import { fakeFetch, json } from "../helpers/network";
import { deliver, hook } from "../hooks/helpers";
import { endedRun } from "../tool-runs/helpers";
import { MAINTENANCE_TOOL_NAMES } from "../../src/tool-runs/maintenance";
import { RESERVED_SERVER_TITLES, splitMcpToolName } from "../../src/shared/tool-names";
import { MCP_URL, localMcpNetwork, serveLocalMcp } from "./support/local-mcp";
import { must } from "../../src/platform/must";

const LLM_BASE = "https://llm.example/v1";

/** Declares the local server under a fresh title; answers the title. */
async function server(): Promise<string> {
  localMcpNetwork();
  const title = uniq("srv").replace(/-/g, "_").slice(0, 30);
  const r = await call("POST", "/api/mcp-config/entries", { key: await admin(), body: { title, config: { type: "http", url: MCP_URL } } });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return title;
}

describe("an MCP tool as a target", () => {
  it("a preset stands on it: its fixed kwargs apply, and the grant is the preset's", async () => {
    const t = await server();
    const name = uniq("add_ten").replace(/-/g, "_");
    const created = await call("POST", "/api/presets", { key: await admin(), body: { name, base_tool: `${t}.add`, fixed_kwargs: { b: 10 } } });
    expect(created.status, JSON.stringify(created.body)).toBe(200);
    expect(created.body.data.base_tool).toBe(`${t}.add`);
    const schema = await call("GET", `/api/tools/${name}/schema`, { key: await admin() });
    expect(schema.body.data.input).toMatchObject({ properties: { a: { type: "number" } }, required: ["a"] });
    // The preset's own grant is enough (docs/targets.md): the key has none for the MCP tool.
    const key = await mintKey({ scopes: [`tool:${name}`, "tools:read"] });
    const submitted = await call("POST", "/api/tool-runs", { key: key.key, body: { tool_name: name, arguments: { a: 32 } } });
    expect(submitted.status, JSON.stringify(submitted.body)).toBe(202);
    expect(await endedRun(submitted.body.data.run_id)).toMatchObject({ status: "succeeded", result: "42", caller: key.user_id });
    expect((await call("POST", "/api/run-tool", { key: await admin(), body: { tool_name: name, arguments: { a: 1 } } })).body).toEqual({ data: "11" });
    // A base tool that is not registered is refused as before.
    const missing = await call("POST", "/api/presets", { key: await admin(), body: { name: uniq("nope").replace(/-/g, "_"), base_tool: `${t}.nothing` } });
    expect(missing.status).toBe(404);
    expect(missing.body).toEqual({ error: "base_tool not found" });
  });

  it("an llm agent offers it under a dot-free function name and runs the model's call on the MCP server", async () => {
    const t = await server();
    const agent = uniq("mcp_agent").replace(/-/g, "_");
    const declared = await call("POST", "/api/agents-config/entries", {
      key: await admin(),
      body: { title: agent, kind: "llm", config: { base_url: LLM_BASE, model: "m", tool_names: ["echo", `${t}.add`] } },
    });
    expect(declared.status, JSON.stringify(declared.body)).toBe(200);
    const alias = `${t}__add`;
    const llmBodies: any[] = [];
    const edge = fakeFetch(async (req, body) => {
      if (new URL(req.url).host === new URL(MCP_URL).host) return serveLocalMcp(req);
      llmBodies.push(JSON.parse(body));
      if (llmBodies.length === 1) {
        return json({
          choices: [
            {
              index: 0,
              message: {
                role: "assistant",
                content: null,
                tool_calls: [{ id: "c1", type: "function", function: { name: alias, arguments: '{"a":40,"b":2}' } }],
              },
            },
          ],
        });
      }
      return json({ choices: [{ index: 0, message: { role: "assistant", content: "forty-two" } }] });
    });
    const key = await mintKey({ scopes: [`agent:${agent}`, `tool:${t}.add`] });
    const events: AgentEvent[] = [];
    await runAgent(
      testContext({ fetch: edge.fetch }),
      agent,
      { thread_id: uniq("mcp-agent-thread"), user_message: "add" },
      { asKey: { user_id: key.user_id, fingerprint: key.fingerprint }, onEvent: (e) => void events.push(e) },
    );
    expect(llmBodies[0].tools.map((f: any) => f.function.name)).toEqual(["echo", alias]);
    expect(llmBodies[0].tools[1].function.parameters).toMatchObject({ required: ["a", "b"] });
    // Events name the registry tool; the model's messages keep its function name.
    expect(events).toContainEqual({ type: "tool_result_step", tool: `${t}.add`, call_id: "c1", result: "42", is_error: false });
    expect(llmBodies[1].messages.at(-1)).toEqual({ role: "tool", tool_call_id: "c1", name: alias, content: "42" });
    expect(events.at(-1)).toEqual({ type: "message_final", text: "forty-two" });
  });

  it("a background tool run and a run-once schedule run it as their key", async () => {
    const t = await server();
    const key = await mintKey({ scopes: [`tool:${t}.shout`, "tools:read"] });
    const submitted = await call("POST", "/api/tool-runs", { key: key.key, body: { tool_name: `${t}.shout`, arguments: { text: "in the background" } } });
    expect(submitted.status, JSON.stringify(submitted.body)).toBe(202);
    expect(await endedRun(submitted.body.data.run_id)).toMatchObject({ status: "succeeded", result: "IN THE BACKGROUND", caller: key.user_id });
    const listed = await call("GET", `/api/tool-runs?tool_name=${t}.shout`, { key: await admin() });
    expect(listed.status).toBe(200);
    expect(listed.body.data.items.map((i: any) => i.run_id)).toContain(submitted.body.data.run_id);

    const once = await call("POST", "/api/schedules", {
      key: await admin(),
      body: { tool_name: `${t}.shout`, tool_kwargs: { text: "now" }, schedule_kwargs: {}, execution_key: key.user_id },
    });
    expect(once.status, JSON.stringify(once.body)).toBe(200);
    expect(await endedRun(once.body.data.run_id)).toMatchObject({ status: "succeeded", result: "NOW", origin: "schedule" });
  });

  it("a hook fires it with the expr's output as its input", async () => {
    const t = await server();
    const runner = await mintKey({ scopes: [`tool:${t}.shout`] });
    const topic = uniq("mcp-topic").toLowerCase();
    await hook({ name: uniq("mcp-hook").toLowerCase(), topic, tool: `${t}.shout`, execution_key: runner.user_id, expr: "{text: .title}" });
    const r = await deliver(topic, JSON.stringify({ title: "release shipped" }));
    expect(r.status, JSON.stringify(r.body)).toBe(202);
    expect(await endedRun(r.body.data.fired[0].run_id)).toMatchObject({ status: "succeeded", result: "RELEASE SHIPPED", origin: "hook" });
  });

  it("no MCP server can take a maintenance tool's name: the title is reserved, and a hook cannot fire one", async () => {
    for (const name of MAINTENANCE_TOOL_NAMES) expect(RESERVED_SERVER_TITLES.has(must(splitMcpToolName(name), "splitMcpToolName(name)").server)).toBe(true);
    for (const t of ["maintenance", "Maintenance"]) {
      const r = await call("POST", "/api/mcp-config/entries", { key: await admin(), body: { title: t, config: { type: "http", url: MCP_URL } } });
      expect(r.status).toBe(400);
      expect(r.body.error).toMatch(/title: is reserved/);
    }
    const runner = await mintKey({ scopes: ["*"] });
    const r = await call("POST", "/api/hooks", {
      key: await admin(),
      body: { name: uniq("mh").toLowerCase(), topic: "maint", tool: MAINTENANCE_TOOL_NAMES[0], execution_key: runner.user_id },
    });
    expect(r.status).toBe(400);
    expect(r.body.error).toMatch(/tool: a hook cannot fire a maintenance tool/);
  });
});
