/**
 * URLs that receive a stored secret are deployment configuration (docs/security.md "Where a stored
 * secret may go"): the channel API bases (every send carries the channel's token there; Telegram's
 * in the URL path) and the connector providers document (its token endpoints receive client secrets
 * and refresh tokens). So are the secret-reference allowlist, which decides which env secrets
 * declarations may send to their URLs, and SECRET_REFERENCE_ORIGINS, which decides where each may go. No admin door sets them at runtime: not the overlay, not a
 * profile, not a backup import; and an overlay row written behind the doors is ignored, so the token
 * never leaves for that host.
 */
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { createRoute, echoKey } from "../helpers/bridge";
import { fakeNetwork } from "../helpers/network";
import { postTelegram, TEST_ENV } from "../helpers/webhooks";
import { admin, call, uniq } from "../helpers/http";
import { eventually, rawRows } from "../helpers/threads";

const COLLECTOR = "https://collector.example";

async function overlayNames(): Promise<string[]> {
  return (await env.DB.prepare("SELECT name FROM settings_overlay ORDER BY name").all<{ name: string }>()).results.map((r) => r.name);
}

afterEach(async () => {
  await env.DB.prepare("DELETE FROM settings_overlay").run();
  expect((await call("POST", "/api/config/reload", { key: await admin() })).status).toBe(200);
});

const ENV_ONLY = [
  "CHANNEL_TELEGRAM_API_BASE",
  "CHANNEL_TWILIO_API_BASE",
  "CHANNEL_WHATSAPP_API_BASE",
  "CHANNEL_SLACK_API_BASE",
  "CONNECTORS_PROVIDERS",
  "SECRET_REFERENCE_ALLOWLIST",
  "SECRET_REFERENCE_ORIGINS",
];

describe("URLs that receive a stored secret are env only", () => {
  it.each(ENV_ONLY)("%s: the overlay, a profile and a backup import refuse it, writing nothing", async (name) => {
    const key = await admin();
    const value =
      name === "CONNECTORS_PROVIDERS"
        ? "[]"
        : name === "SECRET_REFERENCE_ALLOWLIST"
          ? "SOME_TOKEN"
          : name === "SECRET_REFERENCE_ORIGINS"
            ? JSON.stringify({ SECRET_SOME_TOKEN: [COLLECTOR] })
            : COLLECTOR;
    const set = await call("POST", "/api/config/env", { key, body: { set: { [name]: value } } });
    expect(set.status).toBe(400);
    expect(set.body.error).toContain("env-only");
    expect(set.body.error).not.toContain(COLLECTOR);
    const profile = uniq("envonly");
    const put = await call("PUT", `/api/config/profiles/${profile}`, { key, body: { env: { [name]: value } } });
    expect(put.status).toBe(400);
    expect((await call("GET", `/api/config/profiles/${profile}`, { key })).status).toBe(404);
    const imported = await call("POST", "/api/backup/import", {
      key,
      body: { document: { version: 1, exported_at: new Date().toISOString(), sections: { "settings-overlay": [{ name, value }] } } },
    });
    expect(imported.status).toBe(400);
    expect(imported.body.error).toContain("settings-overlay");
    expect(await overlayNames()).toEqual([]);
    // The settings schema says so too.
    const schema = await call("GET", "/api/config/settings-schema", { key });
    expect(schema.body.data.properties[name]["x-setting"].overlay).toBe(false);
  });

  it("the Telegram bot token never reaches a host an admin stored in the overlay: the row is ignored and sends go to the env's API base", async () => {
    const calls = fakeNetwork((req) => {
      const url = new URL(req.url);
      if (url.host === "telegram.fake") return Response.json({ ok: true, result: { message_id: Math.floor(Math.random() * 1e6) } });
      return new Response("collected", { status: 200 });
    });
    // Written straight into the table, behind the doors (which refuse it).
    await env.DB.prepare("INSERT INTO settings_overlay (name, value, secret, updated_at) VALUES ('CHANNEL_TELEGRAM_API_BASE', ?, 0, ?)")
      .bind(COLLECTOR, new Date().toISOString())
      .run();
    expect((await call("POST", "/api/config/reload", { key: await admin() })).status).toBe(200);
    const mode = await call("GET", "/api/config/mode", { key: await admin() });
    expect(mode.body.data.ignored_names).toContain("CHANNEL_TELEGRAM_API_BASE");

    const k = await echoKey();
    const route = await createRoute({
      door: "channel",
      channel: "telegram",
      our_identity: TEST_ENV.telegramBotId,
      target_kind: "tool",
      target_name: "echo",
      execution_key: k.user_id,
    });
    try {
      const chat = Number(String(Date.now()).slice(-8));
      const update = {
        update_id: Number(String(Date.now()).slice(-9)),
        message: { message_id: 1, date: 1, chat: { id: chat, type: "private" }, from: { id: chat, is_bot: false, first_name: "A" }, text: "hi bot" },
      };
      expect((await postTelegram(update)).status).toBe(200);
      await eventually(
        () => rawRows(`bridge:${route.name}:${chat}`),
        (x) => x[0]?.status === "provisional",
      );
      expect(calls.map((c) => new URL(c.url).origin)).toEqual(["https://telegram.fake"]);
      expect(calls.some((c) => c.url.includes("telegram-test-token") && !c.url.startsWith("https://telegram.fake/"))).toBe(false);
    } finally {
      await call("DELETE", `/api/conversations/${route.name}`, { key: await admin() });
    }
  });
});
