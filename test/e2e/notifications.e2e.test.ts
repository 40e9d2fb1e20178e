/**
 * Notifications end to end: against a real `wrangler dev` with Telegram
 * pointed at a local fake provider, an owned key's notification to a Telegram chat reaches the
 * provider, and the owned key's own feed holds it (its audience is clamped to itself); the admin
 * reads it in the shared feed, and a sink-only broadcast stays out of the owned key's feed. A
 * channel's default recipient comes from `NOTIFICATIONS_RECIPIENT_<CHANNEL>`.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { BOOTSTRAP_TOKEN, type DevServer, http, startDev } from "./harness";
import { type FakeProviders, startFakeProviders } from "./support/fake-providers";

const TELEGRAM_TOKEN = "515151:telegram-notify-e2e";

let dev: DevServer;
let fake: FakeProviders;
let base: string;
let adminKey: string;

beforeAll(async () => {
  fake = await startFakeProviders();
  dev = await startDev({
    vars: {
      CHANNEL_TELEGRAM_BOT_TOKEN: TELEGRAM_TOKEN,
      CHANNEL_TELEGRAM_WEBHOOK_SECRET: "telegram-notify-secret",
      CHANNEL_TELEGRAM_API_BASE: fake.base("telegram"),
      // Where a Telegram notification without `recipient` goes (read from the real Worker env).
      NOTIFICATIONS_RECIPIENT_TELEGRAM: "777002",
    },
  });
  base = dev.baseUrl;
  const boot = await http(base, "POST", "/api/keys/bootstrap", { body: { user_id: "root", bootstrap_token: BOOTSTRAP_TOKEN } });
  expect(boot.status, JSON.stringify(boot.body)).toBe(200);
  adminKey = boot.body.data.token;
});

afterAll(async () => {
  await dev?.close();
  await fake?.close();
});

async function mint(body: Record<string, unknown>): Promise<string> {
  const r = await http(base, "POST", "/api/auth/api-keys", { key: adminKey, body: { description: "notifications e2e", ...body } });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.data.api_key;
}

describe("notifications against a real wrangler dev", () => {
  it("an owned key's Telegram notification reaches the provider and lands in its own feed", async () => {
    await mint({ user_id: "notify-owner", scopes: ["notifications:write"] });
    const owned = await mint({ user_id: "notify-agent", scopes: ["notifications:write"], owner_user_id: "notify-owner" });

    const message = "Your report is ready.";
    const sent = await http(base, "POST", "/api/notifications", { key: owned, body: { message, channel: "telegram", recipient: "777001" } });
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    expect(sent.body).toEqual({ data: "notification sent via 'telegram'" });

    // One attempt, made before the answer: the provider already has it.
    const sends = fake.sends.filter((s) => s.channel === "telegram");
    expect(sends).toHaveLength(1);
    expect(sends[0].path).toBe(`/telegram/bot${TELEGRAM_TOKEN}/sendMessage`);
    expect(sends[0].body).toEqual({ chat_id: "777001", parse_mode: "HTML", text: message });

    // Another identity is refused, and nothing is sent for it.
    const foreign = await http(base, "POST", "/api/notifications", {
      key: owned,
      body: { message: "x", channel: "telegram", recipient: "1", audience: "notify-owner" },
    });
    expect(foreign.status).toBe(403);
    expect(fake.sends.filter((s) => s.channel === "telegram")).toHaveLength(1);

    // An admin broadcast goes to the shared feed only.
    const broadcast = await http(base, "POST", "/api/notifications", { key: adminKey, body: { message: "maintenance tonight" } });
    expect(broadcast.body).toEqual({ data: "notification recorded to the internal sink" });

    // The feed is written before the send answers, so it is there at once.
    const own = (await http(base, "GET", "/api/notifications", { key: owned })).body;
    expect(own.data.notifications).toHaveLength(1);
    expect(own.data.notifications[0]).toMatchObject({
      message,
      audience: "notify-agent",
      recipient: "777001",
      id: expect.any(String),
      created_at: expect.stringMatching(/Z$/),
    });

    const shared = await http(base, "GET", "/api/notifications", { key: adminKey });
    expect(shared.body.data.notifications.map((n: any) => n.message)).toEqual(["maintenance tonight", message]);
  });

  it("a Telegram notification without recipient goes to NOTIFICATIONS_RECIPIENT_TELEGRAM", async () => {
    const sent = await http(base, "POST", "/api/notifications", { key: adminKey, body: { message: "to the ops chat", channel: "telegram" } });
    expect(sent.status, JSON.stringify(sent.body)).toBe(200);
    const last = fake.sends.filter((s) => s.channel === "telegram").at(-1);
    expect(last?.body).toEqual({ chat_id: "777002", parse_mode: "HTML", text: "to the ops chat" });
  });
});
