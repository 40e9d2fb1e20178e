/**
 * Channels end to end: signed webhooks posted to a real `wrangler dev`, answers arriving
 * at local fake provider APIs from the right identity and split correctly, a Twilio receipt
 * completing a record, and a forged signature running no turn.
 */
import { createHmac } from "node:crypto";
import { type Server, createServer } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BOOTSTRAP_TOKEN, type DevServer, freePort, http, startDev } from "./harness";
import { type FakeProviders, startFakeProviders } from "./support/fake-providers";
import { pollUntil } from "./support/poll";
import { must } from "../../src/platform/must";

const SECRETS = {
  twilioSid: "ACe2e",
  twilioToken: "twilio-e2e-token",
  whatsappSecret: "whatsapp-e2e-secret",
  whatsappToken: "whatsapp-e2e-access",
  whatsappVerify: "whatsapp-e2e-verify",
  telegramToken: "424242:telegram-e2e",
  telegramSecret: "telegram-e2e-secret",
  slackSecret: "slack-e2e-signing",
  slackToken: "xoxb-e2e",
  slackBot: "UBOTE2E",
};

let dev: DevServer;
let fake: FakeProviders;
let base: string;
let adminKey: string;
let llm: { server: Server; url: string; calls: any[] };

/**
 * A fake OpenAI-compatible endpoint whose answer lists every message it was given, so a test can
 * see exactly what the agent's memory held.
 */
async function startMirrorLlm() {
  const calls: any[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c) => chunks.push(c));
    req.on("end", () => {
      const body = JSON.parse(Buffer.concat(chunks).toString("utf8"));
      calls.push(body);
      const seen = body.messages
        .filter((m: any) => m.role !== "system")
        .map((m: any) => `${m.role}:${m.content}`)
        .join(" | ");
      res.writeHead(200, { "content-type": "application/json" });
      res.end(
        JSON.stringify({
          id: "x",
          object: "chat.completion",
          choices: [{ index: 0, finish_reason: "stop", message: { role: "assistant", content: `I saw ${seen}` } }],
        }),
      );
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const a = server.address();
  return { server, url: `http://127.0.0.1:${typeof a === "object" && a ? a.port : 0}/v1`, calls };
}

beforeAll(async () => {
  fake = await startFakeProviders();
  llm = await startMirrorLlm();
  const port = await freePort();
  base = `http://127.0.0.1:${port}`;
  dev = await startDev({
    port,
    vars: {
      CHANNEL_TWILIO_ACCOUNT_SID: SECRETS.twilioSid,
      CHANNEL_TWILIO_AUTH_TOKEN: SECRETS.twilioToken,
      CHANNEL_TWILIO_PUBLIC_URL: base,
      CHANNEL_TWILIO_API_BASE: fake.base("twilio"),
      CHANNEL_WHATSAPP_APP_SECRET: SECRETS.whatsappSecret,
      CHANNEL_WHATSAPP_ACCESS_TOKEN: SECRETS.whatsappToken,
      CHANNEL_WHATSAPP_VERIFY_TOKEN: SECRETS.whatsappVerify,
      CHANNEL_WHATSAPP_API_BASE: fake.base("whatsapp"),
      CHANNEL_TELEGRAM_BOT_TOKEN: SECRETS.telegramToken,
      CHANNEL_TELEGRAM_WEBHOOK_SECRET: SECRETS.telegramSecret,
      CHANNEL_TELEGRAM_API_BASE: fake.base("telegram"),
      CHANNEL_SLACK_SIGNING_SECRET: SECRETS.slackSecret,
      CHANNEL_SLACK_BOT_TOKEN: SECRETS.slackToken,
      CHANNEL_SLACK_BOT_USER_ID: SECRETS.slackBot,
      CHANNEL_SLACK_API_BASE: fake.base("slack"),
      CONVERSATIONS_MAX_MESSAGE_CHARS: JSON.stringify({ twilio: 40, whatsapp: 4096, telegram: 4096, slack: 40000 }),
      FAKE_LLM_KEY: "llm-e2e-key",
    },
  });
  const boot = await http(base, "POST", "/api/keys/bootstrap", { body: { user_id: "root", bootstrap_token: BOOTSTRAP_TOKEN } });
  adminKey = boot.body.data.token;
  const exec = await http(base, "POST", "/api/auth/api-keys", { key: adminKey, body: { user_id: "channel-runner", scopes: ["tool:echo", "agent:echo"] } });
  expect(exec.status).toBe(200);
});

afterAll(async () => {
  await dev?.close();
  await fake?.close();
  await new Promise<void>((resolve) => (llm ? llm.server.close(() => resolve()) : resolve()));
});

async function route(name: string, channel: string, identity: string) {
  const r = await http(base, "POST", `/api/conversations/${name}`, {
    key: adminKey,
    body: { door: "channel", channel, our_identity: identity, target_kind: "tool", target_name: "echo", execution_key: "channel-runner" },
  });
  expect(r.status).toBe(200);
}

function twilioPost(door: "inbound" | "status", params: Record<string, string>, token = SECRETS.twilioToken) {
  const url = `${base}/api/channels/twilio/${door}`;
  const data =
    url +
    Object.keys(params)
      .sort()
      .map((k) => k + params[k])
      .join("");
  const sig = createHmac("sha1", token).update(data, "utf8").digest("base64");
  return fetch(url, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", "x-twilio-signature": sig },
    body: new URLSearchParams(params),
  });
}

async function transcript(routeName: string, threadId: string) {
  return http(base, "GET", `/api/conversations/${routeName}/transcript?thread_id=${encodeURIComponent(threadId)}`, { key: adminKey });
}

describe("channels against a real wrangler dev", () => {
  it("Twilio: a signed SMS is answered in split chunks from our number, and a receipt completes it", async () => {
    await route("sms", "twilio", "+15550000001");
    const text = "The quick brown fox jumps over the lazy dog, twice over.";
    const res = await twilioPost("inbound", { MessageSid: "SMe2e0001", From: "+15559990001", To: "+15550000001", Body: text, NumMedia: "0" });
    expect(res.status).toBe(204);
    const sends = await pollUntil(
      "twilio sends",
      () => fake.sends.filter((s) => s.channel === "twilio"),
      (s) => s.length >= 2 && s.map((x) => x.body.Body).join("") === text,
    );
    for (const s of sends) {
      expect(s.path).toBe(`/twilio/2010-04-01/Accounts/${SECRETS.twilioSid}/Messages.json`);
      expect(s.body.From).toBe("+15550000001");
      expect(s.body.To).toBe("+15559990001");
      expect([...s.body.Body].length).toBeLessThanOrEqual(40);
      expect(s.headers.authorization).toBe(`Basic ${Buffer.from(`${SECRETS.twilioSid}:${SECRETS.twilioToken}`).toString("base64")}`);
    }
    const threadId = "bridge:sms:+15559990001";
    await pollUntil(
      "provisional",
      () => transcript("sms", threadId),
      (t) => t.body?.data?.items?.[0]?.status === "provisional",
    );
    for (const s of sends) {
      expect((await twilioPost("status", { MessageSid: s.providerId, MessageStatus: "delivered", From: "+15550000001", To: "+15559990001" })).status).toBe(204);
    }
    const done = await pollUntil(
      "delivered",
      () => transcript("sms", threadId),
      (t) => t.body?.data?.items?.[0]?.status === "delivered",
    );
    expect(done.body.data.items[0]).toMatchObject({ inbound_text: text, answer: text, channel: "twilio", origin: "client" });
  });

  it("a forged Twilio signature is 401 and runs no turn", async () => {
    const before = fake.sends.length;
    const res = await twilioPost("inbound", { MessageSid: "SMforged", From: "+15559990002", To: "+15550000001", Body: "evil" }, "not-the-token");
    expect(res.status).toBe(401);
    const t = await transcript("sms", "bridge:sms:+15559990002");
    expect(t.status).toBe(404);
    expect(fake.sends.length).toBe(before);
  });

  it("WhatsApp, Telegram and Slack answer from the right identity", async () => {
    await route("wa", "whatsapp", "pn-e2e");
    await route("tg", "telegram", "424242");
    await route("sl", "slack", SECRETS.slackBot);

    const wa = JSON.stringify({
      object: "whatsapp_business_account",
      entry: [
        {
          id: "w",
          changes: [
            {
              field: "messages",
              value: {
                metadata: { phone_number_id: "pn-e2e" },
                messages: [{ from: "4915550002", id: "wamid.e2e1", type: "text", text: { body: "hallo wa" } }],
              },
            },
          ],
        },
      ],
    });
    const waRes = await fetch(`${base}/api/channels/whatsapp/inbound`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-hub-signature-256": `sha256=${createHmac("sha256", SECRETS.whatsappSecret).update(wa).digest("hex")}` },
      body: wa,
    });
    expect(waRes.status).toBe(200);

    const tg = JSON.stringify({
      update_id: 9001,
      message: { message_id: 5, date: 1, chat: { id: 777, type: "private" }, from: { id: 777, is_bot: false, first_name: "T" }, text: "hallo tg" },
    });
    const tgRes = await fetch(`${base}/api/channels/telegram/inbound`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-telegram-bot-api-secret-token": SECRETS.telegramSecret },
      body: tg,
    });
    expect(tgRes.status).toBe(200);

    const ts = String(Math.floor(Date.now() / 1000));
    const sl = JSON.stringify({
      type: "event_callback",
      event_id: "EvE2E1",
      event: { type: "message", channel: "C777", user: "U1", text: "hallo slack", ts: "1.2" },
    });
    const slRes = await fetch(`${base}/api/channels/slack/inbound`, {
      method: "POST",
      headers: {
        "content-type": "application/json",
        "x-slack-request-timestamp": ts,
        "x-slack-signature": `v0=${createHmac("sha256", SECRETS.slackSecret).update(`v0:${ts}:${sl}`).digest("hex")}`,
      },
      body: sl,
    });
    expect(slRes.status).toBe(200);

    const all = await pollUntil(
      "three sends",
      () => fake.sends.filter((s) => s.channel !== "twilio"),
      (s) => s.length >= 3,
    );
    const waSend = must(
      all.find((s) => s.channel === "whatsapp"),
      "the item found",
    );
    expect(waSend.path).toBe("/whatsapp/pn-e2e/messages");
    expect(waSend.headers.authorization).toBe(`Bearer ${SECRETS.whatsappToken}`);
    expect(waSend.body).toMatchObject({ to: "4915550002", text: { body: "hallo wa" } });
    const tgSend = must(
      all.find((s) => s.channel === "telegram"),
      "the item found",
    );
    expect(tgSend.path).toBe(`/telegram/bot${SECRETS.telegramToken}/sendMessage`);
    expect(tgSend.body).toMatchObject({ chat_id: "777", text: "hallo tg" });
    const slSend = must(
      all.find((s) => s.channel === "slack"),
      'all.find((s) => s.channel === "slack")',
    );
    expect(slSend.path).toBe("/slack/chat.postMessage");
    expect(slSend.headers.authorization).toBe(`Bearer ${SECRETS.slackToken}`);
    expect(slSend.body).toMatchObject({ channel: "C777", text: "hallo slack" });
  });

  it("lists the configured channels", async () => {
    const r = await http(base, "GET", "/api/channels", { key: adminKey });
    expect(r.body.data.channels.map((c: { name: string }) => c.name).sort()).toEqual(["slack", "telegram", "twilio", "web", "whatsapp"]);
    expect(r.body.data.channels.find((c: { name: string }) => c.name === "twilio").max_message_chars).toBe(40);
  });
});

describe("operator takeover of a channel thread", () => {
  it("manual mode runs no turn, the operator's reply reaches the provider, and the agent later saw both", async () => {
    const agent = await http(base, "POST", "/api/agents-config/entries", {
      key: adminKey,
      body: { title: "mirror", kind: "llm", description: "shows its memory", config: { base_url: llm.url, model: "fake", api_key: { env: "FAKE_LLM_KEY" } } },
    });
    expect(agent.status).toBe(200);
    expect((await http(base, "POST", "/api/auth/api-keys", { key: adminKey, body: { user_id: "mirror-runner", scopes: ["agent:mirror"] } })).status).toBe(200);
    const created = await http(base, "POST", "/api/conversations/desk", {
      key: adminKey,
      body: { door: "channel", channel: "twilio", our_identity: "+15550000009", target_kind: "agent", target_name: "mirror", execution_key: "mirror-runner" },
    });
    expect(created.status).toBe(200);
    const client = "+15558880001";
    const threadId = `bridge:desk:${client}`;
    const toClient = () => fake.sends.filter((s) => s.channel === "twilio" && s.body.To === client);
    // The small twilio cap splits answers; a whole answer is its chunks joined.
    const answers = () =>
      toClient()
        .map((s) => s.body.Body)
        .join("");

    expect((await twilioPost("inbound", { MessageSid: "SMdesk1", From: client, To: "+15550000009", Body: "hello" })).status).toBe(204);
    await pollUntil("first answer", answers, (a) => a === "I saw user:hello");
    const llmCallsBefore = llm.calls.length;

    const manual = await http(base, "PUT", "/api/conversations/desk/thread/mode", { key: adminKey, body: { thread_id: threadId, mode: "manual" } });
    expect(manual.body).toEqual({ data: { route_name: "desk", thread_id: threadId, mode: "manual", source: "thread" } });
    const sendsBefore = toClient().length;
    expect((await twilioPost("inbound", { MessageSid: "SMdesk2", From: client, To: "+15550000009", Body: "I need a human" })).status).toBe(204);
    const silent = await pollUntil(
      "silent record",
      () => transcript("desk", threadId),
      (t) => t.body?.data?.items?.[1]?.status === "silent",
    );
    expect(silent.body.data.items[1]).toMatchObject({ inbound_text: "I need a human", answer: null });
    expect(llm.calls.length).toBe(llmCallsBefore);

    const op = await http(base, "POST", "/api/conversations/desk/thread/messages", { key: adminKey, body: { thread_id: threadId, text: "Hi, Sam here" } });
    expect(op.status).toBe(200);
    expect(op.body.data).toMatchObject({ thread_id: threadId, message_id: expect.any(String) });
    await pollUntil(
      "operator reply at the provider",
      () =>
        toClient()
          .slice(sendsBefore)
          .map((s) => s.body.Body)
          .join(""),
      (t) => t === "Hi, Sam here",
    );
    expect(
      toClient()
        .slice(sendsBefore)
        .every((s) => s.body.From === "+15550000009"),
    ).toBe(true);
    const mode = await http(base, "GET", `/api/conversations/desk/thread/mode?thread_id=${encodeURIComponent(threadId)}`, { key: adminKey });
    expect(mode.body.data).toEqual({ mode: "manual", source: "thread" });

    const back = await http(base, "PUT", "/api/conversations/desk/thread/mode", { key: adminKey, body: { thread_id: threadId, mode: "agent" } });
    expect(back.status).toBe(200);
    const handedBack = toClient().length;
    expect((await twilioPost("inbound", { MessageSid: "SMdesk3", From: client, To: "+15550000009", Body: "thanks" })).status).toBe(204);
    const last = await pollUntil(
      "agent answer after hand-back",
      () =>
        toClient()
          .slice(handedBack)
          .map((s) => s.body.Body)
          .join(""),
      (t) => t.includes("user:thanks"),
    );
    expect(last).toContain("user:I need a human");
    expect(last).toContain("assistant:Hi, Sam here");
    expect(last).toBe("I saw user:hello | assistant:I saw user:hello | user:I need a human | assistant:Hi, Sam here | user:thanks");
    const t = await transcript("desk", threadId);
    expect(t.body.data.items.map((r: any) => r.origin)).toEqual(["client", "client", "operator", "client"]);
  });
});
