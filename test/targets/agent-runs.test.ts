import { env } from "cloudflare:workers";
import { beforeEach, describe, expect, it } from "vitest";
import { checkpointStoreFor } from "../../src/targets/checkpoints";
import { answerOnly, fakeNetwork, json } from "../helpers/network";
import { admin, call, mintKey, uniq } from "../helpers/http";
import { callWith, parseSse, settingsOf } from "./helpers";
import { must } from "../../src/platform/must";

const LLM_KEY = "sk-door-llm-key";
// Every test starts on a network that answers nothing; a test scripts the endpoints it needs.
beforeEach(() => {
  fakeNetwork(answerOnly({}));
});

async function run(key: string, name: string, body: Record<string, unknown>) {
  return call("POST", `/api/agents/${name}/runs`, { key, body });
}

async function declareAgent(body: Record<string, unknown>) {
  return call("POST", "/api/agents-config/entries", { key: await admin(), body });
}

describe("POST /api/agents/{name}/runs", () => {
  it("streams the echo agent's frames in order and ends with stream.end", async () => {
    const k = await mintKey({ scopes: ["agents:read", "agent:echo"] });
    const r = await run(k.key, "echo", { user_message: "hello", thread_id: uniq("t") });
    expect(r.status).toBe(200);
    expect(r.headers.get("content-type")).toMatch(/^text\/event-stream/);
    expect(r.body as string).toMatch(/^data: /);
    expect(parseSse(r.body as string)).toEqual([
      { data: { type: "message_delta", text: "echo: hello" } },
      { data: { type: "message_final", text: "echo: hello" } },
      { data: { type: "stream.end" } },
    ]);
  });

  it("keeps memory across two runs of the same thread, and mints a fresh thread when none is given", async () => {
    const key = await admin();
    const thread = uniq("door-thread");
    await run(key, "echo", { user_message: "first", thread_id: thread });
    const second = await run(key, "echo", { user_message: "second", thread_id: thread });
    expect(second.headers.get("x-thread-id")).toBe(thread);
    expect(await checkpointStoreFor(env, settingsOf()).read(thread)).toEqual([
      { role: "user", content: "first" },
      { role: "assistant", content: "echo: first" },
      { role: "user", content: "second" },
      { role: "assistant", content: "echo: second" },
    ]);
    const fresh = await run(key, "echo", { user_message: "alone" });
    const freshId = must(fresh.headers.get("x-thread-id"), 'fresh.headers.get("x-thread-id")');
    expect(freshId).toMatch(/^[0-9a-f-]{36}$/);
    expect(await checkpointStoreFor(env, settingsOf()).read(freshId)).toHaveLength(2);
  });

  it("streams an llm run's tool steps, including a call the key may not make", async () => {
    const tool = uniq("secret-tool");
    await call("POST", "/api/tools-config/entries", { key: await admin(), body: { title: tool, kind: "http", url: "https://tools.example/never" } });
    const agent = uniq("llm");
    await declareAgent({
      title: agent,
      kind: "llm",
      config: { base_url: "https://llm.example/v1", model: "m", api_key: { env: "LLM_KEY" }, tool_names: ["echo", tool] },
    });
    let calls = 0;
    fakeNetwork(
      answerOnly({
        "POST https://llm.example/v1/chat/completions": (request) => {
          expect(request.headers.get("authorization")).toBe(`Bearer ${LLM_KEY}`);
          calls += 1;
          if (calls === 1) {
            return json({
              choices: [
                {
                  message: {
                    role: "assistant",
                    content: null,
                    tool_calls: [
                      { id: "c1", type: "function", function: { name: "echo", arguments: '{"message":"pong"}' } },
                      { id: "c2", type: "function", function: { name: tool, arguments: "{}" } },
                    ],
                  },
                },
              ],
            });
          }
          return json({ choices: [{ message: { role: "assistant", content: "all done" } }] });
        },
      }),
    );
    const k = await mintKey({ scopes: ["agents:read", `agent:${agent}`, "tool:echo"] });
    const r = await callWith({ LLM_KEY }, "POST", `/api/agents/${agent}/runs`, { key: k.key, body: { user_message: "go" } });
    expect(r.status).toBe(200);
    expect(parseSse(r.text).map((f) => ("data" in f ? f.data : f))).toEqual([
      { type: "tool_call_step", tool: "echo", args: { message: "pong" }, call_id: "c1" },
      { type: "tool_result_step", tool: "echo", call_id: "c1", result: "pong", is_error: false },
      { type: "tool_call_step", tool, args: {}, call_id: "c2" },
      { type: "tool_result_step", tool, call_id: "c2", result: "permission denied: the execution key may not call this tool", is_error: true },
      { type: "message_delta", text: "all done" },
      { type: "message_final", text: "all done" },
      { type: "stream.end" },
    ]);
    expect(r.text).not.toContain(LLM_KEY);
  });

  it("ends a failed run with stream.error and a client-safe message", async () => {
    const agent = uniq("flaky");
    await declareAgent({ title: agent, kind: "http", config: { url: "https://agent.example/down" } });
    fakeNetwork(answerOnly({ "POST https://agent.example/down": () => json({ trace: "internal detail" }, 500) }));
    const r = await callWith({}, "POST", `/api/agents/${agent}/runs`, { key: await admin(), body: { user_message: "x" } });
    expect(r.status).toBe(200);
    expect(parseSse(r.text)).toEqual([{ data: { type: "stream.error", message: "agent endpoint answered HTTP 500" } }]);
    expect(r.text).not.toContain("internal detail");
  });

  it("refuses unknown fields and bridge thread ids with 400, unknown agents with 404, missing grants with 403", async () => {
    const key = await admin();
    expect((await run(key, "echo", { user_message: "x", extra: 1 })).status).toBe(400);
    const bridge = await run(key, "echo", { user_message: "x", thread_id: "bridge:route:someone" });
    expect(bridge.status).toBe(400);
    expect(bridge.body.error).toMatch(/thread_id/);
    expect(bridge.body.error).not.toContain("someone");
    expect((await run(key, "echo", {})).status).toBe(400);
    expect((await run(key, "echo", { user_message: "" })).status).toBe(400);
    expect((await run(key, uniq("ghost"), { user_message: "x" })).status).toBe(404);
    const noRun = await mintKey({ scopes: ["agents:read"] });
    expect((await run(noRun.key, "echo", { user_message: "x" })).status).toBe(403);
    // Authorization is decided before the lookup: no grant, no hint whether the agent exists.
    expect((await run(noRun.key, uniq("ghost"), { user_message: "x" })).status).toBe(403);
    const noTag = await mintKey({ scopes: ["agent:echo"] });
    expect((await run(noTag.key, "echo", { user_message: "x" })).status).toBe(403);
    const writer = await mintKey({ scopes: ["agents:write"] });
    expect((await run(writer.key, "echo", { user_message: "x" })).status).toBe(200);
  });
});

describe("declaring agents", () => {
  it("declares llm and http agents, lists them with built-ins, and redacts literal headers", async () => {
    const llm = uniq("llm");
    const a = await declareAgent({
      title: llm,
      kind: "llm",
      description: "thinks",
      config: { base_url: "https://llm.example/v1", model: "m", api_key: { env: "LLM_KEY" } },
    });
    expect(a.status).toBe(200);
    expect(a.body.data).toMatchObject({
      created: true,
      agent: {
        title: llm,
        kind: "llm",
        description: "thinks",
        config: { base_url: "https://llm.example/v1", model: "m", api_key: { env: "LLM_KEY" }, max_steps: 8, tool_names: [] },
      },
    });
    const h = uniq("http");
    const b = await declareAgent({
      title: h,
      kind: "http",
      config: { url: "https://agent.example/", headers: { "x-lit": "literal-secret-5", "x-ref": { env: "AGENT_KEY" } } },
    });
    expect(b.body.data.agent.config.headers).toEqual({ "x-lit": "<redacted>", "x-ref": { env: "AGENT_KEY" } });
    expect(JSON.stringify(b.body)).not.toContain("literal-secret-5");
    const again = await declareAgent({ title: h, kind: "http", config: { url: "https://agent.example/v2" } });
    expect(again.body.data).toMatchObject({ created: false, agent: { config: { url: "https://agent.example/v2" } } });

    const list = await call("GET", "/api/agents", { key: (await mintKey({ scopes: ["agents:read"] })).key });
    expect(list.status).toBe(200);
    const names = list.body.data.items.map((i: any) => i.name);
    expect(names).toEqual([...names].sort());
    expect(list.body.data.total).toBe(names.length);
    expect(list.body.data.items).toContainEqual(expect.objectContaining({ name: "echo", kind: "builtin" }));
    expect(list.body.data.items).toContainEqual(expect.objectContaining({ name: llm, kind: "llm", description: "thinks" }));
    const item = list.body.data.items.find((i: any) => i.name === h);
    expect(item).toMatchObject({ kind: "http", input_schema: { required: ["user_message"] } });
  });

  it("validates declarations: an api key must be an env reference; unknown kinds and fields are refused", async () => {
    const plain = await declareAgent({ title: uniq("a"), kind: "llm", config: { base_url: "https://llm.example/v1", model: "m", api_key: "sk-PLAINTEXT" } });
    expect(plain.status).toBe(400);
    expect(plain.body.error).toMatch(/api_key/);
    expect(plain.body.error).not.toContain("sk-PLAINTEXT");
    expect((await declareAgent({ title: uniq("a"), kind: "python", config: {} })).status).toBe(400);
    expect((await declareAgent({ title: uniq("a"), kind: "http", config: { url: "https://a.example/", extra: 1 } })).status).toBe(400);
    expect((await declareAgent({ title: uniq("a"), kind: "llm", config: { base_url: "https://a.example/", model: "m", max_steps: 0 } })).status).toBe(400);
    expect((await declareAgent({ title: "echo", kind: "http", config: { url: "https://a.example/" } })).status).toBe(409);
  });

  it("removes declarations (404 after, 409 for built-ins) and is admin only", async () => {
    const key = await admin();
    const t = uniq("gone");
    await declareAgent({ title: t, kind: "http", config: { url: "https://a.example/" } });
    expect(await call("DELETE", `/api/agents-config/entries/${t}`, { key })).toMatchObject({ status: 200, body: { data: { removed: true, title: t } } });
    expect((await call("DELETE", `/api/agents-config/entries/${t}`, { key })).status).toBe(404);
    expect((await run(key, t, { user_message: "x" })).status).toBe(404);
    expect((await call("DELETE", "/api/agents-config/entries/echo", { key })).status).toBe(409);
    const k = await mintKey({ scopes: ["agents"] });
    expect(
      (await call("POST", "/api/agents-config/entries", { key: k.key, body: { title: uniq("a"), kind: "http", config: { url: "https://a.example/" } } }))
        .status,
    ).toBe(403);
  });
});

describe("OpenAPI", () => {
  it("documents every targets door with its response and errors", async () => {
    const doc = (await call("GET", "/api/openapi.json")).body;
    const expected: Array<[string, string, number[]]> = [
      ["get", "/api/tools", []],
      ["get", "/api/tools/{tool_name}/schema", [404]],
      ["get", "/api/tools-schema", []],
      ["post", "/api/run-tool", [403, 404]],
      ["post", "/api/tools-config/entries", [403, 409]],
      ["delete", "/api/tools-config/entries/{title}", [404, 409]],
      ["get", "/api/agents", []],
      ["post", "/api/agents-config/entries", [409]],
      ["delete", "/api/agents-config/entries/{title}", [404, 409]],
      ["post", "/api/agents/{name}/runs", [400, 403, 404]],
      ["post", "/api/presets", [404, 409]],
      ["get", "/api/presets", []],
      ["get", "/api/presets/{name}", [404]],
      ["delete", "/api/presets/{name}", [404]],
      ["get", "/api/presets/{name}/versions", [404]],
      ["post", "/api/presets/{name}/versions", [404]],
      ["get", "/api/presets/{name}/versions/{version}", [400, 404]],
      ["post", "/api/presets/{name}/rollback", [404]],
      ["put", "/api/presets/{name}/versions/{version}/tags", [400, 404]],
      ["post", "/api/checkpoints/sweep", [403]],
    ];
    for (const [method, path, errors] of expected) {
      const op = doc.paths[path]?.[method];
      expect(op, `${method} ${path}`).toBeDefined();
      for (const e of errors) expect(op.responses[String(e)], `${method} ${path} ${e}`).toBeDefined();
      const ok = op.responses["200"];
      if (path.endsWith("/runs")) expect(ok.content["text/event-stream"]).toBeDefined();
      else expect(ok.content["application/json"].schema.properties.data, `${method} ${path} response`).toBeDefined();
    }
    expect(doc.paths["/api/checkpoints/sweep"].post["x-required-grant"]).toBe("admin");
    expect(doc.paths["/api/run-tool"].post["x-required-grant"]).toBe("admin");
  });
});
