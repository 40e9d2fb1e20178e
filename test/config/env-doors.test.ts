/**
 * `GET|POST /api/config/env`, mode, reload: a setting changed at runtime takes
 * effect on the next request without a restart, in the Worker and in the objects; an invalid
 * overlay is refused with nothing written; secrets are never shown and are sealed at rest.
 */
import { env } from "cloudflare:workers";
import { afterEach, describe, expect, it } from "vitest";
import { TOO_LONG_TEXT } from "../../src/channels/chunking";
import { writeOverlay } from "../../src/config/overlay-store";
import { createRoute, echoKey, echoRoute, send } from "../helpers/bridge";
import { fakeNetwork, type NetCall } from "../helpers/network";
import { postTelegram, postTwilio } from "../helpers/webhooks";
import { BASE, admin, call, fetchWithEnv, mintKey, uniq } from "../helpers/http";
import { eventually, rawRows } from "../helpers/threads";
import { must } from "../../src/platform/must";

const CAP = "CONVERSATIONS_PER_ADDRESS_TURNS_PER_HOUR";

async function setEnv(body: unknown, key?: string) {
  return call("POST", "/api/config/env", { key: key ?? (await admin()), body });
}

async function overlayRows() {
  return (await env.DB.prepare("SELECT name, value, secret FROM settings_overlay ORDER BY name").all<{ name: string; value: string; secret: number }>())
    .results;
}

async function storedGeneration(): Promise<number> {
  return must(await env.DB.prepare("SELECT generation FROM settings_generation WHERE id = 1").first<number>("generation"), "the row");
}

/** Empties the overlay and makes this isolate re-read it at once. */
afterEach(async () => {
  await env.DB.prepare("DELETE FROM settings_overlay").run();
  const r = await call("POST", "/api/config/reload", { key: await admin() });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
});

describe("a setting changed at runtime", () => {
  it("lowers the message door's rate cap on the next request, and unsetting restores the env's", async () => {
    const r = await echoRoute();
    const caller = await mintKey({ scopes: ["conversations"] });
    const before = await storedGeneration();
    const w = await setEnv({ set: { [CAP]: 2 } });
    expect(w.status, JSON.stringify(w.body)).toBe(200);
    expect(w.body.data).toEqual({ generation: before + 1, set: [CAP], unset: [] });

    expect((await send(r.name, { external_user_id: "a", text: "1" }, caller.key)).status).toBe(202);
    expect((await send(r.name, { external_user_id: "b", text: "2" }, caller.key)).status).toBe(202);
    const over = await send(r.name, { external_user_id: "c", text: "3" }, caller.key);
    expect(over.status).toBe(429);

    // Back to the env's 20: a fresh caller gets far past 2.
    expect((await setEnv({ unset: [CAP] })).status).toBe(200);
    const other = await mintKey({ scopes: ["conversations"] });
    for (let i = 0; i < 4; i++) expect((await send(r.name, { external_user_id: `u${i}`, text: "x" }, other.key)).status).toBe(202);
  });

  it("reaches the thread objects: split caps and the chunk bound come from the overlay", async () => {
    const calls = fakeNetwork((req) => {
      if (new URL(req.url).host === "twilio.fake") return Response.json({ sid: `SM${crypto.randomUUID().slice(0, 8)}` }, { status: 201 });
      return new Response("unexpected", { status: 599 });
    });
    expect(
      (
        await setEnv({
          set: { CONVERSATIONS_MAX_MESSAGE_CHARS: { twilio: 10, whatsapp: 4096, slack: 40000, telegram: 4096 }, CONVERSATIONS_MAX_OUTBOUND_CHUNKS: "2" },
        })
      ).status,
    ).toBe(200);
    const ours = `+1555${Date.now().toString().slice(-7)}`;
    const them = `+1556${Date.now().toString().slice(-7)}`;
    const k = await echoKey();
    const route = await createRoute({
      door: "channel",
      channel: "twilio",
      our_identity: ours,
      target_kind: "tool",
      target_name: "echo",
      execution_key: k.user_id,
    });
    // 40 characters: one message under the env's 1600 cap, four 10-character chunks under the overlay's.
    await postTwilio({ MessageSid: `SM${uniq("c")}`, From: them, To: ours, Body: "abcd ".repeat(8).trim() });
    const rows = await eventually(
      () => rawRows(`bridge:${route.name}:${them}`),
      (x) => x[0]?.status === "failed",
    );
    expect(rows[0]?.status).toBe("failed");
    expect(JSON.parse(rows[0].record).error).toContain("max_outbound_chunks");
    const sent = calls.filter((c: NetCall) => c.url.includes("twilio.fake")).map((c) => new URLSearchParams(c.body).get("Body"));
    expect(sent).toEqual([TOO_LONG_TEXT]);
  });

  it("reaches the channel doors: an overlaid webhook secret replaces the env's", async () => {
    const w = await setEnv({ set: { CHANNEL_TELEGRAM_WEBHOOK_SECRET: "overlay-webhook-secret" } });
    expect(w.status).toBe(200);
    const update = { update_id: Math.floor(Math.random() * 1e9), message: { message_id: 1, chat: { id: 42, type: "private" }, from: { id: 42 }, text: "hi" } };
    expect((await postTelegram(update)).status).toBe(401);
    expect((await postTelegram({ ...update, update_id: update.update_id + 1 }, { secret: "overlay-webhook-secret" })).status).toBe(200);
  });
});

describe("validation: an invalid overlay is refused and nothing is written", () => {
  it("refuses a combination the settings validator rejects, naming the variables and never the value", async () => {
    await setEnv({ set: { CONVERSATIONS_THREAD_QUEUE_DEPTH: "7" } });
    const gen = await storedGeneration();
    const rows = await overlayRows();
    const r = await setEnv({ set: { CONVERSATIONS_INTAKE_CLAIM_REFRESH_SECONDS: "987654" }, unset: ["CONVERSATIONS_THREAD_QUEUE_DEPTH"] });
    expect(r.status).toBe(400);
    expect(r.body.error).toContain("CONVERSATIONS_INTAKE_CLAIM_REFRESH_SECONDS");
    expect(r.body.error).not.toContain("987654");
    expect(await storedGeneration()).toBe(gen);
    expect(await overlayRows()).toEqual(rows);
    // The isolate still runs with the last good overlay.
    const view = await call("GET", "/api/config/env", { key: await admin() });
    expect(view.body.data.settings.find((s: { name: string }) => s.name === "CONVERSATIONS_THREAD_QUEUE_DEPTH")).toMatchObject({
      source: "overlay",
      value: "7",
    });
  });

  it.each([
    ["an unknown name", { set: { NOT_A_SETTING_fzqmarker: "1" } }, "set"],
    ["a lower-case look-alike", { set: { conversations_per_address_turns_per_hour: "1" } }, "set"],
    ["the bootstrap token (env only)", { set: { ACCESS_CONTROL_BOOTSTRAP_TOKEN: "x" } }, "set"],
    ["the settings key (env only)", { set: { SETTINGS_ENCRYPTION_KEY: "x" } }, "set"],
    ["a binding", { set: { DB: "x" } }, "set"],
    ["an unknown name to unset", { unset: ["NOT_A_SETTING_fzqmarker"] }, "unset"],
    ["a secret_keys entry outside set", { set: { [CAP]: "3" }, secret_keys: ["CONVERSATIONS_PREFIX"] }, "secret_keys"],
    ["a name both set and unset", { set: { [CAP]: "3" }, unset: [CAP] }, "both"],
    ["nothing to change", {}, "nothing"],
    ["a null value", { set: { [CAP]: null } }, CAP],
    ["an unknown field", { set: { [CAP]: "3" }, extra: 1 }, "extra"],
    ["a value nested past the JSON bound", { set: { CONVERSATIONS_MAX_MESSAGE_CHARS: JSON.parse("[".repeat(5000) + "]".repeat(5000)) } }, "nest"],
  ])("400 for %s, not echoing the name", async (_what, body, names) => {
    const gen = await storedGeneration();
    const r = await setEnv(body);
    expect(r.status).toBe(400);
    expect(r.body.error).toContain(names);
    expect(r.body.error.toLowerCase()).not.toContain("fzqmarker");
    expect(await storedGeneration()).toBe(gen);
    expect(await overlayRows()).toEqual([]);
  });

  it("takes typed values as the text the env would carry", async () => {
    const r = await setEnv({ set: { [CAP]: 5, OUTBOUND_ALLOW_PRIVATE_HOSTS: false, CONVERSATIONS_PREFIX: "convs" } });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(await overlayRows()).toEqual([
      { name: CAP, value: "5", secret: 0 },
      { name: "CONVERSATIONS_PREFIX", value: "convs", secret: 0 },
      { name: "OUTBOUND_ALLOW_PRIVATE_HOSTS", value: "false", secret: 0 },
    ]);
  });

  it("refuses a write validated against a generation that moved meanwhile (409), writing nothing", async () => {
    const gen = await storedGeneration();
    await expect(
      writeOverlay(env.DB, { expectedGeneration: gen - 1, upserts: [{ name: CAP, value: "3", secret: false }], deletes: [], now: new Date().toISOString() }),
    ).rejects.toMatchObject({ status: 409 });
    expect(await overlayRows()).toEqual([]);
    expect(await storedGeneration()).toBe(gen);
  });
});

describe("secrets", () => {
  const SECRET = "tg-secret-value-0123456789";

  it("are never shown, only whether they are set, and are sealed at rest", async () => {
    const w = await setEnv({
      set: { CHANNEL_TELEGRAM_WEBHOOK_SECRET: SECRET, CHANNEL_SLACK_BOT_USER_ID: "UOVERLAY" },
      secret_keys: ["CHANNEL_SLACK_BOT_USER_ID"],
    });
    expect(w.status, JSON.stringify(w.body)).toBe(200);
    const key = await admin();
    const view = await call("GET", "/api/config/env", { key });
    const byName = Object.fromEntries(view.body.data.settings.map((s: { name: string }) => [s.name, s]));
    expect(byName.CHANNEL_TELEGRAM_WEBHOOK_SECRET).toEqual({
      name: "CHANNEL_TELEGRAM_WEBHOOK_SECRET",
      source: "overlay",
      secret: true,
      set: true,
      overlay: true,
    });
    expect(byName.CHANNEL_SLACK_BOT_USER_ID).toEqual({ name: "CHANNEL_SLACK_BOT_USER_ID", source: "overlay", secret: true, set: true, overlay: true });
    // An env secret is masked too; the bootstrap token is listed, env-only.
    expect(byName.CHANNEL_TWILIO_AUTH_TOKEN).toEqual({ name: "CHANNEL_TWILIO_AUTH_TOKEN", source: "env", secret: true, set: true, overlay: true });
    expect(byName.ACCESS_CONTROL_BOOTSTRAP_TOKEN).toEqual({ name: "ACCESS_CONTROL_BOOTSTRAP_TOKEN", source: "env", secret: true, set: true, overlay: false });
    expect(byName[CAP]).toEqual({ name: CAP, source: "default", secret: false, set: false, value: "20", overlay: true });
    for (const path of ["/api/config/env", "/api/config/mode", "/api/system/kinds", "/api/fleet/workers"]) {
      const text = JSON.stringify((await call("GET", path, { key })).body);
      for (const secret of [
        SECRET,
        "UOVERLAY",
        "twilio-test-token",
        String(env.ACCESS_CONTROL_BOOTSTRAP_TOKEN),
        String((env as unknown as Record<string, unknown>).SETTINGS_ENCRYPTION_KEY),
      ])
        expect(text, path).not.toContain(secret);
    }
    const rows = await overlayRows();
    expect(rows.map((r) => [r.name, r.secret])).toEqual([
      ["CHANNEL_SLACK_BOT_USER_ID", 1],
      ["CHANNEL_TELEGRAM_WEBHOOK_SECRET", 1],
    ]);
    for (const row of rows) {
      expect(row.value).not.toContain(SECRET);
      expect(row.value).not.toContain("UOVERLAY");
      expect(Object.keys(JSON.parse(row.value)).sort()).toEqual(["ct", "iv", "kid"]);
    }
    // A value sealed for one name does not open under another (the AAD binds it to its name).
    await env.DB.prepare(
      "UPDATE settings_overlay SET value = (SELECT value FROM settings_overlay WHERE name = 'CHANNEL_TELEGRAM_WEBHOOK_SECRET') WHERE name = 'CHANNEL_SLACK_BOT_USER_ID'",
    ).run();
    await call("POST", "/api/config/reload", { key });
    const broken = await call("GET", "/api/channels", { key });
    expect(broken.status).toBe(500);
    expect(broken.body.error).toContain("CHANNEL_SLACK_BOT_USER_ID");
    expect(JSON.stringify(broken.body)).not.toContain(SECRET);
  });

  it("stay secret when set again without secret_keys", async () => {
    await setEnv({ set: { CONVERSATIONS_PREFIX: "first" }, secret_keys: ["CONVERSATIONS_PREFIX"] });
    await setEnv({ set: { CONVERSATIONS_PREFIX: "second" } });
    const rows = await overlayRows();
    expect(rows).toHaveLength(1);
    expect(rows[0].secret).toBe(1);
    expect(rows[0].value).not.toContain("second");
  });

  it("rotate: with the old key listed as previous, reload re-seals overlay and profile secrets under the new key", async () => {
    const key = await admin();
    const oldKey = String((env as unknown as Record<string, unknown>).SETTINGS_ENCRYPTION_KEY);
    const newKey = btoa(String.fromCharCode(...crypto.getRandomValues(new Uint8Array(32))));
    expect((await setEnv({ set: { CHANNEL_TELEGRAM_WEBHOOK_SECRET: SECRET } })).status).toBe(200);
    const profile = uniq("rot");
    expect((await call("PUT", `/api/config/profiles/${profile}`, { key, body: { env: { CHANNEL_SLACK_BOT_TOKEN: "xoxb-rotated" } } })).status).toBe(200);
    const kidOf = (text: string) => (JSON.parse(text) as { kid: string }).kid;
    const before = kidOf((await overlayRows())[0].value);

    const rotated = { ...env, SETTINGS_ENCRYPTION_KEY: newKey, SETTINGS_ENCRYPTION_KEY_PREVIOUS: oldKey };
    const res = await fetchWithEnv(rotated, new Request(`${BASE}/api/config/reload`, { method: "POST", headers: { "x-api-key": key } }));
    expect(res.status).toBe(200);
    expect(((await res.json()) as { data: { resealed: number } }).data.resealed).toBe(2);
    const after = kidOf((await overlayRows())[0].value);
    expect(after).not.toBe(before);
    const sealed = await env.DB.prepare("SELECT sealed FROM config_profiles WHERE name = ?").bind(profile).first<string>("sealed");
    expect(kidOf(JSON.stringify(JSON.parse(must(sealed, "sealed")).CHANNEL_SLACK_BOT_TOKEN))).toBe(after);

    // The new key alone now opens everything; the old key alone no longer does.
    const { IsolateSettings } = await import("../../src/config/isolate-settings");
    expect((await new IsolateSettings().ensure({ ...env, SETTINGS_ENCRYPTION_KEY: newKey })).result.ok).toBe(true);
    expect((await new IsolateSettings().ensure(env)).result.ok).toBe(false);
    await call("DELETE", `/api/config/profiles/${profile}`, { key });
  });

  it("cannot be written without SETTINGS_ENCRYPTION_KEY (501); other settings can", async () => {
    const key = await admin();
    const noKey = Object.fromEntries(Object.entries(env).filter(([k]) => k !== "SETTINGS_ENCRYPTION_KEY"));
    const post = (body: unknown) =>
      fetchWithEnv(
        noKey,
        new Request(`${BASE}/api/config/env`, {
          method: "POST",
          headers: { "x-api-key": key, "content-type": "application/json" },
          body: JSON.stringify(body),
        }),
      );
    const secret = await post({ set: { CHANNEL_TELEGRAM_WEBHOOK_SECRET: SECRET } });
    expect(secret.status).toBe(501);
    expect(await secret.json()).toMatchObject({ code: "settings-encryption-not-configured" });
    expect(await overlayRows()).toEqual([]);
    expect((await post({ set: { [CAP]: "4" } })).status).toBe(200);
  });
});

describe("generation, mode, reload", () => {
  it("bumps the generation on every write and reload, and says so in mode and the fleet census", async () => {
    const key = await admin();
    const g0 = await storedGeneration();
    expect((await setEnv({ set: { [CAP]: "9" } })).body.data.generation).toBe(g0 + 1);
    const reload = await call("POST", "/api/config/reload", { key });
    expect(reload.body.data).toEqual({ generation: g0 + 2, resealed: 0 });
    const fleet = await call("POST", "/api/fleet/reload-config", { key });
    expect(fleet.status).toBe(200);
    expect(fleet.body.data.generation).toBe(g0 + 3);
    const mode = await call("GET", "/api/config/mode", { key });
    expect(mode.body.data).toMatchObject({
      mode: "env+overlay",
      generation: g0 + 3,
      in_force_generation: g0 + 3,
      refresh_seconds: 2,
      overlay_names: [CAP],
      ignored_names: [],
      encryption: "configured",
      valid: true,
      errors: [],
    });
    expect(mode.body.data.env_only).toEqual(expect.arrayContaining(["ACCESS_CONTROL_BOOTSTRAP_TOKEN", "SETTINGS_ENCRYPTION_KEY", "SETTINGS_REFRESH_SECONDS"]));
    const workers = await call("GET", "/api/fleet/workers", { key });
    expect(workers.body.data.workers[0]).toMatchObject({ kind: "isolate", generation: g0 + 3, state: "running", stale: false, last_op: "settings-write" });
  });

  it("keeps the config doors open when the overlay breaks the settings, so it can be repaired", async () => {
    const key = await admin();
    // Written behind the doors' back, then picked up by a reload.
    await env.DB.prepare(
      "INSERT INTO settings_overlay (name, value, secret, updated_at) VALUES ('CONVERSATIONS_INTAKE_CLAIM_REFRESH_SECONDS', '500', 0, 'x')",
    ).run();
    expect((await call("POST", "/api/config/reload", { key })).status).toBe(200);
    const door = await call("GET", "/api/conversations", { key });
    expect(door.status).toBe(500);
    expect(door.body).toMatchObject({ code: "invalid-configuration" });
    const mode = await call("GET", "/api/config/mode", { key });
    expect(mode.status).toBe(200);
    expect(mode.body.data.valid).toBe(false);
    expect(mode.body.data.errors.join()).toContain("CONVERSATIONS_INTAKE_CLAIM_REFRESH_SECONDS");
    expect((await setEnv({ unset: ["CONVERSATIONS_INTAKE_CLAIM_REFRESH_SECONDS"] })).status).toBe(200);
    expect((await call("GET", "/api/conversations", { key })).status).toBe(200);
  });
});

describe("who may read and write", () => {
  it("config:read reads every read door and the diff; only an admin writes", async () => {
    const reader = await mintKey({ scopes: ["config:read"] });
    const writer = await mintKey({ scopes: ["config"] });
    for (const path of ["/api/config/env", "/api/config/mode", "/api/config/settings-schema", "/api/config/profiles"]) {
      expect((await call("GET", path, { key: reader.key })).status, path).toBe(200);
    }
    expect((await setEnv({ set: { [CAP]: "3" } }, reader.key)).status).toBe(403);
    expect((await setEnv({ set: { [CAP]: "3" } }, writer.key)).status).toBe(403);
    expect((await call("POST", "/api/config/reload", { key: writer.key })).status).toBe(403);
    expect((await call("GET", "/api/config/env", { key: (await mintKey({ scopes: ["system:read"] })).key })).status).toBe(403);
  });
});
