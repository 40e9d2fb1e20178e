/**
 * Interactions end to end against a real `wrangler dev`:
 * - an llm agent (a local fake LLM) on a Telegram route calls ask_user with two options; the
 *   question reaches the fake Telegram API with an inline keyboard; the participant taps one; the
 *   agent resumes and answers in the same chat;
 * - an agent run door's run asks; an operator watching `GET /api/interactions/stream` sees it
 *   created, answers it at the door, and sees it answered and resumed with the run's reply;
 * - an answer's media lands in the local R2 bucket and is served back by the media door.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BOOTSTRAP_TOKEN, type DevServer, http, startDev } from "./harness";
import { type FakeLlm, startFakeLlm, toolCall } from "./support/fake-llm";
import { type FakeProviders, startFakeProviders } from "./support/fake-providers";
import { pollUntil } from "./support/poll";
import { openSse } from "./support/sse";
import { must } from "../../src/platform/must";

const TELEGRAM = { token: "515151:telegram-e2e", secret: "telegram-e2e-secret", botId: "515151" };

let dev: DevServer;
let fake: FakeProviders;
let llm: FakeLlm;
let base: string;
let adminKey: string;

/**
 * The model: a user message asks (a drink, or a region for "deploy"); the ask's result is
 * answered with the option the answer picked.
 */
function model(body: { messages: Array<{ role: string; content: string | null }> }): Record<string, unknown> {
  const last = body.messages[body.messages.length - 1];
  if (last.role === "tool") {
    const result = JSON.parse(last.content ?? "{}");
    const picked = result.answer?.option?.text ?? result.answer?.text ?? "nothing";
    const user = body.messages.filter((m) => m.role === "user").at(-1)?.content ?? "";
    return { content: user.includes("deploy") ? `Deploying to ${picked}.` : `You picked ${picked}.` };
  }
  if ((last.content ?? "").includes("deploy")) {
    return { content: null, tool_calls: [toolCall("r1", "ask_user", { question: "Which region?", options: [{ text: "EU" }, { text: "US" }] })] };
  }
  return {
    content: null,
    tool_calls: [
      toolCall("d1", "ask_user", {
        question: "Tea or coffee?",
        options: [
          { text: "Tea", id: "tea" },
          { text: "Coffee", id: "coffee" },
        ],
      }),
    ],
  };
}

beforeAll(async () => {
  fake = await startFakeProviders();
  llm = await startFakeLlm(model);
  dev = await startDev({
    vars: {
      CHANNEL_TELEGRAM_BOT_TOKEN: TELEGRAM.token,
      CHANNEL_TELEGRAM_WEBHOOK_SECRET: TELEGRAM.secret,
      CHANNEL_TELEGRAM_API_BASE: fake.base("telegram"),
      FAKE_LLM_KEY: "llm-e2e-key",
    },
  });
  base = dev.baseUrl;
  const boot = await http(base, "POST", "/api/keys/bootstrap", { body: { user_id: "root", bootstrap_token: BOOTSTRAP_TOKEN } });
  adminKey = boot.body.data.token;
  const agent = await http(base, "POST", "/api/agents-config/entries", {
    key: adminKey,
    body: {
      title: "barista",
      kind: "llm",
      description: "asks before it answers",
      config: { base_url: llm.url, model: "fake", api_key: { env: "FAKE_LLM_KEY" }, tool_names: ["ask_user"] },
    },
  });
  expect(agent.status).toBe(200);
  const exec = await http(base, "POST", "/api/auth/api-keys", {
    key: adminKey,
    body: { user_id: "barista-runner", scopes: ["agent:barista", "tool:ask_user"] },
  });
  expect(exec.status).toBe(200);
});

afterAll(async () => {
  await dev?.close();
  await fake?.close();
  await llm?.close();
});

function telegramUpdate(update: unknown) {
  return fetch(`${base}/api/channels/telegram/inbound`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-telegram-bot-api-secret-token": TELEGRAM.secret },
    body: JSON.stringify(update),
  });
}

describe("ask_user against a real wrangler dev", () => {
  it("an llm agent on Telegram asks with two options; the tap answers; it resumes in the same chat", async () => {
    const route = await http(base, "POST", "/api/conversations/cafe", {
      key: adminKey,
      body: {
        door: "channel",
        channel: "telegram",
        our_identity: TELEGRAM.botId,
        target_kind: "agent",
        target_name: "barista",
        execution_key: "barista-runner",
      },
    });
    expect(route.status).toBe(200);
    const chat = 880011;
    const msg = await telegramUpdate({
      update_id: 7001,
      message: { message_id: 1, date: 1, chat: { id: chat, type: "private" }, from: { id: chat, is_bot: false, first_name: "P" }, text: "A drink, please" },
    });
    expect(msg.status).toBe(200);

    const asked = await pollUntil(
      "the question",
      () => fake.sends.filter((s) => s.channel === "telegram"),
      (s) => s.length >= 1,
    );
    expect(asked[0].path).toBe(`/telegram/bot${TELEGRAM.token}/sendMessage`);
    expect(asked[0].body).toEqual({
      chat_id: String(chat),
      text: "Tea or coffee?",
      reply_markup: { inline_keyboard: [[{ text: "Tea", callback_data: "Tea" }], [{ text: "Coffee", callback_data: "Coffee" }]] },
    });
    const pending = await pollUntil(
      "the pending interaction",
      () => http(base, "GET", `/api/interactions/pending?thread_id=${encodeURIComponent(`bridge:cafe:${chat}`)}`, { key: adminKey }),
      (r) => r.body?.data?.items?.length === 1,
    );
    const interaction = pending.body.data.items[0];
    expect(interaction).toMatchObject({
      question: "Tea or coffee?",
      status: "pending",
      origin: { kind: "thread", channel: "telegram", route_name: "cafe" },
      target: { kind: "agent", name: "barista" },
    });

    // The participant taps "Coffee".
    const tap = await telegramUpdate({
      update_id: 7002,
      callback_query: { id: "cq1", from: { id: chat, is_bot: false }, data: "Coffee", message: { message_id: 2, chat: { id: chat, type: "private" } } },
    });
    expect(tap.status).toBe(200);
    const sends = await pollUntil(
      "the resumed answer",
      () => fake.sends.filter((s) => s.channel === "telegram"),
      (s) => s.length >= 2,
    );
    expect(sends[1].body).toEqual({ chat_id: String(chat), parse_mode: "HTML", text: "You picked Coffee." });

    const done = await pollUntil(
      "the answered interaction",
      () => http(base, "GET", `/api/interactions?status=answered`, { key: adminKey }),
      (r) => r.body?.data?.items?.some((i: any) => i.interaction_id === interaction.interaction_id),
    );
    expect(done.body.data.items.find((i: any) => i.interaction_id === interaction.interaction_id).answer).toMatchObject({
      text: "Coffee",
      option: { id: "coffee" },
      answered_by: { kind: "participant" },
    });
    // The model read the tap as the ask's result.
    const resumed = llm.calls.find((c) => c.messages.at(-1).role === "tool");
    expect(JSON.parse(resumed.messages.at(-1).content)).toMatchObject({ outcome: "answered", answer: { text: "Coffee", params: { reply_id: "Coffee" } } });
  });

  it("an operator watching the stream answers an agent run door's question; the run resumes", async () => {
    const stream = await openSse(`${base}/api/interactions/stream`, { "x-api-key": adminKey });
    try {
      await stream.until("the stream to open", (f) => f.some((x) => x.comment === "connected"));
      const caller = await http(base, "POST", "/api/auth/api-keys", {
        key: adminKey,
        body: { user_id: "deployer", scopes: ["agents:read", "agent:barista", "tool:ask_user"] },
      });
      const run = await fetch(`${base}/api/agents/barista/runs`, {
        method: "POST",
        headers: { "content-type": "application/json", "x-api-key": caller.body.data.api_key },
        body: JSON.stringify({ user_message: "deploy the release", thread_id: "release-42" }),
      });
      expect(run.status).toBe(200);
      const frames = (await run.text())
        .split("\n\n")
        .filter((b) => b.startsWith("data: "))
        .map((b) => JSON.parse(b.slice(6)));
      expect(frames.map((f) => f.type)).toEqual(["tool_call_step", "suspended_final", "stream.end"]);
      const id = frames[1].interaction_ids[0];
      expect(frames[1]).toMatchObject({ thread_id: "release-42", expiry_at: expect.any(String) });

      const created = await stream.until("interaction.created", (f) => f.some((x) => x.data?.type === "interaction.created" && x.data.interaction_id === id));
      const event = must(
        created.find((x) => x.data?.interaction_id === id),
        "the item found",
      );
      expect(event.id).toBe(String(event.data.id));
      expect(event.data.interaction).toMatchObject({
        question: "Which region?",
        options: [
          { id: "1", text: "EU" },
          { id: "2", text: "US" },
        ],
        origin: { kind: "agent_run", caller: "deployer" },
      });

      const answer = await http(base, "POST", `/api/interactions/${id}/answer`, { key: adminKey, body: { option_id: "1" } });
      expect(answer.status).toBe(200);
      expect(answer.body.data).toMatchObject({
        status: "answered",
        answer: { option: { id: "1", text: "EU" }, answered_by: { kind: "operator", user_id: "root" } },
      });

      const all = await stream.until("interaction.resumed", (f) => f.some((x) => x.data?.type === "interaction.resumed" && x.data.interaction_id === id));
      const mine = all.filter((x) => x.data?.interaction_id === id).map((x) => x.data.type);
      expect(mine).toEqual(["interaction.created", "interaction.answered", "interaction.resumed"]);
      const resumed = must(
        all.find((x) => x.data?.type === "interaction.resumed" && x.data.interaction_id === id),
        "the item found",
      );
      expect(resumed.data.interaction.result).toMatchObject({ outcome: "ok", text: "Deploying to EU.", error: null });
      // A second answer is refused: it ended.
      expect((await http(base, "POST", `/api/interactions/${id}/answer`, { key: adminKey, body: { option_id: "2" } })).status).toBe(409);
    } finally {
      stream.close();
    }
  });

  it("a participant's answer with media: stored in the local R2 bucket and served back", async () => {
    const route = await http(base, "POST", "/api/conversations/photos", {
      key: adminKey,
      body: {
        door: "api",
        target_kind: "tool",
        target_name: "ask_user",
        execution_key: "barista-runner",
        payload_expr: "{question: .message}",
        reply_expr: '"Got " + ((.answer.media // []) | length | tostring) + " file(s)"',
      },
    });
    expect(route.status).toBe(200);
    const first = await http(base, "POST", "/api/conversations/photos/messages", {
      key: adminKey,
      body: { external_user_id: "p1", text: "Send a photo", wait_seconds: 10 },
    });
    expect(first.body.data.answer).toBe("Send a photo");
    // Any local URL serves as the media (the e2e server allows private hosts): the fake providers answer it.
    const mediaUrl = `${fake.base("whatsapp")}/media/photo.png`;
    const second = await http(base, "POST", "/api/conversations/photos/messages", {
      key: adminKey,
      body: { external_user_id: "p1", text: "here", attachments: [{ kind: "image", url: mediaUrl }], wait_seconds: 10 },
    });
    expect(second.body.data.answer).toBe("Got 1 file(s)");
    const listed = await pollUntil(
      "the answered interaction",
      () => http(base, "GET", `/api/interactions?thread_id=${encodeURIComponent(first.body.data.thread_id)}`, { key: adminKey }),
      (r) => r.body?.data?.items?.[0]?.status === "answered",
    );
    const media = listed.body.data.items[0].answer.media[0];
    expect(media).toMatchObject({ kind: "image", media_id: expect.any(String), content_type: "application/json" });
    const res = await fetch(`${base}${media.url}`, { headers: { "x-api-key": adminKey } });
    expect(res.status).toBe(200);
    expect(res.headers.get("x-content-type-options")).toBe("nosniff");
    expect(res.headers.get("content-disposition")).toMatch(/^attachment; filename="/);
    expect(JSON.parse(await res.text())).toMatchObject({ messaging_product: "whatsapp" });
  });
});
