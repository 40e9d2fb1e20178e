/**
 * Live turns through the real doors (docs/web-channel-client.md "Live turns"): the frames a page's
 * socket gets for each kind of turn, a reload mid-answer, the stop doors (the visitor's and the
 * operator's) with what a waiting caller and a callback receiver get, the live door, and the
 * channels' typing signal. The turn's own state is checked on the page: it ends `settled` whatever
 * the outcome, so typing cannot stick.
 *
 * Where a run must write a draft and then hang, the thread's agent runs are a stand-in handed to
 * that one object's turn plugins (ThreadDeps.turn), as a test may: it emits chunks and waits on a
 * gate, ignoring the stop signal, so the turn must settle without it.
 */
import { runInDurableObject } from "cloudflare:test";
import { describe, expect, it } from "vitest";
import type { ThreadDeps, TurnPlugins } from "../../src/conversations/thread/deps";
import { turnPlugins } from "../../src/conversations/thread/turn-plugins";
import { TYPING_DELAY_MS } from "../../src/conversations/thread/live-turn";
import { apiThreadId, channelThreadId } from "../../src/shared/thread-id";
import { createRoute, send } from "../helpers/bridge";
import { BASE, admin, call, dispatch, mintKey, uniq } from "../helpers/http";
import { type NetCall, answerOnly, fakeNetwork } from "../helpers/network";
import { eventually, rawRows, stubFor } from "../helpers/threads";
import { ORIGIN, type Visitor, newVisitor, openStream } from "../helpers/web-visitor";
import { TEST_ENV, postTelegram, postWhatsApp, whatsappText } from "../helpers/webhooks";
import { must } from "../../src/platform/must";

const LLM = "https://llm.example/v1/chat/completions";
const HOOK = "https://hooks.example.com/live-turns";

/** A web route on `target`, run by a key that may run it. */
async function webRoute(target: { kind: "agent" | "tool"; name: string }) {
  const key = await mintKey({ scopes: [`${target.kind}:${target.name}`, "tool:echo"] });
  const identity = uniq("live").replace(/[^A-Za-z0-9_-]/g, "-");
  const route = await createRoute({
    door: "channel",
    channel: "web",
    our_identity: identity,
    target_kind: target.kind,
    target_name: target.name,
    execution_key: key.user_id,
  });
  return { identity, web: route.name, key };
}

async function declareLlm(): Promise<string> {
  const title = uniq("live-llm");
  const r = await call("POST", "/api/agents-config/entries", {
    key: await admin(),
    body: { title, kind: "llm", config: { base_url: LLM.replace("/chat/completions", ""), model: "m", tool_names: ["echo"] } },
  });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return title;
}

const completion = (message: Record<string, unknown>) => Response.json({ choices: [{ message: { role: "assistant", ...message } }] });
const toolCall = (id: string, name: string, args: unknown) => ({ id, type: "function", function: { name, arguments: JSON.stringify(args) } });

const say = (desk: { identity: string }, v: Visitor, text: string) =>
  call("POST", "/api/channels/web/messages", { body: { identity: desk.identity, text }, headers: { origin: ORIGIN, cookie: v.cookie } });
const stopAsVisitor = (desk: { identity: string }, v: Visitor, body: Record<string, unknown> = {}) =>
  call("POST", "/api/channels/web/stop", { body: { identity: desk.identity, ...body }, headers: { origin: ORIGIN, cookie: v.cookie } });

/** The page's turn and draft frames of `messageId`, and its entries, in order, as short tags. */
function story(frames: any[], messageId: string): string[] {
  return frames
    .filter((f) => (f.type === "turn" || f.type === "draft" ? f.message_id : f.type === "entry" ? f.entry.message_id : null) === messageId)
    .map((f) => (f.type === "turn" ? f.state : f.type === "draft" ? `draft:${f.text}` : `entry:${f.entry.role}:${f.entry.text}`));
}

/** Hands thread `threadId`'s object other agent runs (only that object's turn plugins change). */
async function withAgents(threadId: string, agents: Partial<TurnPlugins["agents"]>): Promise<void> {
  await runInDurableObject(stubFor(threadId), (instance) => {
    const deps = (instance as unknown as { deps: ThreadDeps }).deps;
    deps.turn = { ...turnPlugins, agents: { ...turnPlugins.agents, ...agents } };
  });
}

/**
 * An agent run that writes "Hel" and "lo" on the message "slow" and then waits for the gate,
 * ignoring the stop signal; any other message is answered at once. Memory appends are recorded.
 */
function slowAgent() {
  let open: () => void = () => {};
  const gate = new Promise<void>((resolve) => {
    open = resolve;
  });
  const memory: Array<{ role: string; content: string }> = [];
  const run: TurnPlugins["agents"]["run"] = async (_ctx, _name, input, opts) => {
    if (input.user_message !== "slow") {
      const text = `quick: ${input.user_message}`;
      await opts?.onEvent?.({ type: "message_delta", text });
      return { ok: true, text };
    }
    await opts?.onEvent?.({ type: "message_delta", text: "Hel" });
    await opts?.onEvent?.({ type: "message_delta", text: "lo" });
    await gate;
    return { ok: true, text: "Hello, and much more" };
  };
  const agents: Partial<TurnPlugins["agents"]> = {
    run,
    keepsMemory: async () => true,
    appendMemory: async (_ctx, _name, _thread, m) => void memory.push(m),
  };
  return { agents, memory, release: () => open() };
}

describe("a web page watches its turn", () => {
  it("an echo agent's turn: queued, running, its draft, settled, then the answer's entry under the same message id", async () => {
    const desk = await webRoute({ kind: "agent", name: "echo" });
    const v = await newVisitor(desk);
    const page = await openStream(desk, v);
    const sent = await say(desk, v, "hi");
    const id = sent.body.data.message_id;
    await eventually(
      async () => page.frames,
      (f) => f.some((x) => x.type === "entry" && x.entry.role === "bot"),
    );
    expect(story(page.frames, id)).toEqual(["entry:visitor:hi", "queued", "running", "draft:echo: hi", "settled", "entry:bot:echo: hi"]);
    page.ws?.close();
  });

  it("an llm agent with a tool call: running, tool, running, the answer after the tool as the draft, settled", async () => {
    const agent = await declareLlm();
    let n = 0;
    fakeNetwork(
      answerOnly({
        [`POST ${LLM}`]: () =>
          ++n === 1 ? completion({ content: "Let me check", tool_calls: [toolCall("c1", "echo", { message: "pong" })] }) : completion({ content: "All good" }),
      }),
    );
    const desk = await webRoute({ kind: "agent", name: agent });
    const v = await newVisitor(desk);
    const page = await openStream(desk, v);
    const id = (await say(desk, v, "check")).body.data.message_id;
    await eventually(
      async () => page.frames,
      (f) => f.some((x) => x.type === "entry" && x.entry.role === "bot"),
    );
    expect(story(page.frames, id)).toEqual(["entry:visitor:check", "queued", "running", "tool", "running", "draft:All good", "settled", "entry:bot:All good"]);
    page.ws?.close();
  });

  it("a silent answer and a turn in manual mode end settled with no entry; manual mode never shows running", async () => {
    const agent = await declareLlm();
    fakeNetwork(answerOnly({ [`POST ${LLM}`]: () => completion({ content: "   " }) }));
    const desk = await webRoute({ kind: "agent", name: agent });
    const v = await newVisitor(desk);
    const page = await openStream(desk, v);
    const quiet = (await say(desk, v, "say nothing")).body.data.message_id;
    await eventually(
      async () => page.frames,
      (f) => f.some((x) => x.type === "turn" && x.message_id === quiet && x.state === "settled"),
    );
    expect(story(page.frames, quiet)).toEqual(["entry:visitor:say nothing", "queued", "running", "settled"]);

    const mode = await call("PUT", `/api/conversations/${desk.web}/thread/mode`, { key: await admin(), body: { thread_id: v.home, mode: "manual" } });
    expect(mode.status, JSON.stringify(mode.body)).toBe(200);
    const handed = (await say(desk, v, "a human please")).body.data.message_id;
    await eventually(
      async () => page.frames,
      (f) => f.some((x) => x.type === "turn" && x.message_id === handed && x.state === "settled"),
    );
    expect(story(page.frames, handed)).toEqual(["entry:visitor:a human please", "queued", "settled"]);
    page.ws?.close();
  });
});

describe("stopping a turn", () => {
  it("the visitor stops the answer being written: the draft becomes the answer (stopped), a reload saw it, the next turn runs", async () => {
    const desk = await webRoute({ kind: "agent", name: "echo" });
    const v = await newVisitor(desk);
    const other = await newVisitor(desk);
    const slow = slowAgent();
    await withAgents(v.home, slow.agents);
    try {
      // Nothing runs yet: nothing to stop.
      expect((await stopAsVisitor(desk, v)).body).toEqual({ data: { stopped: false } });
      const page = await openStream(desk, v);
      const first = (await say(desk, v, "slow")).body.data.message_id;
      await eventually(
        async () => page.frames,
        (f) => f.some((x) => x.type === "draft" && x.text === "Hello"),
      );

      // A reload mid-answer: the backlog, ready, then the turn and its draft.
      const reload = await openStream(desk, v);
      const afterReady = reload.frames.slice(reload.frames.findIndex((f) => f.type === "ready") + 1);
      expect(afterReady).toEqual([
        { type: "turn", message_id: first, state: "running" },
        { type: "draft", message_id: first, text: "Hello", md: [{ type: "paragraph", children: [{ type: "text", text: "Hello" }] }] },
      ]);
      reload.ws?.close();

      // The operator's live door sees the same.
      const live = await call("GET", `/api/conversations/${desk.web}/thread/live?thread_id=${encodeURIComponent(v.home)}`, { key: await admin() });
      expect(live.body).toEqual({ data: { message_id: first, state: "running", draft: "Hello" } });

      // Another visitor's stop reaches only their own (idle) conversation.
      expect((await stopAsVisitor(desk, other)).body).toEqual({ data: { stopped: false } });
      const next = (await say(desk, v, "next")).body.data.message_id;
      // A stop naming another message than the running one stops nothing.
      expect((await stopAsVisitor(desk, v, { message_id: next })).body).toEqual({ data: { stopped: false } });
      expect((await stopAsVisitor(desk, v, { message_id: first })).body).toEqual({ data: { stopped: true } });

      await eventually(
        async () => page.frames,
        (f) => f.some((x) => x.type === "entry" && x.entry.message_id === next && x.entry.role === "bot"),
      );
      expect(story(page.frames, first)).toEqual(["entry:visitor:slow", "queued", "running", "draft:Hel", "draft:Hello", "settled", "entry:bot:Hello"]);
      expect(page.frames.find((f) => f.type === "entry" && f.entry.message_id === first && f.entry.role === "bot")?.entry.stopped).toBe(true);
      expect(story(page.frames, next)).toEqual(["entry:visitor:next", "queued", "running", "draft:quick: next", "settled", "entry:bot:quick: next"]);

      const rec = await call("GET", `/api/conversations/${desk.web}/messages/${first}`, { key: await admin() });
      expect(rec.body.data).toMatchObject({ answer_status: "answered", answer: "Hello", stopped: true });
      const plain = await call("GET", `/api/conversations/${desk.web}/messages/${next}`, { key: await admin() });
      expect(plain.body.data.stopped).toBeUndefined();
      // The exchange the run never finished is kept in the agent's memory as the visitor saw it.
      expect(slow.memory).toEqual([
        { role: "user", content: "slow" },
        { role: "assistant", content: "Hello" },
      ]);
      expect((await stopAsVisitor(desk, v)).body).toEqual({ data: { stopped: false } });

      // A new page replays the stopped answer as stopped.
      const fresh = await openStream(desk, v);
      expect(fresh.frames.find((f) => f.type === "entry" && f.entry.message_id === first && f.entry.role === "bot")?.entry).toMatchObject({
        text: "Hello",
        stopped: true,
      });
      fresh.ws?.close();
      page.ws?.close();
    } finally {
      slow.release();
    }
  });

  it("the operator stops a turn: the waiting caller and the callback receiver get the draft with stopped: true; the live door follows", async () => {
    const key = await mintKey({ scopes: ["agent:echo"] });
    const route = await createRoute({ door: "api", target_kind: "agent", target_name: "echo", execution_key: key.user_id, callback_url: HOOK });
    const calls = fakeNetwork((req) => {
      if (req.url === HOOK) return new Response(null, { status: 204 });
      throw new Error(`unexpected outbound request: ${req.url}`);
    });
    const admins = await admin();
    const liveOf = async (thread: string) =>
      (await call("GET", `/api/conversations/${route.name}/thread/live?thread_id=${encodeURIComponent(thread)}`, { key: admins })).body.data;
    const stop = (thread: string) => call("POST", `/api/conversations/${route.name}/thread/stop?thread_id=${encodeURIComponent(thread)}`, { key: admins });

    // Waiting inline: the answer is the draft, stopped.
    const waiter = apiThreadId(route.name, "root", "waiter");
    const slow = slowAgent();
    await withAgents(waiter, slow.agents);
    try {
      expect(await liveOf(waiter)).toEqual({ message_id: null, state: "settled", draft: null });
      expect((await stop(waiter)).body).toEqual({ data: { stopped: false } });
      const answer = send(route.name, { external_user_id: "waiter", text: "slow", wait_seconds: 10 });
      const running = await eventually(
        () => liveOf(waiter),
        (l) => l.draft === "Hello",
      );
      expect(running).toMatchObject({ state: "running", draft: "Hello" });
      expect((await stop(waiter)).body).toEqual({ data: { stopped: true } });
      const got = await answer;
      expect(got.body.data).toEqual({ message_id: running.message_id, thread_id: waiter, status: "answered", answer: "Hello", stopped: true });
      expect(await liveOf(waiter)).toEqual({ message_id: running.message_id, state: "settled", draft: null });

      // Called back: the signed body carries stopped too.
      const called = apiThreadId(route.name, "root", "called");
      await withAgents(called, slow.agents);
      const accepted = await send(route.name, { external_user_id: "called", text: "slow" });
      expect(accepted.status).toBe(202);
      await eventually(
        () => liveOf(called),
        (l) => l.draft === "Hello",
      );
      // A thread id off the route is refused before anything is stopped.
      expect(
        (await call("POST", `/api/conversations/${route.name}/thread/stop?thread_id=${encodeURIComponent("bridge:other:x")}`, { key: admins })).status,
      ).toBe(400);
      expect((await stop(called)).body).toEqual({ data: { stopped: true } });
      const hook = await eventually(
        async () => calls.filter((c: NetCall) => c.url === HOOK),
        (c) => c.length === 1,
      );
      expect(hook[0].json).toEqual({ message_id: accepted.body.data.message_id, thread_id: called, status: "answered", answer: "Hello", stopped: true });
    } finally {
      slow.release();
    }
  });

  it("a stop with nothing drafted answers silence, stopped", async () => {
    const key = await mintKey({ scopes: ["agent:echo"] });
    const route = await createRoute({ door: "api", target_kind: "agent", target_name: "echo", execution_key: key.user_id });
    const thread = apiThreadId(route.name, "root", "mute");
    let open: () => void = () => {};
    const gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    await withAgents(thread, {
      run: async () => {
        await gate;
        return { ok: true, text: "late" };
      },
      keepsMemory: async () => false,
    });
    try {
      const answer = send(route.name, { external_user_id: "mute", text: "think", wait_seconds: 10 });
      const admins = await admin();
      const stopped = await eventually(
        async () => (await call("POST", `/api/conversations/${route.name}/thread/stop?thread_id=${encodeURIComponent(thread)}`, { key: admins })).body.data,
        (d) => d.stopped === true,
      );
      expect(stopped).toEqual({ stopped: true });
      expect((await answer).body.data).toMatchObject({ status: "silent", stopped: true });
      expect((await answer).body.data.answer).toBeUndefined();
      const rows = await rawRows(thread);
      expect(JSON.parse(must(rows.at(-1), "the record").record)).toMatchObject({ answer_status: "silent", stopped: true });
    } finally {
      open();
    }
  });
});

describe("the route's consoles", () => {
  it("hear a long turn's states as ids only, coalesced; the draft stays behind the live door", async () => {
    const key = await mintKey({ scopes: ["agent:echo"] });
    const route = await createRoute({ door: "api", target_kind: "agent", target_name: "echo", execution_key: key.user_id });
    const admins = await admin();
    const ticket = await call("POST", `/api/conversations/${route.name}/live-tickets`, { key: admins });
    expect(ticket.status).toBe(201);
    const res = await dispatch(`${BASE}/api/conversations/${route.name}/live?ticket=${encodeURIComponent(ticket.body.data.ticket)}`, {
      headers: { upgrade: "websocket" },
    });
    const ws = must(res.webSocket, "the console's socket");
    const frames: any[] = [];
    ws.addEventListener("message", (e) => void frames.push(JSON.parse(String(e.data))));
    ws.accept();
    const turnNotices = () => frames.flatMap((f) => (f.type === "notices" ? f.notices : [])).filter((n: any) => n.type === "turn");

    const thread = apiThreadId(route.name, "root", "watched");
    const slow = slowAgent();
    await withAgents(thread, slow.agents);
    try {
      const accepted = await send(route.name, { external_user_id: "watched", text: "slow" });
      const id = accepted.body.data.message_id;
      await eventually(
        async () => turnNotices(),
        (n) => n.some((x: any) => x.state === "running"),
        200,
      );
      await call("POST", `/api/conversations/${route.name}/thread/stop?thread_id=${encodeURIComponent(thread)}`, { key: admins });
      const seen = await eventually(
        async () => turnNotices(),
        (n) => n.some((x: any) => x.state === "settled"),
        200,
      );
      // Ids and a state each, the latest per window: running was told, and settled last.
      for (const n of seen) expect(n).toEqual({ type: "turn", route_name: route.name, thread_id: thread, message_id: id, state: n.state });
      expect(seen.map((n: any) => n.state)).toContain("running");
      expect(seen.at(-1).state).toBe("settled");
      expect(JSON.stringify(frames)).not.toContain("Hel");
    } finally {
      slow.release();
      ws.close();
    }
  });
});

describe("a channel's typing signal", () => {
  /** An llm agent whose every answer takes `ms`, on a channel route; the provider network recorded. */
  async function slowChannelAgent(ms: number) {
    const agent = await declareLlm();
    const calls = fakeNetwork((req) => {
      const url = new URL(req.url);
      if (req.url === LLM) return new Promise<Response>((resolve) => setTimeout(() => resolve(completion({ content: "ready now" })), ms));
      if (url.host === "telegram.fake") return Response.json({ ok: true, result: url.pathname.endsWith("/sendMessage") ? { message_id: 7 } : true });
      if (url.host === "whatsapp.fake") return Response.json({ messages: [{ id: "wamid.OUT" }], success: true });
      throw new Error(`unexpected outbound request: ${req.method} ${req.url}`);
    });
    const key = await mintKey({ scopes: [`agent:${agent}`] });
    return { agent, calls, key };
  }

  const telegramUpdate = (chat: number, update: number, text: string) => ({
    update_id: update,
    message: { message_id: update, date: 1, chat: { id: chat, type: "private" }, from: { id: chat, is_bot: false, first_name: "A" }, text },
  });

  it("Telegram: a chat action precedes the answer of a slow turn; a turn in manual mode sends none", async () => {
    const { agent, calls, key } = await slowChannelAgent(TYPING_DELAY_MS + 400);
    const route = await createRoute({
      door: "channel",
      channel: "telegram",
      our_identity: TEST_ENV.telegramBotId,
      target_kind: "agent",
      target_name: agent,
      execution_key: key.user_id,
    });
    const chat = Number(String(Date.now()).slice(-7)) * 10 + 3;
    expect((await postTelegram(telegramUpdate(chat, chat * 10 + 1, "hello"))).status).toBe(200);
    const sent = await eventually(
      async () => calls.filter((c) => c.url.includes("telegram.fake")),
      (c) => c.some((x) => x.url.endsWith("/sendMessage")),
      150,
    );
    const methods = sent.map((c) => c.url.split("/").at(-1));
    expect(methods[0]).toBe("sendChatAction");
    expect(methods.indexOf("sendChatAction")).toBeLessThan(methods.indexOf("sendMessage"));
    expect(sent[0].json).toEqual({ chat_id: String(chat), action: "typing" });

    // Manual mode: no turn runs, so nothing is typed.
    const thread = channelThreadId(route.name, String(chat));
    const mode = await call("PUT", `/api/conversations/${route.name}/thread/mode`, { key: await admin(), body: { thread_id: thread, mode: "manual" } });
    expect(mode.status).toBe(200);
    const before = calls.length;
    expect((await postTelegram(telegramUpdate(chat, chat * 10 + 2, "a human please"))).status).toBe(200);
    await eventually(
      () => rawRows(thread),
      (rows) => rows.length === 2 && rows[1].turn_state === "done",
    );
    await new Promise((r) => setTimeout(r, TYPING_DELAY_MS + 100));
    expect(calls.slice(before).filter((c) => c.url.includes("telegram.fake"))).toEqual([]);
  });

  it("WhatsApp: the inbound is marked read with the typing indicator before the answer", async () => {
    const { agent, calls, key } = await slowChannelAgent(TYPING_DELAY_MS + 400);
    const phone = `pn${Date.now()}`;
    await createRoute({ door: "channel", channel: "whatsapp", our_identity: phone, target_kind: "agent", target_name: agent, execution_key: key.user_id });
    const wamid = `wamid.${crypto.randomUUID()}`;
    expect((await postWhatsApp(whatsappText(phone, "15550001111", wamid, "hello"))).status).toBe(200);
    const sent = await eventually(
      async () => calls.filter((c) => c.url.includes("whatsapp.fake")),
      (c) => c.length >= 2,
      150,
    );
    expect(sent[0].url).toBe(`https://whatsapp.fake/v21.0/${phone}/messages`);
    expect(sent[0].json).toEqual({ messaging_product: "whatsapp", status: "read", message_id: wamid, typing_indicator: { type: "text" } });
    expect(sent[1].json).toMatchObject({ to: "15550001111", type: "text", text: { body: "ready now" } });
  });
});
