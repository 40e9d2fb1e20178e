import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { type AgentEvent, agentExists, agentKeepsMemory, appendAgentMemory, runAgent } from "../../src/targets/agents/run";
import { streamAgentRun } from "../../src/targets/agents/sse";
import { checkpointStoreFor } from "../../src/targets/checkpoints";
import { admin, call, mintKey, uniq } from "../helpers/http";
import { parseSse, settingsOf, testContext } from "./helpers";
import { fakeFetch, json } from "../helpers/network";
import { must } from "../../src/platform/must";

const LLM_KEY = "sk-llm-test-key-123";
const LLM_BASE = "https://llm.example/v1";

async function declareAgent(body: Record<string, unknown>): Promise<string> {
  const title = uniq("agent");
  const r = await call("POST", "/api/agents-config/entries", { key: await admin(), body: { title, ...body } });
  if (r.status !== 200) throw new Error(`declare failed ${r.status} ${JSON.stringify(r.body)}`);
  return title;
}

async function declareTool(): Promise<string> {
  const title = uniq("lookup");
  await call("POST", "/api/tools-config/entries", { key: await admin(), body: { title, kind: "http", url: "https://tools.example/lookup" } });
  return title;
}

function collect() {
  const events: AgentEvent[] = [];
  return { events, onEvent: (e: AgentEvent) => void events.push(e) };
}

const completion = (message: Record<string, unknown>) =>
  json({ id: "x", object: "chat.completion", choices: [{ index: 0, message: { role: "assistant", ...message } }] });
const toolCall = (id: string, name: string, args: string) => ({ id, type: "function", function: { name, arguments: args } });

/** A scripted OpenAI-compatible chat-completions server: answers the n-th call with script[n]. */
function fakeLlm(script: Array<(body: any) => Response>, others: (req: Request, body: string) => Response = () => json({ unexpected: true }, 599)) {
  let n = 0;
  const llmCalls: any[] = [];
  const edge = fakeFetch((req, text) => {
    if (req.url !== `${LLM_BASE}/chat/completions`) return others(req, text);
    const body = JSON.parse(text);
    llmCalls.push(body);
    const step = script[Math.min(n++, script.length - 1)];
    return step(body);
  });
  return { ...edge, llmCalls };
}

describe("the llm agent", () => {
  it("runs the tool-calling loop: dispatches allowed calls, feeds a denied call back as an error result", async () => {
    const lookup = await declareTool();
    const agent = await declareAgent({
      kind: "llm",
      description: "helper",
      config: { base_url: LLM_BASE, model: "test-model", api_key: { env: "LLM_KEY" }, system_prompt: "Be brief.", tool_names: ["echo", lookup] },
    });
    const key = await mintKey({ scopes: [`agent:${agent}`, "tool:echo"] });
    const llm = fakeLlm([
      () => completion({ content: null, tool_calls: [toolCall("c1", "echo", '{"message":"ping"}'), toolCall("c2", lookup, '{"q":"secret question"}')] }),
      () => completion({ content: "done" }),
    ]);
    const ctx = testContext({ fetch: llm.fetch, vars: { LLM_KEY } });
    const { events, onEvent } = collect();
    const thread = uniq("llm-thread");
    const r = await runAgent(ctx, agent, { thread_id: thread, user_message: "hi" }, { asKey: { user_id: key.user_id, fingerprint: key.fingerprint }, onEvent });

    expect(r).toEqual({ ok: true, text: "done" });
    const denied = "permission denied: the execution key may not call this tool";
    expect(events).toEqual([
      { type: "tool_call_step", tool: "echo", args: { message: "ping" }, call_id: "c1" },
      { type: "tool_result_step", tool: "echo", call_id: "c1", result: "ping", is_error: false },
      { type: "tool_call_step", tool: lookup, args: { q: "secret question" }, call_id: "c2" },
      { type: "tool_result_step", tool: lookup, call_id: "c2", result: denied, is_error: true },
      { type: "message_delta", text: "done" },
      { type: "message_final", text: "done" },
    ]);
    // The denied tool's endpoint was never reached; only the model was called, twice.
    expect(llm.calls.map((c) => c.url)).toEqual([`${LLM_BASE}/chat/completions`, `${LLM_BASE}/chat/completions`]);
    expect(llm.calls[0].headers.authorization).toBe(`Bearer ${LLM_KEY}`);

    const first = llm.llmCalls[0];
    expect(first.model).toBe("test-model");
    expect(first.messages).toEqual([
      { role: "system", content: "Be brief." },
      { role: "user", content: "hi" },
    ]);
    expect(first.tools.map((t: any) => t.function.name)).toEqual(["echo", lookup]);
    expect(first.tools[0].function.parameters).toMatchObject({ required: ["message"] });

    const second = llm.llmCalls[1].messages;
    expect(second.slice(-3)).toEqual([
      { role: "assistant", content: null, tool_calls: [toolCall("c1", "echo", '{"message":"ping"}'), toolCall("c2", lookup, '{"q":"secret question"}')] },
      { role: "tool", tool_call_id: "c1", name: "echo", content: "ping" },
      { role: "tool", tool_call_id: "c2", name: lookup, content: JSON.stringify({ error: denied }) },
    ]);
  });

  it("remembers the thread across runs (the thread's messages are its memory)", async () => {
    const agent = await declareAgent({ kind: "llm", config: { base_url: LLM_BASE, model: "m", system_prompt: "sys", tool_names: ["echo"] } });
    const llm = fakeLlm([
      () => completion({ content: null, tool_calls: [toolCall("c1", "echo", '{"message":"Ada"}')] }),
      () => completion({ content: "Nice to meet you, Ada." }),
      () => completion({ content: "Your name is Ada." }),
    ]);
    const ctx = testContext({ fetch: llm.fetch });
    const thread = uniq("llm-memory");
    expect(await runAgent(ctx, agent, { thread_id: thread, user_message: "I am Ada" }, {})).toEqual({ ok: true, text: "Nice to meet you, Ada." });
    expect(await runAgent(ctx, agent, { thread_id: thread, user_message: "Who am I?" }, {})).toEqual({ ok: true, text: "Your name is Ada." });
    expect(llm.llmCalls[2].messages).toEqual([
      { role: "system", content: "sys" },
      { role: "user", content: "I am Ada" },
      { role: "assistant", content: null, tool_calls: [toolCall("c1", "echo", '{"message":"Ada"}')] },
      { role: "tool", tool_call_id: "c1", name: "echo", content: "Ada" },
      { role: "assistant", content: "Nice to meet you, Ada." },
      { role: "user", content: "Who am I?" },
    ]);
    // The system prompt is configuration, not memory.
    expect((await ctx.checkpoints.read(thread))[0]).toEqual({ role: "user", content: "I am Ada" });
    // Another thread starts empty.
    await runAgent(ctx, agent, { thread_id: uniq("llm-other"), user_message: "hello" }, {});
    expect(llm.llmCalls[3].messages).toEqual([
      { role: "system", content: "sys" },
      { role: "user", content: "hello" },
    ]);
  });

  it("answers unusable tool calls with error results: tools outside tool_names, arguments that are not JSON objects", async () => {
    const agent = await declareAgent({ kind: "llm", config: { base_url: LLM_BASE, model: "m", tool_names: ["echo"] } });
    const llm = fakeLlm([
      () => completion({ tool_calls: [toolCall("a", "set_conversation_mode", '{"mode":"manual"}'), toolCall("b", "echo", "not json")] }),
      () => completion({ content: "ok" }),
    ]);
    const { events, onEvent } = collect();
    const r = await runAgent(testContext({ fetch: llm.fetch }), agent, { thread_id: uniq("t"), user_message: "x" }, { onEvent });
    expect(r).toEqual({ ok: true, text: "ok" });
    const results = events.filter((e) => e.type === "tool_result_step");
    expect(results).toEqual([
      { type: "tool_result_step", tool: "set_conversation_mode", call_id: "a", result: "this tool is not available to this agent", is_error: true },
      { type: "tool_result_step", tool: "echo", call_id: "b", result: "tool arguments are not a JSON object", is_error: true },
    ]);
    expect(events.find((e) => e.type === "tool_call_step" && e.call_id === "b")).toMatchObject({ args: "not json" });
  });

  it("fails after max_steps model calls without a final answer, remembering nothing", async () => {
    const agent = await declareAgent({ kind: "llm", config: { base_url: LLM_BASE, model: "m", tool_names: ["echo"], max_steps: 2 } });
    const llm = fakeLlm([() => completion({ tool_calls: [toolCall("loop", "echo", '{"message":"again"}')] })]);
    const ctx = testContext({ fetch: llm.fetch });
    const thread = uniq("t");
    const r = await runAgent(ctx, agent, { thread_id: thread, user_message: "x" }, {});
    expect(r).toEqual({ ok: false, kind: "agent_error", message: "LLM agent used its 2 steps without a final answer" });
    expect(llm.llmCalls).toHaveLength(2);
    expect(await ctx.checkpoints.read(thread)).toEqual([]);
  });

  it("reports endpoint failures without the api key or the endpoint's body", async () => {
    const agent = await declareAgent({ kind: "llm", config: { base_url: LLM_BASE, model: "m", api_key: { env: "LLM_KEY" } } });
    const llm = fakeLlm([(b) => json({ error: `invalid key ${LLM_KEY} for ${JSON.stringify(b)}` }, 401)]);
    const r = await runAgent(testContext({ fetch: llm.fetch, vars: { LLM_KEY } }), agent, { thread_id: uniq("t"), user_message: "x" }, {});
    expect(r).toEqual({ ok: false, kind: "agent_error", message: "LLM endpoint answered HTTP 401" });

    const garbled = fakeLlm([() => json({ nothing: "useful" })]);
    expect(await runAgent(testContext({ fetch: garbled.fetch }), agent, { thread_id: uniq("t"), user_message: "x" }, {})).toMatchObject({
      ok: false,
      kind: "agent_error",
    });
    const unset = await runAgent(testContext({ fetch: llm.fetch }), agent, { thread_id: uniq("t"), user_message: "x" }, {});
    expect(unset).toEqual({ ok: false, kind: "agent_error", message: "env var LLM_KEY referenced by the declaration is not set" });
  });

  it("treats a blank final answer as silence", async () => {
    const agent = await declareAgent({ kind: "llm", config: { base_url: LLM_BASE, model: "m" } });
    const llm = fakeLlm([() => completion({ content: "   " })]);
    const { events, onEvent } = collect();
    expect(await runAgent(testContext({ fetch: llm.fetch }), agent, { thread_id: uniq("t"), user_message: "x" }, { onEvent })).toEqual({
      ok: true,
      text: null,
    });
    expect(events).toEqual([{ type: "message_final", text: null }]);
  });
});

describe("the http agent", () => {
  it("POSTs {thread_id, messages, input} and answers the endpoint's text", async () => {
    const agent = await declareAgent({ kind: "http", config: { url: "https://agent.example/turn", headers: { "x-agent-key": { env: "AGENT_KEY" } } } });
    const edge = fakeFetch((_req, body) => json({ text: `you said ${JSON.parse(body).input.user_message}` }));
    const { events, onEvent } = collect();
    const thread = uniq("http-thread");
    const r = await runAgent(
      testContext({ fetch: edge.fetch, vars: { AGENT_KEY: "agent-secret" } }),
      agent,
      { thread_id: thread, user_message: "hey" },
      { onEvent },
    );
    expect(r).toEqual({ ok: true, text: "you said hey" });
    expect(edge.calls[0]).toMatchObject({
      url: "https://agent.example/turn",
      method: "POST",
      headers: { "x-agent-key": "agent-secret" },
      json: { thread_id: thread, messages: [{ role: "user", content: "hey" }], input: { user_message: "hey" } },
    });
    expect(events).toEqual([
      { type: "message_delta", text: "you said hey" },
      { type: "message_final", text: "you said hey" },
    ]);
  });

  it("passes silence through ({text: null} or blank)", async () => {
    const agent = await declareAgent({ kind: "http", config: { url: "https://agent.example/quiet" } });
    for (const text of [null, "", "  \n"]) {
      const { events, onEvent } = collect();
      const r = await runAgent(testContext({ fetch: fakeFetch(() => json({ text })).fetch }), agent, { thread_id: uniq("t"), user_message: "x" }, { onEvent });
      expect(r).toEqual({ ok: true, text: null });
      expect(events).toEqual([{ type: "message_final", text: null }]);
    }
  });

  it("fails on a non-2xx answer or a body without text", async () => {
    const agent = await declareAgent({ kind: "http", config: { url: "https://agent.example/broken" } });
    expect(await runAgent(testContext({ fetch: fakeFetch(() => json({}, 500)).fetch }), agent, { thread_id: uniq("t"), user_message: "x" }, {})).toEqual({
      ok: false,
      kind: "agent_error",
      message: "agent endpoint answered HTTP 500",
    });
    expect(
      await runAgent(testContext({ fetch: fakeFetch(() => json({ answer: "x" })).fetch }), agent, { thread_id: uniq("t"), user_message: "x" }, {}),
    ).toMatchObject({
      ok: false,
      kind: "agent_error",
    });
  });
});

describe("the echo agent and memory hooks", () => {
  it("answers echo: <text> and remembers both sides across runs of a thread", async () => {
    const ctx = testContext();
    const thread = uniq("echo-thread");
    expect(await runAgent(ctx, "echo", { thread_id: thread, user_message: "one" }, {})).toEqual({ ok: true, text: "echo: one" });
    expect(await runAgent(ctx, "echo", { thread_id: thread, user_message: "two" }, {})).toEqual({ ok: true, text: "echo: two" });
    expect(await ctx.checkpoints.read(thread)).toEqual([
      { role: "user", content: "one" },
      { role: "assistant", content: "echo: one" },
      { role: "user", content: "two" },
      { role: "assistant", content: "echo: two" },
    ]);
  });

  it("says which agents keep memory and appends to it (manual mode, operator send)", async () => {
    const ctx = testContext();
    const llm = await declareAgent({ kind: "llm", config: { base_url: LLM_BASE, model: "m" } });
    const http = await declareAgent({ kind: "http", config: { url: "https://agent.example/" } });
    expect(await agentKeepsMemory(ctx, "echo")).toBe(true);
    expect(await agentKeepsMemory(ctx, llm)).toBe(true);
    expect(await agentKeepsMemory(ctx, http)).toBe(false);
    expect(await agentKeepsMemory(ctx, uniq("ghost"))).toBe(false);
    expect(await agentExists(ctx, http)).toBe(true);
    expect(await agentExists(ctx, uniq("ghost"))).toBe(false);

    const thread = uniq("manual");
    await appendAgentMemory(ctx, "echo", thread, { role: "user", content: "while manual" });
    await appendAgentMemory(ctx, llm, thread, { role: "assistant", content: "operator said" });
    expect(await ctx.checkpoints.read(thread)).toEqual([
      { role: "user", content: "while manual" },
      { role: "assistant", content: "operator said" },
    ]);
    await expect(appendAgentMemory(ctx, http, thread, { role: "user", content: "x" })).rejects.toThrow(/keeps no thread memory/);
  });

  it("appends through whichever provider is configured", async () => {
    const ctx = testContext({ vars: { LLM_PROVIDER_CHECKPOINT: "d1" } });
    const thread = uniq("d1-echo");
    await runAgent(ctx, "echo", { thread_id: thread, user_message: "stored in d1" }, {});
    expect(await checkpointStoreFor(env, settingsOf({ LLM_PROVIDER_CHECKPOINT: "d1" })).read(thread)).toHaveLength(2);
  });
});

describe("running as an execution key", () => {
  it("authorizes agent:<name> live at run start", async () => {
    const ctx = testContext();
    const ok = await mintKey({ scopes: ["agent:echo"] });
    expect(
      await runAgent(ctx, "echo", { thread_id: uniq("t"), user_message: "x" }, { asKey: { user_id: ok.user_id, fingerprint: ok.fingerprint } }),
    ).toMatchObject({ ok: true });
    const other = await mintKey({ scopes: ["agent:someone-else", "tools"] });
    const denied = await runAgent(
      ctx,
      "echo",
      { thread_id: uniq("t"), user_message: "x" },
      { asKey: { user_id: other.user_id, fingerprint: other.fingerprint } },
    );
    expect(denied).toEqual({ ok: false, kind: "denied", message: "execution key may not run agent echo" });
    await call("PUT", `/api/auth/api-keys/${ok.user_id}`, { key: await admin(), body: { disabled: true } });
    expect(
      await runAgent(ctx, "echo", { thread_id: uniq("t"), user_message: "x" }, { asKey: { user_id: ok.user_id, fingerprint: ok.fingerprint } }),
    ).toMatchObject({
      ok: false,
      kind: "denied",
    });
  });

  it("reports an unknown agent", async () => {
    expect(await runAgent(testContext(), uniq("ghost"), { thread_id: uniq("t"), user_message: "x" }, {})).toEqual({
      ok: false,
      kind: "unknown_agent",
      message: "agent is not registered",
    });
  });
});

describe("the SSE stream", () => {
  it("sends keepalive comments while the run is quiet, then the frames", async () => {
    const agent = await declareAgent({ kind: "http", config: { url: "https://agent.example/slow" } });
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    const edge = fakeFetch(async () => {
      await gate;
      return json({ text: "finally" });
    });
    const res = streamAgentRun(testContext({ fetch: edge.fetch }), agent, { thread_id: uniq("t"), user_message: "x" }, { keepaliveMs: 5 });
    const reader = must(res.body, "res.body").getReader();
    const decoder = new TextDecoder();
    let text = "";
    while (!text.includes(": keepalive\n\n")) {
      const { value, done } = await reader.read();
      if (done) break;
      text += decoder.decode(value);
    }
    release();
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      text += decoder.decode(value);
    }
    const events = parseSse(text);
    expect(events[0]).toEqual({ comment: "keepalive" });
    expect(events.filter((e) => "data" in e)).toEqual([
      { data: { type: "message_delta", text: "finally" } },
      { data: { type: "message_final", text: "finally" } },
      { data: { type: "stream.end" } },
    ]);
  });
});
