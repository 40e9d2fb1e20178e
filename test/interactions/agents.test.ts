/**
 * ask_user from an llm agent: on a Telegram route the question goes out with an inline
 * keyboard, a tap answers it and the run resumes in the same chat; on the agent run door the stream
 * ends with suspended_final and an operator's answer resumes the run in the background; where no
 * run can park (run-tool, background tool runs) the tool refuses with a clear error.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { createRoute } from "../helpers/bridge";
import { fakeNetwork, type NetCall } from "../helpers/network";
import { postTelegram, TEST_ENV } from "../helpers/webhooks";
import { admin, call, mintKey, uniq } from "../helpers/http";
import { eventually } from "../helpers/threads";
import { checkpointStoreFor } from "../../src/targets/checkpoints";
import { ASK_USER_CANNOT_PARK } from "../../src/targets/tools/builtins";
import { parseSse, settingsOf } from "../targets/helpers";
import { listedAs, pendingOf } from "./helpers";

const LLM = "https://llm.example/v1";

const completion = (message: Record<string, unknown>) =>
  Response.json({ id: "x", object: "chat.completion", choices: [{ index: 0, message: { role: "assistant", ...message } }] });
const toolCall = (id: string, name: string, args: unknown) => ({ id, type: "function", function: { name, arguments: JSON.stringify(args) } });

/** A scripted model: the n-th call answers script[n](body); every call's body is kept. */
function network(script: Array<(body: any) => Response>) {
  const llmBodies: any[] = [];
  const calls = fakeNetwork((req, body) => {
    if (req.url === `${LLM}/chat/completions`) {
      llmBodies.push(JSON.parse(body));
      return script[Math.min(llmBodies.length - 1, script.length - 1)](JSON.parse(body));
    }
    if (new URL(req.url).host === "telegram.fake") return Response.json({ ok: true, result: { message_id: Math.floor(Math.random() * 1e6) } });
    throw new Error(`unexpected outbound request: ${req.method} ${req.url}`);
  });
  return { calls, llmBodies };
}

async function declareAgent(tools: string[] = ["ask_user"]): Promise<string> {
  const title = uniq("asker");
  const r = await call("POST", "/api/agents-config/entries", {
    key: await admin(),
    body: { title, kind: "llm", config: { base_url: LLM, model: "m", tool_names: tools } },
  });
  expect(r.status).toBe(200);
  return title;
}

/** The chat's messages (a turn that runs past the typing delay also sends a chat action, which is no message). */
const telegramSends = (calls: NetCall[]) =>
  calls.filter((c) => c.url.includes("telegram.fake") && !c.url.endsWith("/sendChatAction")).map((c) => JSON.parse(c.body));

describe("an llm agent on a Telegram route asks with two options", () => {
  it("sends the options as an inline keyboard; the tap answers; the run resumes and answers in the same chat", async () => {
    const agent = await declareAgent(["ask_user", "echo"]);
    const k = await mintKey({ scopes: [`agent:${agent}`, "tool:ask_user", "tool:echo"] });
    const route = await createRoute({
      door: "channel",
      channel: "telegram",
      our_identity: TEST_ENV.telegramBotId,
      target_kind: "agent",
      target_name: agent,
      execution_key: k.user_id,
    });
    const net = network([
      () =>
        completion({
          content: null,
          tool_calls: [
            toolCall("c1", "echo", { message: "warming up" }),
            toolCall("c2", "ask_user", {
              question: "Tea or coffee?",
              options: [
                { text: "Tea", id: "tea" },
                { text: "Coffee", id: "coffee" },
              ],
            }),
            toolCall("c3", "echo", { message: "after the ask" }),
          ],
        }),
      () => completion({ content: "Coffee it is." }),
    ]);
    const chat = Number(String(Date.now()).slice(-8));
    const threadId = `bridge:${route.name}:${chat}`;
    const update = (id: number, extra: Record<string, unknown>) => ({ update_id: id, ...extra });
    const base = Number(String(Date.now()).slice(-9));
    expect(
      (
        await postTelegram(
          update(base, {
            message: {
              message_id: 1,
              date: 1,
              chat: { id: chat, type: "private" },
              from: { id: chat, is_bot: false, first_name: "A" },
              text: "A drink, please",
            },
          }),
        )
      ).status,
    ).toBe(200);

    const asked = await eventually(
      async () => telegramSends(net.calls),
      (s) => s.length >= 1,
    );
    expect(asked[0]).toEqual({
      chat_id: String(chat),
      text: "Tea or coffee?",
      reply_markup: { inline_keyboard: [[{ text: "Tea", callback_data: "Tea" }], [{ text: "Coffee", callback_data: "Coffee" }]] },
    });
    const [pending] = await pendingOf(threadId);
    expect(pending).toMatchObject({
      question: "Tea or coffee?",
      target: { kind: "agent", name: agent },
      origin: { kind: "thread", door: "channel", channel: "telegram" },
    });

    // The participant taps "Coffee": Telegram posts a callback query, whose data is the button's.
    const tap = update(base + 1, {
      callback_query: { id: "q1", from: { id: chat, is_bot: false }, data: "Coffee", message: { message_id: 2, chat: { id: chat, type: "private" } } },
    });
    expect((await postTelegram(tap)).status).toBe(200);
    const sent = await eventually(
      async () => telegramSends(net.calls),
      (s) => s.length >= 2,
    );
    expect(sent[1]).toEqual({ chat_id: String(chat), parse_mode: "HTML", text: "Coffee it is." });
    expect(net.llmBodies).toHaveLength(2);

    // The model read the answer as the ask's result; the call after the ask in that step was not run.
    const tail = net.llmBodies[1].messages.slice(-2);
    expect(net.llmBodies[1].messages.map((m: any) => m.role)).toEqual(["user", "assistant", "tool", "tool", "tool"]);
    expect(tail[0]).toMatchObject({ role: "tool", tool_call_id: "c2", name: "ask_user" });
    expect(JSON.parse(tail[0].content)).toMatchObject({
      interaction_id: pending.interaction_id,
      outcome: "answered",
      answer: { text: "Coffee", option: { id: "coffee", text: "Coffee" }, params: { reply_id: "Coffee" }, answered_by: { kind: "participant" } },
    });
    expect(tail[1]).toMatchObject({ role: "tool", tool_call_id: "c3", name: "echo" });
    expect(JSON.parse(tail[1].content).error).toMatch(/^not run: the run paused for ask_user/);
    expect(net.llmBodies[1].messages.find((m: any) => m.tool_call_id === "c1")).toMatchObject({ role: "tool", content: "warming up" });

    // Memory holds the whole run once: the user message, the calls, every result, the answer.
    const memory = await checkpointStoreFor(env, settingsOf()).read(threadId);
    expect(memory.map((m) => m.role)).toEqual(["user", "assistant", "tool", "tool", "tool", "assistant"]);
    expect(memory.at(-1)).toEqual({ role: "assistant", content: "Coffee it is." });
    await listedAs(pending.interaction_id, "answered");
    await call("DELETE", `/api/conversations/${route.name}`, { key: await admin() });
  });
});

describe("ask_user on the agent run door", () => {
  it("ends the stream with suspended_final; an operator's answer resumes the run, recorded on the interaction and as a run", async () => {
    const agent = await declareAgent();
    const caller = await mintKey({ scopes: ["agents:read", `agent:${agent}`, "tool:ask_user"] });
    const net = network([
      () => completion({ content: null, tool_calls: [toolCall("a1", "ask_user", { question: "Which region?", options: [{ text: "EU" }, { text: "US" }] })] }),
      () => completion({ content: "Deploying to EU." }),
    ]);
    const thread = uniq("door-thread");
    const res = await call("POST", `/api/agents/${agent}/runs`, { key: caller.key, body: { user_message: "deploy", thread_id: thread } });
    expect(res.status).toBe(200);
    const frames = parseSse(res.body as string).flatMap((f) => ("data" in f ? [f.data] : []));
    expect(frames.map((f) => f.type)).toEqual(["tool_call_step", "suspended_final", "stream.end"]);
    const suspended = frames[1];
    expect(suspended).toEqual({ type: "suspended_final", interaction_ids: [expect.any(String)], thread_id: thread, expiry_at: expect.any(String) });
    const id = suspended.interaction_ids[0];

    const pending = await listedAs(id, "pending");
    expect(pending).toMatchObject({
      origin: { kind: "agent_run", thread_id: thread, caller: caller.user_id },
      options: [
        { id: "1", text: "EU" },
        { id: "2", text: "US" },
      ],
      reply_message_id: null,
      result: null,
    });

    const answered = await call("POST", `/api/interactions/${id}/answer`, { key: await admin(), body: { option_id: "1" } });
    expect(answered.status).toBe(200);
    const done = await eventually(
      async () => (await call("GET", `/api/interactions?status=answered`, { key: await admin() })).body.data.items.find((i: any) => i.interaction_id === id),
      (i) => Boolean(i?.result),
    );
    expect(done.result).toMatchObject({ outcome: "ok", text: "Deploying to EU.", error: null, next_interaction_id: null, trace_id: expect.any(String) });
    expect(net.llmBodies).toHaveLength(2);
    // The resumed run is a run of its own, found by the interaction id.
    const adminKey = await admin();
    const runs = await eventually(
      () => call("GET", `/api/runs?interaction=${id}`, { key: adminKey }),
      (r) => r.body?.data?.items?.length === 1,
    );
    expect(runs.body.data.items[0]).toMatchObject({
      trace_id: done.result.trace_id,
      kind: "agent_run",
      trigger: "background",
      interaction_id: id,
      outcome: "ok",
      principal: caller.user_id,
    });
    // Memory: the run appended once, at its end.
    const memory = await checkpointStoreFor(env, settingsOf()).read(thread);
    expect(memory.map((m) => m.role)).toEqual(["user", "assistant", "tool", "assistant"]);
  });

  it("a resumed run that asks again parks again: a new interaction", async () => {
    const agent = await declareAgent();
    const caller = await mintKey({ scopes: ["agents:read", `agent:${agent}`, "tool:ask_user"] });
    network([
      () => completion({ content: null, tool_calls: [toolCall("b1", "ask_user", { question: "First?" })] }),
      () => completion({ content: null, tool_calls: [toolCall("b2", "ask_user", { question: "Second?" })] }),
      () => completion({ content: "Both answered." }),
    ]);
    const res = await call("POST", `/api/agents/${agent}/runs`, { key: caller.key, body: { user_message: "go" } });
    const id = parseSse(res.body as string)
      .flatMap((f) => ("data" in f ? [f.data] : []))
      .find((f) => f.type === "suspended_final").interaction_ids[0];
    await listedAs(id, "pending");
    await call("POST", `/api/interactions/${id}/answer`, { key: await admin(), body: { text: "one" } });
    const first = await eventually(
      async () => (await call("GET", `/api/interactions?status=answered`, { key: await admin() })).body.data.items.find((i: any) => i.interaction_id === id),
      (i) => Boolean(i?.result),
    );
    expect(first.result).toMatchObject({ outcome: "suspended", next_interaction_id: expect.any(String) });
    const next = await listedAs(first.result.next_interaction_id, "pending");
    expect(next.question).toBe("Second?");
  });

  it("a run that may not park (no interactions store) sees ask_user refuse, and answers anyway", async () => {
    const agent = await declareAgent();
    const caller = await mintKey({ scopes: ["agents:read", `agent:${agent}`, "tool:ask_user"] });
    const net = network([
      () => completion({ content: null, tool_calls: [toolCall("n1", "ask_user", { question: "Anyone?" })] }),
      () => completion({ content: "I will decide myself." }),
    ]);
    const { callWith } = await import("../targets/helpers");
    const res = await callWith({ INTERACTIONS_STORE_URL: "" }, "POST", `/api/agents/${agent}/runs`, { key: caller.key, body: { user_message: "go" } });
    const frames = parseSse(res.text).flatMap((f) => ("data" in f ? [f.data] : []));
    expect(frames.map((f) => f.type)).toEqual(["tool_call_step", "tool_result_step", "message_delta", "message_final", "stream.end"]);
    expect(frames[1]).toMatchObject({ tool: "ask_user", is_error: true, result: ASK_USER_CANNOT_PARK });
    expect(JSON.parse(net.llmBodies[1].messages.at(-1).content)).toEqual({ error: ASK_USER_CANNOT_PARK });
  });
});

describe("where no run can park", () => {
  it("POST /api/run-tool: a clear tool error", async () => {
    const r = await call("POST", "/api/run-tool", { key: await admin(), body: { tool_name: "ask_user", arguments: { question: "Hello?" } } });
    expect(r.status).toBe(500);
    expect(r.body).toEqual({ error: ASK_USER_CANNOT_PARK, code: "tool-error" });
  });

  it("invalid input is refused by field, never echoing values", async () => {
    const r = await call("POST", "/api/run-tool", {
      key: await admin(),
      body: { tool_name: "ask_user", arguments: { question: "Q-SECRET", options: [{ text: "a" }], schema: { x: 1 } } },
    });
    expect(r.status).toBe(500);
    expect(r.body.error).toBe("invalid ask_user input: schema: options and schema are exclusive");
    const dup = await call("POST", "/api/run-tool", {
      key: await admin(),
      body: { tool_name: "ask_user", arguments: { question: "Q", options: [{ text: "a" }, { text: "A" }] } },
    });
    expect(dup.body.error).toBe("invalid ask_user input: options: option texts must be unique");
  });
});
