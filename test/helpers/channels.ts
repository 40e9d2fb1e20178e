/** Signed provider webhooks for the channel door tests (node:crypto, independent of the adapters). */
import { createHmac } from "node:crypto";
import { BASE, dispatch } from "./http";

export const TEST_ENV = {
  twilioToken: "twilio-test-token",
  whatsappSecret: "whatsapp-test-secret",
  whatsappVerify: "whatsapp-test-verify",
  telegramSecret: "telegram-test-secret",
  telegramBotId: "123456",
  slackSecret: "slack-test-signing",
  slackBot: "UBOTTEST",
};

export async function postTwilio(params: Record<string, string>, door: "inbound" | "status" = "inbound", opts: { forge?: boolean } = {}) {
  const url = `${BASE}/api/channels/twilio/${door}`;
  const data =
    url +
    Object.keys(params)
      .sort()
      .map((k) => k + params[k])
      .join("");
  const sig = createHmac("sha1", opts.forge ? "wrong-token" : TEST_ENV.twilioToken)
    .update(data, "utf8")
    .digest("base64");
  return dispatch(url, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", "x-twilio-signature": sig },
    body: new URLSearchParams(params).toString(),
  });
}

export async function postWhatsApp(payload: unknown, opts: { forge?: boolean } = {}) {
  const body = JSON.stringify(payload);
  const sig = createHmac("sha256", opts.forge ? "nope" : TEST_ENV.whatsappSecret)
    .update(body, "utf8")
    .digest("hex");
  return dispatch(`${BASE}/api/channels/whatsapp/inbound`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-hub-signature-256": `sha256=${sig}` },
    body,
  });
}

export function whatsappText(phoneNumberId: string, from: string, id: string, text: string) {
  return {
    object: "whatsapp_business_account",
    entry: [
      {
        id: "waba",
        changes: [
          {
            field: "messages",
            value: {
              messaging_product: "whatsapp",
              metadata: { phone_number_id: phoneNumberId, display_phone_number: "1" },
              contacts: [{ wa_id: from }],
              messages: [{ from, id, timestamp: "1700000000", type: "text", text: { body: text } }],
            },
          },
        ],
      },
    ],
  };
}

export function whatsappStatus(phoneNumberId: string, id: string, status: "delivered" | "failed" | "sent") {
  return {
    object: "whatsapp_business_account",
    entry: [
      {
        id: "waba",
        changes: [
          {
            field: "messages",
            value: {
              messaging_product: "whatsapp",
              metadata: { phone_number_id: phoneNumberId },
              statuses: [{ id, status, timestamp: "1700000001", recipient_id: "x" }],
            },
          },
        ],
      },
    ],
  };
}

export async function postTelegram(update: unknown, opts: { secret?: string } = {}) {
  return dispatch(`${BASE}/api/channels/telegram/inbound`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-telegram-bot-api-secret-token": opts.secret ?? TEST_ENV.telegramSecret },
    body: JSON.stringify(update),
  });
}

export async function postSlack(payload: unknown, opts: { ts?: number; forge?: boolean } = {}) {
  const body = JSON.stringify(payload);
  const ts = String(opts.ts ?? Math.floor(Date.now() / 1000));
  const sig = createHmac("sha256", opts.forge ? "nope" : TEST_ENV.slackSecret)
    .update(`v0:${ts}:${body}`, "utf8")
    .digest("hex");
  return dispatch(`${BASE}/api/channels/slack/inbound`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-slack-request-timestamp": ts, "x-slack-signature": `v0=${sig}` },
    body,
  });
}
