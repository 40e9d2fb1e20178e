/**
 * Webhook ack: signed Telegram webhooks (the
 * `X-Telegram-Bot-Api-Secret-Token` header, src/channels/telegram.ts) posted open-loop, first at a
 * steady rate, then in a burst at 5× that rate. The latency is the acknowledgement time (the
 * Worker's 200), measured from each webhook's scheduled send time, against Slack's 3 s deadline
 * (the strictest provider deadline). Answers go to a local fake Telegram API
 * (scripts/bench/fake-providers.ts), so no send leaves loopback; after the burst the bench waits
 * (bounded) until every webhook's answer reached it.
 */
import { http } from "./harness";
import type { FakeProviders } from "./fake-providers";
import { type Ctx, type Phase, openLoop, waitFor } from "./lib";

export const TELEGRAM = { token: "424242:bench-telegram", secret: "bench-telegram-secret", botId: "424242" };
export const SLACK_DEADLINE_MS = 3000;

/** The vars that turn the Telegram channel on, pointed at the fake provider. */
export function telegramVars(fake: FakeProviders): Record<string, string> {
  return { CHANNEL_TELEGRAM_BOT_TOKEN: TELEGRAM.token, CHANNEL_TELEGRAM_WEBHOOK_SECRET: TELEGRAM.secret, CHANNEL_TELEGRAM_API_BASE: fake.base("telegram") };
}

export async function setupWebhook(ctx: Ctx): Promise<void> {
  const r = await http(ctx.base, "POST", "/api/conversations/bench-telegram", {
    key: ctx.admin,
    body: {
      door: "channel",
      channel: "telegram",
      our_identity: TELEGRAM.botId,
      target_kind: "tool",
      target_name: "echo",
      execution_key: ctx.execUser,
      turns_per_hour_override: 100_000_000,
    },
  });
  if (r.status !== 200) throw new Error(`creating the telegram route failed: HTTP ${r.status} ${JSON.stringify(r.body)}`);
}

export interface WebhookResult {
  steady: Phase;
  burst: Phase;
  /** Seconds after the burst until the fake provider had every answer, or null if the bound (20 s) ran out. */
  drainSeconds: number | null;
}

let updateId = 1_000_000;

function postUpdate(base: string, chat: number, text: string): Promise<string | null> {
  const id = ++updateId;
  const body = JSON.stringify({
    update_id: id,
    message: {
      message_id: id,
      date: Math.floor(Date.now() / 1000),
      chat: { id: chat, type: "private" },
      from: { id: chat, is_bot: false, first_name: "B" },
      text,
    },
  });
  return fetch(`${base}/api/channels/telegram/inbound`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-telegram-bot-api-secret-token": TELEGRAM.secret },
    body,
  }).then(async (res) => {
    const text = await res.text();
    if (res.status >= 200 && res.status < 300) return null;
    return `HTTP ${res.status} ${text.replace(/\s+/g, " ").slice(0, 100)}`;
  });
}

export async function webhookPhase(ctx: Ctx, fake: FakeProviders, rate: number, seconds: number, threads: number, chatBase: number): Promise<WebhookResult> {
  const sendsBefore = fake.sends.filter((s) => s.channel === "telegram").length;
  const steadyCount = Math.max(1, Math.round(rate * seconds));
  const burstCount = Math.max(1, Math.round(rate * 5 * seconds));
  const chat = (i: number) => chatBase + (i % threads);
  const steady = await openLoop(`webhook ack, steady ${rate}/s`, rate, steadyCount, (i) => postUpdate(ctx.base, chat(i), `steady ${i}`));
  const burst = await openLoop(`webhook ack, burst ${rate * 5}/s (5×)`, rate * 5, burstCount, (i) => postUpdate(ctx.base, chat(i), `burst ${i}`));
  const want = sendsBefore + steady.ok + burst.ok;
  const t0 = Date.now();
  const drained = await waitFor(() => fake.sends.filter((s) => s.channel === "telegram").length >= want, 20_000);
  return { steady, burst, drainSeconds: drained ? (Date.now() - t0) / 1000 : null };
}
