/**
 * Provider webhooks for the tests: the signers, a webhook as the door hands it to an adapter, and
 * signed posts to the Worker's channel doors. The signers use node:crypto, an implementation
 * independent of the adapters' WebCrypto code, so a test checks the scheme rather than echoing
 * the code under test.
 */
import { createHmac } from "node:crypto";
import type { Webhook, WebhookDoor, WebhookMethod } from "../../src/channels/adapter";
import { BASE, dispatch } from "./http";

/** The providers' secrets and bot identities in the test configuration. */
export const TEST_ENV = {
  twilioToken: "twilio-test-token",
  whatsappSecret: "whatsapp-test-secret",
  whatsappVerify: "whatsapp-test-verify",
  telegramSecret: "telegram-test-secret",
  telegramBotId: "123456",
  slackSecret: "slack-test-signing",
  slackBot: "UBOTTEST",
};

export function nodeHmacHex(alg: "sha1" | "sha256", key: string, data: string): string {
  return createHmac(alg, key).update(data, "utf8").digest("hex");
}

/** Twilio's scheme: base64 HMAC-SHA1(token, url + sorted name+value). */
export function nodeTwilioSignature(token: string, url: string, params: Record<string, string>): string {
  const data =
    url +
    Object.keys(params)
      .sort()
      .map((k) => k + params[k])
      .join("");
  return createHmac("sha1", token).update(data, "utf8").digest("base64");
}

export function form(params: Record<string, string>): string {
  return new URLSearchParams(params).toString();
}

const enc = new TextEncoder();

/** A webhook as the door would hand it to an adapter. */
export function webhook(opts: { door?: WebhookDoor; method?: WebhookMethod; url: string; headers?: Record<string, string>; body?: string }): Webhook {
  return {
    door: opts.door ?? "inbound",
    method: opts.method ?? "POST",
    url: new URL(opts.url),
    headers: new Headers(opts.headers ?? {}),
    raw: enc.encode(opts.body ?? ""),
  };
}

export async function postTwilio(params: Record<string, string>, door: "inbound" | "status" = "inbound", opts: { forge?: boolean } = {}) {
  const url = `${BASE}/api/channels/twilio/${door}`;
  const sig = nodeTwilioSignature(opts.forge ? "wrong-token" : TEST_ENV.twilioToken, url, params);
  return dispatch(url, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", "x-twilio-signature": sig },
    body: form(params),
  });
}

export async function postWhatsApp(payload: unknown, opts: { forge?: boolean } = {}) {
  const body = JSON.stringify(payload);
  const sig = nodeHmacHex("sha256", opts.forge ? "nope" : TEST_ENV.whatsappSecret, body);
  return dispatch(`${BASE}/api/channels/whatsapp/inbound`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-hub-signature-256": `sha256=${sig}` },
    body,
  });
}

/** A WhatsApp webhook body carrying one `messages` change for `phoneNumberId`. */
function whatsappChange<V extends Record<string, unknown>>(value: V) {
  return { object: "whatsapp_business_account", entry: [{ id: "waba", changes: [{ field: "messages", value: { messaging_product: "whatsapp", ...value } }] }] };
}

export function whatsappText(phoneNumberId: string, from: string, id: string, text: string) {
  return whatsappChange({
    metadata: { phone_number_id: phoneNumberId, display_phone_number: "1" },
    contacts: [{ wa_id: from }],
    messages: [{ from, id, timestamp: "1700000000", type: "text", text: { body: text } }],
  });
}

export function whatsappStatus(phoneNumberId: string, id: string, status: "delivered" | "failed" | "sent") {
  return whatsappChange({
    metadata: { phone_number_id: phoneNumberId },
    statuses: [{ id, status, timestamp: "1700000001", recipient_id: "x" }],
  });
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
  const sig = nodeHmacHex("sha256", opts.forge ? "nope" : TEST_ENV.slackSecret, `v0:${ts}:${body}`);
  return dispatch(`${BASE}/api/channels/slack/inbound`, {
    method: "POST",
    headers: { "content-type": "application/json", "x-slack-request-timestamp": ts, "x-slack-signature": `v0=${sig}` },
    body,
  });
}
