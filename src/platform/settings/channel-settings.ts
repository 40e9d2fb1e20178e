/**
 * The channels' variables (decisions §11). Each adapter reads its own (src/channels/*, by the names
 * defined here), and a channel exists only while all its secrets are set; the secrets are those a
 * provider signs or authenticates with.
 *
 * `API_BASE` is env only: every send carries the channel's token to it (Telegram's in the URL
 * path), so whoever could set it at runtime (an admin key, through the overlay) could collect the
 * token. Deployment configuration is set by whoever already holds the deployment's secrets.
 */
import { type Setting, text } from "./define";

function channel(prefix: string, vars: Array<[suffix: string, secret: boolean, description: string]>): Setting<string | undefined>[] {
  return vars.map(([suffix, secret, description]) =>
    text(`CHANNEL_${prefix}_${suffix}`, {
      area: "channels",
      type: suffix.endsWith("_URL") || suffix === "API_BASE" ? "url" : "string",
      secret,
      overlay: suffix !== "API_BASE",
      description,
    }),
  );
}

export const CHANNEL_SETTINGS: readonly Setting<string | undefined>[] = [
  ...channel("TWILIO", [
    ["ACCOUNT_SID", false, "Twilio account SID."],
    ["AUTH_TOKEN", true, "Twilio auth token: signs inbound webhooks and authenticates sends."],
    ["PUBLIC_URL", false, "The public origin Twilio signs webhook URLs against."],
    ["API_BASE", false, "Twilio API origin (default the provider's public API; tests point it at a fake). Env only: sends carry the auth token to it."],
  ]),
  ...channel("WHATSAPP", [
    ["APP_SECRET", true, "WhatsApp Cloud app secret: signs inbound webhooks."],
    ["ACCESS_TOKEN", true, "WhatsApp Cloud access token for sends."],
    ["VERIFY_TOKEN", true, "The hub.verify_token of the webhook handshake."],
    ["API_BASE", false, "WhatsApp Graph API base (default the provider's public API). Env only: sends carry the access token to it."],
  ]),
  ...channel("TELEGRAM", [
    ["BOT_TOKEN", true, "Telegram bot token."],
    ["WEBHOOK_SECRET", true, "The secret_token Telegram sends with each webhook."],
    ["API_BASE", false, "Telegram Bot API origin (default the provider's public API). Env only: every call carries the bot token to it."],
  ]),
  ...channel("SLACK", [
    ["SIGNING_SECRET", true, "Slack signing secret: signs inbound events."],
    ["BOT_TOKEN", true, "Slack bot token for sends."],
    ["BOT_USER_ID", false, "The bot's user id (our_identity of Slack routes)."],
    ["API_BASE", false, "Slack Web API base (default the provider's public API). Env only: sends carry the bot token to it."],
  ]),
];
