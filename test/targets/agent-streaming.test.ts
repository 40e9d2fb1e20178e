import { describe, expect, it } from "vitest";
import { MAX_RESPONSE_BYTES } from "../../src/outbound/fetch";
import { SseDataReader } from "../../src/outbound/stream";
import { type AgentEvent, TurnStopped } from "../../src/targets/agents/events";
import { runAgent } from "../../src/targets/agents/run";
import { streamAgentRun } from "../../src/targets/agents/sse";
import { collectRunSteps } from "../../src/shared/run-steps";
import { must } from "../../src/platform/must";
import { admin, call, mintKey, uniq } from "../helpers/http";
import { answerOnly, fakeFetch, fakeNetwork, json } from "../helpers/network";
import { callWith, parseSse, testContext } from "./helpers";

const LLM_BASE = "https://llm.example/v1";
const COMPLETIONS = `${LLM_BASE}/chat/completions`;

async function declareAgent(body: Record<string, unknown>): Promise<string> {
  const title = uniq("agent");
  const r = await call("POST", "/api/agents-config/entries", { key: await admin(), body: { title, ...body } });
  if (r.status !== 200) throw new Error(`declare failed ${r.status} ${JSON.stringify(r.body)}`);
  return title;
}

const llmAgent = (config: Record<string, unknown> = {}) => declareAgent({ kind: "llm", config: { base_url: LLM_BASE, model: "m", ...config } });

/** One chat-completions chunk as an SSE event. */
const chunk = (delta: Record<string, unknown>) => `data: ${JSON.stringify({ id: "x", object: "chat.completion.chunk", choices: [{ index: 0, delta }] })}\n\n`;
const DONE = "data: [DONE]\n\n";
const toolDelta = (index: number, fn: { name?: string; arguments?: string }, id?: string) => ({
  tool_calls: [{ index, ...(id ? { id, type: "function" } : {}), function: fn }],
});

const encoder = new TextEncoder();

/** A stream the test feeds by hand; `cancelled` resolves once the reader gave up on it. */
function handFed() {
  let controller!: ReadableStreamDefaultController<Uint8Array>;
  let cancelled!: () => void;
  const gone = new Promise<void>((r) => (cancelled = r));
  const body = new ReadableStream<Uint8Array>({
    start: (c) => void (controller = c),
    cancel: () => cancelled(),
  });
  return {
    response: () => new Response(body, { headers: { "content-type": "text/event-stream" } }),
    push: (text: string) => controller.enqueue(encoder.encode(text)),
    end: () => controller.close(),
    cancelled: gone,
  };
}

/** An event-stream answer made of `parts`, each its own network chunk. */
function streamed(parts: string[]): Response {
  let i = 0;
  const body = new ReadableStream<Uint8Array>({
    pull: (c) => {
      if (i < parts.length) c.enqueue(encoder.encode(parts[i++]));
      else c.close();
    },
  });
  return new Response(body, { headers: { "content-type": "text/event-stream; charset=utf-8" } });
}

function collect(onDelta?: (e: AgentEvent) => void) {
  const events: AgentEvent[] = [];
  return {
    events,
    onEvent: (e: AgentEvent) => {
      events.push(e);
      if (e.type === "message_delta") onDelta?.(e);
    },
  };
}

const deltas = (events: AgentEvent[]) => events.flatMap((e) => (e.type === "message_delta" ? [e.text] : []));

describe("reading a server-sent events stream", () => {
  it("hands out each event's data, whatever the chunking and line endings", () => {
    const text = 'data: {"a":1}\r\n\r\n: a comment\n\nevent: x\nid: 7\ndata: one\ndata:two\n\ndata: é\r\rdata: last';
    const bytes = encoder.encode(text);
    for (const size of [1, 2, 3, 7, bytes.length]) {
      const reader = new SseDataReader();
      const out: string[] = [];
      for (let at = 0; at < bytes.length; at += size) out.push(...reader.push(bytes.slice(at, at + size)));
      out.push(...reader.end());
      expect(out, `chunks of ${size}`).toEqual(['{"a":1}', "one\ntwo", "é", "last"]);
    }
  });
});

describe("a streaming llm endpoint", () => {
  it("forwards content as several deltas while it streams; they join into the final text", async () => {
    const agent = await llmAgent();
    const feed = handFed();
    const llm = fakeFetch(() => feed.response());
    let firstDelta!: () => void;
    const first = new Promise<void>((r) => (firstDelta = r));
    const { events, onEvent } = collect(() => firstDelta());
    const ctx = testContext({ fetch: llm.fetch });
    const thread = uniq("t");
    const run = runAgent(ctx, agent, { thread_id: thread, user_message: "hi" }, { onEvent });

    feed.push(chunk({ role: "assistant", content: "" }) + chunk({ content: "Hel" }));
    // The first delta is out while the model is still answering.
    await first;
    expect(deltas(events)).toEqual(["Hel"]);
    feed.push(chunk({ content: "lo, " }));
    feed.push(chunk({ content: "world" }) + DONE);
    feed.end();

    expect(await run).toEqual({ ok: true, text: "Hello, world" });
    expect(events).toEqual([
      { type: "message_delta", text: "Hel" },
      { type: "message_delta", text: "lo, " },
      { type: "message_delta", text: "world" },
      { type: "message_final", text: "Hello, world" },
    ]);
    expect(llm.calls[0].json).toMatchObject({ model: "m", stream: true });
    expect(llm.calls[0].json.stream_options).toBeUndefined();
    expect(llm.calls[0].headers.accept).toBe("text/event-stream, application/json");
    expect(await ctx.checkpoints.read(thread)).toEqual([
      { role: "user", content: "hi" },
      { role: "assistant", content: "Hello, world" },
    ]);
  });

  it("holds back a blank start, so a silent streamed answer emits no delta", async () => {
    const agent = await llmAgent();
    const silent = fakeFetch(() => streamed([chunk({ content: " " }), chunk({ content: "\n" }), DONE]));
    const quiet = collect();
    expect(await runAgent(testContext({ fetch: silent.fetch }), agent, { thread_id: uniq("t"), user_message: "x" }, quiet)).toEqual({ ok: true, text: null });
    expect(quiet.events).toEqual([{ type: "message_final", text: null }]);

    const late = fakeFetch(() => streamed([chunk({ content: "\n" }), chunk({ content: "Hi" }), chunk({ content: "!" }), DONE]));
    const { events, onEvent } = collect();
    expect(await runAgent(testContext({ fetch: late.fetch }), agent, { thread_id: uniq("t"), user_message: "x" }, { onEvent })).toEqual({
      ok: true,
      text: "\nHi!",
    });
    expect(deltas(events)).toEqual(["\nHi", "!"]);
  });

  it("puts tool calls together by index from split pieces and runs them, then streams the answer", async () => {
    const agent = await llmAgent({ tool_names: ["echo"] });
    let n = 0;
    const llm = fakeFetch(() => {
      n += 1;
      if (n === 1)
        return streamed([
          chunk({ role: "assistant", content: "Checking." }),
          chunk(toolDelta(0, { name: "echo", arguments: "" }, "c1")),
          chunk(toolDelta(0, { arguments: '{"mess' })),
          chunk(toolDelta(1, { name: "echo", arguments: '{"message"' }, "c2")),
          chunk(toolDelta(0, { arguments: 'age":"one"}' })),
          chunk(toolDelta(1, { arguments: ':"two"}' })),
          `data: ${JSON.stringify({ choices: [{ index: 0, delta: {}, finish_reason: "tool_calls" }] })}\n\n`,
          DONE,
        ]);
      return streamed([chunk({ content: "one, " }), chunk({ content: "two" }), DONE]);
    });
    const { events, onEvent } = collect();
    const ctx = testContext({ fetch: llm.fetch });
    const thread = uniq("t");
    expect(await runAgent(ctx, agent, { thread_id: thread, user_message: "x" }, { onEvent })).toEqual({ ok: true, text: "one, two" });
    expect(events).toEqual([
      { type: "message_delta", text: "Checking." },
      { type: "tool_call_step", tool: "echo", args: { message: "one" }, call_id: "c1" },
      { type: "tool_result_step", tool: "echo", call_id: "c1", result: "one", is_error: false },
      { type: "tool_call_step", tool: "echo", args: { message: "two" }, call_id: "c2" },
      { type: "tool_result_step", tool: "echo", call_id: "c2", result: "two", is_error: false },
      { type: "message_delta", text: "one, " },
      { type: "message_delta", text: "two" },
      { type: "message_final", text: "one, two" },
    ]);
    const calls = [
      { id: "c1", type: "function", function: { name: "echo", arguments: '{"message":"one"}' } },
      { id: "c2", type: "function", function: { name: "echo", arguments: '{"message":"two"}' } },
    ];
    expect(llm.calls[1].json.messages.slice(-3)).toEqual([
      { role: "assistant", content: "Checking.", tool_calls: calls },
      { role: "tool", tool_call_id: "c1", name: "echo", content: "one" },
      { role: "tool", tool_call_id: "c2", name: "echo", content: "two" },
    ]);
    expect(await ctx.checkpoints.read(thread)).toHaveLength(5);
  });

  it("still takes a plain JSON answer to a stream request: one delta", async () => {
    const agent = await llmAgent();
    const llm = fakeFetch(() => json({ choices: [{ message: { role: "assistant", content: "whole" } }] }));
    const { events, onEvent } = collect();
    expect(await runAgent(testContext({ fetch: llm.fetch }), agent, { thread_id: uniq("t"), user_message: "x" }, { onEvent })).toEqual({
      ok: true,
      text: "whole",
    });
    expect(llm.calls[0].json.stream).toBe(true);
    expect(events).toEqual([
      { type: "message_delta", text: "whole" },
      { type: "message_final", text: "whole" },
    ]);
  });

  it("traces the whole streamed call as one llm step", async () => {
    const agent = await llmAgent();
    const ctx = testContext({ fetch: fakeFetch(() => streamed([chunk({ content: "a" }), chunk({ content: "b" }), DONE])).fetch });
    const { value, steps } = await collectRunSteps(ctx, () => runAgent(ctx, agent, { thread_id: uniq("t"), user_message: "x" }, {}));
    expect(value).toEqual({ ok: true, text: "ab" });
    expect(steps).toMatchObject([{ kind: "llm", name: "m", outcome: "ok", error: null }]);
  });

  it("fails a malformed stream with a safe message that never echoes the endpoint", async () => {
    const agent = await llmAgent();
    const secret = "internal-detail-4711";
    const cases: Array<{ parts: string[]; message: string }> = [
      {
        parts: [chunk({ content: "ok so far" }), `data: {not json ${secret}\n\n`],
        message: "LLM endpoint streamed a chunk that is not a chat-completions chunk",
      },
      { parts: [`data: ${JSON.stringify({ error: { message: secret } })}\n\n`], message: "LLM endpoint streamed a chunk that is not a chat-completions chunk" },
      { parts: [chunk(toolDelta(0, { arguments: `{"q":"${secret}"}` })), DONE], message: "LLM endpoint streamed a tool call without its id or name" },
    ];
    for (const c of cases) {
      const ctx = testContext({ fetch: fakeFetch(() => streamed(c.parts)).fetch });
      const thread = uniq("t");
      const { value: r, steps } = await collectRunSteps(ctx, () => runAgent(ctx, agent, { thread_id: thread, user_message: "x" }, {}));
      expect(r).toEqual({ ok: false, kind: "agent_error", message: c.message });
      expect(JSON.stringify(steps)).not.toContain(secret);
      expect(await ctx.checkpoints.read(thread)).toEqual([]);
    }
  });

  it("fails a stream over the size cap and stops reading it", async () => {
    const agent = await llmAgent();
    const feed = handFed();
    const piece = chunk({ content: "x".repeat(64 * 1024) });
    const llm = fakeFetch(() => {
      for (let sent = 0; sent <= MAX_RESPONSE_BYTES; sent += piece.length) feed.push(piece);
      return feed.response();
    });
    const r = await runAgent(testContext({ fetch: llm.fetch }), agent, { thread_id: uniq("t"), user_message: "x" }, {});
    expect(r).toEqual({ ok: false, kind: "agent_error", message: `LLM endpoint answered more than ${MAX_RESPONSE_BYTES} bytes` });
    await feed.cancelled;
  });

  it("keeps the deadline over the whole stream and follows no redirect", async () => {
    const agent = await llmAgent({ timeout_seconds: 0.2 });
    const feed = handFed();
    const slow = fakeFetch(() => feed.response());
    const { events, onEvent } = collect();
    const run = runAgent(testContext({ fetch: slow.fetch }), agent, { thread_id: uniq("t"), user_message: "x" }, { onEvent });
    feed.push(chunk({ content: "started" }));
    expect(await run).toEqual({ ok: false, kind: "agent_error", message: "LLM endpoint did not answer within 0.2s" });
    expect(deltas(events)).toEqual(["started"]);
    await feed.cancelled;

    const moved = fakeFetch(() => new Response(null, { status: 302, headers: { location: "https://elsewhere.example/" } }));
    expect(await runAgent(testContext({ fetch: moved.fetch }), agent, { thread_id: uniq("t"), user_message: "x" }, {})).toEqual({
      ok: false,
      kind: "agent_error",
      message: "LLM endpoint answered HTTP 302",
    });
    expect(moved.calls).toHaveLength(1);
  });
});

describe("stopping a run", () => {
  it("throws TurnStopped before the first model call, calling nothing", async () => {
    const agent = await llmAgent();
    const llm = fakeFetch(() => streamed([chunk({ content: "never" }), DONE]));
    const stop = new AbortController();
    stop.abort();
    const ctx = testContext({ fetch: llm.fetch, signal: stop.signal });
    await expect(runAgent(ctx, agent, { thread_id: uniq("t"), user_message: "x" }, {})).rejects.toBeInstanceOf(TurnStopped);
    await expect(runAgent(ctx, "echo", { thread_id: uniq("t"), user_message: "x" }, {})).rejects.toThrow(TurnStopped);
    expect(llm.calls).toEqual([]);
  });

  it("ends the stream mid-answer: TurnStopped, the stream cancelled, no memory, no further call", async () => {
    const agent = await llmAgent();
    const feed = handFed();
    const llm = fakeFetch(() => feed.response());
    const stop = new AbortController();
    const { events, onEvent } = collect(() => stop.abort());
    const ctx = testContext({ fetch: llm.fetch, signal: stop.signal });
    const thread = uniq("t");
    const run = runAgent(ctx, agent, { thread_id: thread, user_message: "x" }, { onEvent });
    feed.push(chunk({ content: "The answer is" }));
    const err = await run.catch((e: unknown) => e);
    expect(err).toBeInstanceOf(TurnStopped);
    expect((err as Error).name).toBe("TurnStopped");
    await feed.cancelled;
    expect(deltas(events)).toEqual(["The answer is"]);
    expect(events.some((e) => e.type === "message_final")).toBe(false);
    expect(llm.calls).toHaveLength(1);
    expect(llm.calls[0].signal?.aborted).toBe(true);
    expect(await ctx.checkpoints.read(thread)).toEqual([]);
  });

  it("stops between a tool call and the next model call", async () => {
    const agent = await llmAgent({ tool_names: ["echo"] });
    const stop = new AbortController();
    const llm = fakeFetch(() =>
      streamed([
        chunk(toolDelta(0, { name: "echo", arguments: '{"message":"a"}' }, "c1")),
        chunk(toolDelta(1, { name: "echo", arguments: '{"message":"b"}' }, "c2")),
        DONE,
      ]),
    );
    const events: AgentEvent[] = [];
    const onEvent = (e: AgentEvent) => {
      events.push(e);
      // Stopped while the first tool call runs: it finishes, the second never starts.
      if (e.type === "tool_call_step") stop.abort();
    };
    await expect(
      runAgent(testContext({ fetch: llm.fetch, signal: stop.signal }), agent, { thread_id: uniq("t"), user_message: "x" }, { onEvent }),
    ).rejects.toBeInstanceOf(TurnStopped);
    expect(events.map((e) => e.type)).toEqual(["tool_call_step", "tool_result_step"]);
    expect(llm.calls).toHaveLength(1);
  });

  it("stops an http agent's stream too", async () => {
    const agent = await declareAgent({ kind: "http", config: { url: "https://agent.example/stream" } });
    const feed = handFed();
    const edge = fakeFetch(() => feed.response());
    const stop = new AbortController();
    const run = runAgent(
      testContext({ fetch: edge.fetch, signal: stop.signal }),
      agent,
      { thread_id: uniq("t"), user_message: "x" },
      collect(() => stop.abort()),
    );
    feed.push(`data: ${JSON.stringify({ type: "message_delta", text: "partial" })}\n\n`);
    await expect(run).rejects.toBeInstanceOf(TurnStopped);
    await feed.cancelled;
  });
});

describe("a streaming http agent", () => {
  const frame = (f: Record<string, unknown>) => `data: ${JSON.stringify(f)}\n\n`;

  it("forwards message_delta frames as they come; the final frame's text is the answer", async () => {
    const agent = await declareAgent({ kind: "http", config: { url: "https://agent.example/stream" } });
    const edge = fakeFetch(() =>
      streamed([
        frame({ type: "message_delta", text: "Hello" }),
        ": keepalive\n\n",
        frame({ type: "progress", step: "thinking" }),
        frame({ type: "message_delta", text: " there" }),
        frame({ type: "message_final", text: "Hello there" }),
        frame({ type: "message_delta", text: "after the end" }),
      ]),
    );
    const { events, onEvent } = collect();
    expect(await runAgent(testContext({ fetch: edge.fetch }), agent, { thread_id: uniq("t"), user_message: "x" }, { onEvent })).toEqual({
      ok: true,
      text: "Hello there",
    });
    expect(events).toEqual([
      { type: "message_delta", text: "Hello" },
      { type: "message_delta", text: " there" },
      { type: "message_final", text: "Hello there" },
    ]);
    expect(edge.calls[0].headers.accept).toBe("text/event-stream, application/json");
  });

  it("answers the joined deltas without a final frame; a null final is silence", async () => {
    const agent = await declareAgent({ kind: "http", config: { url: "https://agent.example/stream" } });
    const joined = fakeFetch(() => streamed([frame({ type: "message_delta", text: "a" }), frame({ type: "message_delta", text: "b" })]));
    expect(await runAgent(testContext({ fetch: joined.fetch }), agent, { thread_id: uniq("t"), user_message: "x" }, {})).toEqual({ ok: true, text: "ab" });
    const silent = fakeFetch(() => streamed([frame({ type: "message_final", text: null })]));
    const { events, onEvent } = collect();
    expect(await runAgent(testContext({ fetch: silent.fetch }), agent, { thread_id: uniq("t"), user_message: "x" }, { onEvent })).toEqual({
      ok: true,
      text: null,
    });
    expect(events).toEqual([{ type: "message_final", text: null }]);
  });

  it("fails a malformed frame safely", async () => {
    const agent = await declareAgent({ kind: "http", config: { url: "https://agent.example/stream" } });
    for (const bad of [
      "data: secret-body-text\n\n",
      frame({ type: "message_delta", text: 42, secret: "secret-body-text" }),
      frame({ type: "message_final" }),
    ]) {
      const r = await runAgent(testContext({ fetch: fakeFetch(() => streamed([bad])).fetch }), agent, { thread_id: uniq("t"), user_message: "x" }, {});
      expect(r).toEqual({ ok: false, kind: "agent_error", message: "agent endpoint streamed a frame that is not a message_delta or message_final object" });
    }
  });
});

describe("the agent run door", () => {
  it("streams a model's deltas as separate message_delta frames", async () => {
    const agent = await llmAgent();
    fakeNetwork(
      answerOnly({ [`POST ${COMPLETIONS}`]: () => streamed([chunk({ content: "Good " }), chunk({ content: "morning" }), chunk({ content: "!" }), DONE]) }),
    );
    const k = await mintKey({ scopes: ["agents:read", `agent:${agent}`] });
    const r = await callWith({}, "POST", `/api/agents/${agent}/runs`, { key: k.key, body: { user_message: "hi" } });
    expect(r.status).toBe(200);
    expect(parseSse(r.text).map((f) => must("data" in f ? f.data : null, "a data frame"))).toEqual([
      { type: "message_delta", text: "Good " },
      { type: "message_delta", text: "morning" },
      { type: "message_delta", text: "!" },
      { type: "message_final", text: "Good morning!" },
      { type: "stream.end" },
    ]);
  });

  it("writes each delta frame as it arrives, before the model has finished", async () => {
    const agent = await llmAgent();
    const feed = handFed();
    const res = streamAgentRun(testContext({ fetch: fakeFetch(() => feed.response()).fetch }), agent, { thread_id: uniq("t"), user_message: "x" }, {});
    const reader = must(res.body, "the stream's body").getReader();
    const decoder = new TextDecoder();
    let text = "";
    feed.push(chunk({ content: "first" }));
    while (!text.includes("\n\n")) text += decoder.decode((await reader.read()).value);
    expect(parseSse(text)).toEqual([{ data: { type: "message_delta", text: "first" } }]);
    feed.push(chunk({ content: " second" }) + DONE);
    feed.end();
    for (let next = await reader.read(); !next.done; next = await reader.read()) text += decoder.decode(next.value);
    expect(parseSse(text).map((f) => ("data" in f ? f.data.type : f.comment))).toEqual(["message_delta", "message_delta", "message_final", "stream.end"]);
  });
});
