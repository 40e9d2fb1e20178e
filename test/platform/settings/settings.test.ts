import { describe, expect, it } from "vitest";
import { DEFAULT_MAX_MESSAGE_CHARS, NUMERIC_SETTINGS, parseSettings } from "../../../src/platform/settings/settings";

const base = { DB: {}, CONVERSATIONS_STORE_URL: "d1://DB" };

describe("settings (spec §8, decisions §3)", () => {
  it("applies every default", () => {
    const r = parseSettings(base);
    if (!r.ok) throw new Error(r.errors.join());
    const c = r.settings.conversations;
    expect(c.storeUrl).toBe("d1://DB");
    expect(c.prefix).toBe("conversations");
    expect(c.maxConcurrentTurns).toBe(10);
    expect(c.threadQueueDepth).toBe(20);
    expect(c.perAddressTurnsPerHour).toBe(20);
    expect(c.addressBucketMaxEntries).toBe(50000);
    expect(c.syncWaitMaxSeconds).toBe(120);
    expect(c.intakeClaimLeaseSeconds).toBe(120);
    expect(c.intakeClaimRefreshSeconds).toBe(30);
    expect(c.turnMaxAttempts).toBe(2);
    expect(c.deliveryMaxAttempts).toBe(8);
    expect(c.deliveryBackoffBaseSeconds).toBe(60);
    expect(c.deliveryBackoffMaxSeconds).toBe(900);
    expect(c.deliveryClaimLeaseSeconds).toBe(120);
    expect(c.deliverySendTimeoutSeconds).toBe(60);
    expect(c.deliveryCallbackTimeoutSeconds).toBe(15);
    expect(c.deliverySweepIntervalSeconds).toBe(60);
    expect(c.deliveryGraceSeconds).toBe(3600);
    expect(c.maxOutboundChunks).toBe(10);
    expect(c.inboundDedupeTtlSeconds).toBe(172800);
    expect(c.answerRetentionTtlSeconds).toBe(2592000);
    expect(c.indexFlushBatch).toBe(20);
    expect(c.indexFlushLagSeconds).toBe(1);
    expect(c.maxMessageChars).toEqual(DEFAULT_MAX_MESSAGE_CHARS);
    expect(r.settings.checkpoint).toEqual({ provider: "kv", ttlMinutes: null });
  });

  it("bounds the listing flush: a batch of at least 10 settled turns, a lag of at most 60 s", () => {
    const ok = parseSettings({ ...base, CONVERSATIONS_INDEX_FLUSH_BATCH: "10", CONVERSATIONS_INDEX_FLUSH_LAG_SECONDS: "0.05" });
    expect(ok.ok && [ok.settings.conversations.indexFlushBatch, ok.settings.conversations.indexFlushLagSeconds]).toEqual([10, 0.05]);
    const small = parseSettings({ ...base, CONVERSATIONS_INDEX_FLUSH_BATCH: "9" });
    expect(!small.ok && small.errors).toEqual(["CONVERSATIONS_INDEX_FLUSH_BATCH must be at least 10"]);
    const long = parseSettings({ ...base, CONVERSATIONS_INDEX_FLUSH_LAG_SECONDS: "61" });
    expect(!long.ok && long.errors).toEqual(["CONVERSATIONS_INDEX_FLUSH_LAG_SECONDS must be at most 60"]);
    const frac = parseSettings({ ...base, CONVERSATIONS_INDEX_FLUSH_BATCH: "12.5" });
    expect(!frac.ok && frac.errors).toEqual(["CONVERSATIONS_INDEX_FLUSH_BATCH must be a whole number"]);
  });

  it("treats an unset or blank store url as no store", () => {
    const r = parseSettings({ CONVERSATIONS_STORE_URL: "  " });
    expect(r.ok && r.settings.conversations.storeUrl).toBeNull();
  });

  it.each(NUMERIC_SETTINGS.map((s) => s.name))("rejects %s <= 0 naming it", (name) => {
    const r = parseSettings({ ...base, [name]: "0" });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.errors.join("\n")).toContain(name);
  });

  it("rejects non-numbers and fractional counts", () => {
    const r = parseSettings({ ...base, CONVERSATIONS_THREAD_QUEUE_DEPTH: "abc", CONVERSATIONS_MAX_CONCURRENT_TURNS: "2.5" });
    expect(r.ok).toBe(false);
    if (!r.ok) {
      expect(r.errors.join()).toContain("CONVERSATIONS_THREAD_QUEUE_DEPTH");
      expect(r.errors.join()).toContain("CONVERSATIONS_MAX_CONCURRENT_TURNS must be a whole number");
    }
  });

  it("reads CONVERSATIONS_TURN_MAX_ATTEMPTS as a whole number of runs above 0", () => {
    const ok = parseSettings({ ...base, CONVERSATIONS_TURN_MAX_ATTEMPTS: "3" });
    expect(ok.ok && ok.settings.conversations.turnMaxAttempts).toBe(3);
    for (const bad of ["0", "-1", "1.5", "two"]) {
      const r = parseSettings({ ...base, CONVERSATIONS_TURN_MAX_ATTEMPTS: bad });
      expect(r.ok).toBe(false);
      if (!r.ok) expect(r.errors.join("\n")).toContain("CONVERSATIONS_TURN_MAX_ATTEMPTS");
    }
  });

  it("accepts fractional durations", () => {
    const r = parseSettings({ ...base, CONVERSATIONS_DELIVERY_BACKOFF_BASE_SECONDS: "0.5" });
    expect(r.ok && r.settings.conversations.deliveryBackoffBaseSeconds).toBe(0.5);
  });

  it.each([
    [
      { CONVERSATIONS_INTAKE_CLAIM_REFRESH_SECONDS: "120" },
      "CONVERSATIONS_INTAKE_CLAIM_REFRESH_SECONDS must be below CONVERSATIONS_INTAKE_CLAIM_LEASE_SECONDS",
    ],
    [{ CONVERSATIONS_DELIVERY_SEND_TIMEOUT_SECONDS: "120" }, "CONVERSATIONS_DELIVERY_SEND_TIMEOUT_SECONDS must be below"],
    [{ CONVERSATIONS_DELIVERY_CALLBACK_TIMEOUT_SECONDS: "200" }, "CONVERSATIONS_DELIVERY_CALLBACK_TIMEOUT_SECONDS must be below"],
    [{ CONVERSATIONS_DELIVERY_BACKOFF_BASE_SECONDS: "1000" }, "CONVERSATIONS_DELIVERY_BACKOFF_BASE_SECONDS must not exceed"],
  ])("enforces the cross-field validators (%o)", (extra, message) => {
    const r = parseSettings({ ...base, ...extra });
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.errors.join("\n")).toContain(message);
  });

  it("reads max_message_chars as a JSON map and validates entries", () => {
    const ok = parseSettings({ ...base, CONVERSATIONS_MAX_MESSAGE_CHARS: '{"twilio":160,"web":500}' });
    expect(ok.ok && ok.settings.conversations.maxMessageChars).toEqual({ twilio: 160, web: 500 });
    expect(parseSettings({ ...base, CONVERSATIONS_MAX_MESSAGE_CHARS: '{"twilio":0}' }).ok).toBe(false);
    expect(parseSettings({ ...base, CONVERSATIONS_MAX_MESSAGE_CHARS: "[1]" }).ok).toBe(false);
    expect(parseSettings({ ...base, CONVERSATIONS_MAX_MESSAGE_CHARS: "not json" }).ok).toBe(false);
  });

  it("validates the store url and its binding", () => {
    expect(parseSettings({ CONVERSATIONS_STORE_URL: "redis://x" }).ok).toBe(false);
    expect(parseSettings({ CONVERSATIONS_STORE_URL: "d1://MISSING" }).ok).toBe(false);
  });

  it("validates the checkpoint provider and TTL", () => {
    const r = parseSettings({ ...base, LLM_PROVIDER_CHECKPOINT: "d1", LLM_PROVIDER_CHECKPOINT_TTL_MINUTES: "30" });
    expect(r.ok && r.settings.checkpoint).toEqual({ provider: "d1", ttlMinutes: 30 });
    expect(parseSettings({ ...base, LLM_PROVIDER_CHECKPOINT: "redis" }).ok).toBe(false);
    expect(parseSettings({ ...base, LLM_PROVIDER_CHECKPOINT_TTL_MINUTES: "-1" }).ok).toBe(false);
  });

  it("reads OUTBOUND_ALLOW_PRIVATE_HOSTS as true or false only, default false", () => {
    const def = parseSettings(base);
    expect(def.ok && def.settings.outbound).toEqual({ allowPrivateHosts: false });
    for (const [raw, want] of [
      ["true", true],
      ["TRUE", true],
      [" true ", true],
      ["false", false],
      ["", false],
    ] as const) {
      const r = parseSettings({ ...base, OUTBOUND_ALLOW_PRIVATE_HOSTS: raw });
      expect(r.ok && r.settings.outbound.allowPrivateHosts).toBe(want);
    }
    for (const raw of ["yes", "1", "on", "maybe"]) {
      const r = parseSettings({ ...base, OUTBOUND_ALLOW_PRIVATE_HOSTS: raw });
      expect(r.ok).toBe(false);
      if (!r.ok) expect(r.errors).toContain("OUTBOUND_ALLOW_PRIVATE_HOSTS must be true or false");
    }
  });

  it("reads SECRET_REFERENCE_ALLOWLIST as a comma-separated list of names, default empty", () => {
    const def = parseSettings(base);
    expect(def.ok && def.settings.secretReferences).toEqual({ allowlist: [] });
    const r = parseSettings({ ...base, SECRET_REFERENCE_ALLOWLIST: " WEATHER_TOKEN , crm_token,,OPENAI_API_KEY " });
    expect(r.ok && r.settings.secretReferences.allowlist).toEqual(["WEATHER_TOKEN", "crm_token", "OPENAI_API_KEY"]);
    const bad = parseSettings({ ...base, SECRET_REFERENCE_ALLOWLIST: "GOOD,not-a-name" });
    expect(bad.ok).toBe(false);
    if (!bad.ok) expect(bad.errors).toContain("SECRET_REFERENCE_ALLOWLIST must be a comma-separated list of env var names");
  });

  it.each([
    "ACCESS_CONTROL_BOOTSTRAP_TOKEN",
    "CONVERSATIONS_STORE_URL",
    "LLM_PROVIDER_CHECKPOINT",
    "OUTBOUND_ALLOW_PRIVATE_HOSTS",
    "SECRET_REFERENCE_ALLOWLIST",
    "CHANNEL_TELEGRAM_BOT_TOKEN",
    "channel_slack_bot_token",
    "DB",
    "SOME_BINDING",
  ])("makes the settings invalid when SECRET_REFERENCE_ALLOWLIST names a service setting, binding or channel secret (%s)", (name) => {
    const r = parseSettings({ ...base, SOME_BINDING: {}, SECRET_REFERENCE_ALLOWLIST: `WEATHER_TOKEN,${name}` });
    expect(r.ok).toBe(false);
    if (!r.ok) {
      const text = r.errors.join("\n");
      expect(text).toContain("SECRET_REFERENCE_ALLOWLIST names a variable that is never referenceable");
      // The entry itself is not echoed (settings errors carry no values).
      expect(text.replace(/SECRET_REFERENCE_ALLOWLIST/g, "")).not.toContain(name);
    }
  });
});
