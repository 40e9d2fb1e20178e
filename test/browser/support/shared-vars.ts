/**
 * What the browser project's shared `wrangler dev` is configured with (test/browser/support/shared-server.ts
 * starts it; test/browser/support/shared.ts explains who may use it). The files that drive a
 * messaging channel sign and address their inbound with these.
 */

/** The server's one Telegram bot: its identity (the bot id) is the token's prefix, so one route holds it. */
export const SHARED_TELEGRAM = { token: "424242:telegram-browser", secret: "telegram-browser-secret", botId: "424242" } as const;

/** The server's WhatsApp app: every route names a phone number id of its own (`our_identity`). */
export const SHARED_WHATSAPP = {
  appSecret: "whatsapp-browser-secret",
  accessToken: "whatsapp-browser-access",
  verifyToken: "whatsapp-browser-verify",
} as const;

/** The env var a file's agent names for its key (`api_key: {env: "FAKE_LLM_KEY"}`); the fake LLMs check none. */
export const SHARED_FAKE_LLM_KEY = "llm-browser-key";

/**
 * The server's vars, over the harness's defaults. `providers` is the fake providers' base URL
 * (test/e2e/support/fake-providers.ts), which every channel's sends go to.
 */
export function sharedServerVars(providers: (channel: "telegram" | "whatsapp") => string): Record<string, string> {
  return {
    CHANNEL_TELEGRAM_BOT_TOKEN: SHARED_TELEGRAM.token,
    CHANNEL_TELEGRAM_WEBHOOK_SECRET: SHARED_TELEGRAM.secret,
    CHANNEL_TELEGRAM_API_BASE: providers("telegram"),
    CHANNEL_WHATSAPP_APP_SECRET: SHARED_WHATSAPP.appSecret,
    CHANNEL_WHATSAPP_ACCESS_TOKEN: SHARED_WHATSAPP.accessToken,
    CHANNEL_WHATSAPP_VERIFY_TOKEN: SHARED_WHATSAPP.verifyToken,
    CHANNEL_WHATSAPP_API_BASE: providers("whatsapp"),
    // A delivery that fails, fails for good at its first attempt: the console's failures screen
    // lists one at once.
    CONVERSATIONS_DELIVERY_MAX_ATTEMPTS: "1",
    FAKE_LLM_KEY: SHARED_FAKE_LLM_KEY,
    // Budgets every file would otherwise share, raised so that no file's count depends on another's:
    // each file's turns through an api door are the admin key's (20 an hour by default), and all
    // pages mint their web sessions from 127.0.0.1 (100 an hour by default).
    CONVERSATIONS_PER_ADDRESS_TURNS_PER_HOUR: "10000",
    CHANNEL_WEB_SESSIONS_PER_HOUR: "10000",
  };
}
