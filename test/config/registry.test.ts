/**
 * The settings registry (src/platform/settings/registry.ts) and the JSON Schema generated from it: the
 * registry names exactly the variables the service reads (parseSettings, the channel adapters,
 * bootstrap), so a setting added later without a registry entry fails here; the schema covers
 * every entry, validates the defaults and refuses wrong values.
 */
import { Validator } from "@cfworker/json-schema";
import { describe, expect, it } from "vitest";
import { SLACK_ENV } from "../../src/channels/slack";
import { TELEGRAM_ENV } from "../../src/channels/telegram";
import { TWILIO_ENV } from "../../src/channels/twilio";
import { WHATSAPP_ENV } from "../../src/channels/whatsapp";
import { settingsSchema } from "../../src/config/settings-schema";
import { SETTINGS, isOverlayable, isSecretSetting, settingDefinition } from "../../src/platform/settings/registry";
import { parseSettings } from "../../src/platform/settings/settings";
import { admin, call, mintKey } from "../helpers/http";
import { must } from "../../src/platform/must";

/** The variables parseSettings reads from `base`: every property get on a recording proxy. */
function namesRead(base: Record<string, unknown>): Set<string> {
  const read = new Set<string>();
  const proxy = new Proxy(base, {
    get(target, prop, receiver) {
      if (typeof prop === "string") read.add(prop);
      return Reflect.get(target, prop, receiver);
    },
  });
  parseSettings(proxy);
  return read;
}

const exactNames = SETTINGS.filter((s) => !s.family).map((s) => s.name);

describe("the settings registry", () => {
  it("names every variable parseSettings reads, and parseSettings reads every non-channel entry", () => {
    // Family members present, so the family readers (NOTIFICATIONS_FROM_<CHANNEL>) read them too.
    const read = namesRead({ DB: {}, NOTIFICATIONS_FROM_TWILIO: "+1555", NOTIFICATIONS_RECIPIENT_SLACK: "C1" });
    const unknown = [...read].filter((n) => !settingDefinition(n));
    expect(unknown, "variables parseSettings reads that src/platform/settings/registry.ts does not list").toEqual([]);
    const channelNames = new Set([TWILIO_ENV, WHATSAPP_ENV, TELEGRAM_ENV, SLACK_ENV].flatMap((e) => Object.values(e) as string[]));
    // The bootstrap token is read by its door, the usage meter's token by the Worker's entry (src/index.ts).
    const ownReaders = new Set(["ACCESS_CONTROL_BOOTSTRAP_TOKEN", "USAGE_METER_TOKEN"]);
    const notRead = exactNames.filter((n) => !read.has(n) && !channelNames.has(n) && !ownReaders.has(n));
    expect(notRead, "registry entries nothing reads").toEqual([]);
    expect(
      [...channelNames].filter((n) => !settingDefinition(n)),
      "channel variables missing from the registry",
    ).toEqual([]);
    expect(
      // The web channel's settings are read by parseSettings (its doors' settings), not by an adapter.
      exactNames.filter((n) => n.startsWith("CHANNEL_") && !channelNames.has(n) && !read.has(n)),
      "registry channel entries no adapter reads",
    ).toEqual([]);
  });

  it("lists each name once", () => {
    expect(new Set(SETTINGS.map((s) => s.name)).size).toBe(SETTINGS.length);
  });

  it("keeps bindings, the bootstrap token and the overlay's own settings out of the overlay", () => {
    for (const n of [
      "DB",
      "THREADS",
      "ACCESS_CONTROL_BOOTSTRAP_TOKEN",
      "SETTINGS_ENCRYPTION_KEY",
      "SETTINGS_ENCRYPTION_KEY_PREVIOUS",
      "SETTINGS_REFRESH_SECONDS",
      "SECRET_ANYTHING",
      "conversations_prefix",
    ]) {
      expect(isOverlayable(n), n).toBe(false);
    }
    for (const n of [
      "CONVERSATIONS_PER_ADDRESS_TURNS_PER_HOUR",
      "CHANNEL_TWILIO_AUTH_TOKEN",
      "NOTIFICATIONS_FROM_SLACK",
      "JQ_BUDGET_STEPS",
      "OUTBOUND_ALLOW_PRIVATE_HOSTS",
      "STATES_STORE_URL",
    ]) {
      expect(isOverlayable(n), n).toBe(true);
    }
  });

  it("marks tokens, signing secrets and encryption keys secret", () => {
    for (const n of [
      "CHANNEL_TWILIO_AUTH_TOKEN",
      "CHANNEL_WHATSAPP_APP_SECRET",
      "CHANNEL_WHATSAPP_ACCESS_TOKEN",
      "CHANNEL_WHATSAPP_VERIFY_TOKEN",
      "CHANNEL_TELEGRAM_BOT_TOKEN",
      "CHANNEL_TELEGRAM_WEBHOOK_SECRET",
      "CHANNEL_SLACK_SIGNING_SECRET",
      "CHANNEL_SLACK_BOT_TOKEN",
      "CONNECTORS_ENCRYPTION_KEY",
      "CONNECTORS_ENCRYPTION_KEY_PREVIOUS",
      "ACCESS_CONTROL_BOOTSTRAP_TOKEN",
      "SETTINGS_ENCRYPTION_KEY",
    ]) {
      expect(isSecretSetting(n), n).toBe(true);
    }
    for (const n of ["CHANNEL_TWILIO_ACCOUNT_SID", "CHANNEL_SLACK_BOT_USER_ID", "CONVERSATIONS_STORE_URL", "CONNECTORS_PROVIDERS"])
      expect(isSecretSetting(n), n).toBe(false);
  });

  it("states each default as parseSettings applies it", () => {
    const r = parseSettings({ DB: {} });
    if (!r.ok) throw new Error(r.errors.join());
    const c = r.settings.conversations;
    expect(settingDefinition("CONVERSATIONS_PER_ADDRESS_TURNS_PER_HOUR")?.default).toBe(c.perAddressTurnsPerHour);
    expect(settingDefinition("CONVERSATIONS_MAX_MESSAGE_CHARS")?.default).toEqual(c.maxMessageChars);
    expect(settingDefinition("JQ_BUDGET_STEPS")?.default).toBe(r.settings.jq.steps);
    expect(settingDefinition("NOTIFICATIONS_FEED_MAX")?.default).toBe(r.settings.notifications.feedMax);
    expect(settingDefinition("MARKETPLACE_LOCK_LEASE_SECONDS")?.default).toBe(r.settings.marketplace.lockLeaseSeconds);
    expect(settingDefinition("CONNECTORS_OAUTH_START_TTL_SECONDS")?.default).toBe(r.settings.connectors.startTtlSeconds);
    expect(settingDefinition("SETTINGS_REFRESH_SECONDS")?.default).toBe(r.settings.config.refreshSeconds);
    expect(settingDefinition("LLM_PROVIDER_CHECKPOINT")?.default).toBe(r.settings.checkpoint.provider);
  });
});

const KEYWORDS = new Set([
  "type",
  "title",
  "description",
  "default",
  "writeOnly",
  "minimum",
  "maximum",
  "exclusiveMinimum",
  "enum",
  "pattern",
  "format",
  "additionalProperties",
  "items",
  "x-setting",
]);
const TYPES = new Set(["string", "integer", "number", "boolean", "object", "array"]);

describe("GET /api/config/settings-schema", () => {
  it("is a draft 2020-12 JSON Schema with one property per setting and a pattern per family", async () => {
    const r = await call("GET", "/api/config/settings-schema", { key: await admin() });
    expect(r.status).toBe(200);
    const schema = r.body.data;
    expect(schema).toEqual(settingsSchema());
    expect(schema.$schema).toBe("https://json-schema.org/draft/2020-12/schema");
    expect(schema.type).toBe("object");
    expect(Object.keys(schema.properties).sort()).toEqual([...exactNames].sort());
    expect(Object.keys(schema.patternProperties).sort()).toEqual(
      SETTINGS.filter((s) => s.family)
        .map((s) => must(s.family, "s.family").source)
        .sort(),
    );
    for (const [name, prop] of Object.entries<Record<string, unknown>>({ ...schema.properties, ...schema.patternProperties })) {
      // Only keywords of the draft (plus the x- annotation), each with a well-formed value.
      expect(
        Object.keys(prop).filter((k) => !KEYWORDS.has(k)),
        name,
      ).toEqual([]);
      expect(TYPES.has(prop.type as string), name).toBe(true);
      expect(typeof prop.description, name).toBe("string");
      for (const k of ["minimum", "maximum", "exclusiveMinimum"]) if (k in prop) expect(typeof prop[k], `${name}.${k}`).toBe("number");
      if ("enum" in prop) expect(Array.isArray(prop.enum), name).toBe(true);
      if ("pattern" in prop) expect(() => new RegExp(prop.pattern as string, "u"), name).not.toThrow();
      // A stated default satisfies the setting's own schema.
      if ("default" in prop) expect(new Validator(prop as never, "2020-12").validate(prop.default).valid, `${name} default`).toBe(true);
    }
    for (const s of SETTINGS) {
      const prop = s.family ? schema.patternProperties[s.family.source] : schema.properties[s.name];
      expect(prop.writeOnly === true, `${s.name} writeOnly`).toBe(s.secret);
      expect(prop["x-setting"], s.name).toEqual({ area: s.area, env_type: s.type, secret: s.secret, overlay: s.overlay });
    }
  });

  it("validates a settings document: the defaults pass, wrong types, bounds and unknown names fail", () => {
    const v = new Validator(settingsSchema() as never, "2020-12");
    const defaults = Object.fromEntries(SETTINGS.filter((s) => !s.family && s.default !== null).map((s) => [s.name, s.default]));
    expect(v.validate(defaults).valid).toBe(true);
    expect(v.validate({ NOTIFICATIONS_FROM_TWILIO: "+15550001111", CONVERSATIONS_STORE_URL: "d1://DB", OUTBOUND_ALLOW_PRIVATE_HOSTS: true }).valid).toBe(true);
    for (const bad of [
      { CONVERSATIONS_PER_ADDRESS_TURNS_PER_HOUR: "20" },
      { CONVERSATIONS_PER_ADDRESS_TURNS_PER_HOUR: 0 },
      { CONVERSATIONS_INDEX_FLUSH_BATCH: 9 },
      { LLM_PROVIDER_CHECKPOINT: "postgres" },
      { CONVERSATIONS_STORE_URL: "postgres://x" },
      { CONVERSATIONS_MAX_MESSAGE_CHARS: { twilio: -1 } },
      { JQ_BUDGET_MEMORY_MB: 1000 },
      { NOT_A_SETTING: "x" },
    ]) {
      expect(v.validate(bad).valid, JSON.stringify(bad)).toBe(false);
    }
  });

  it("is readable with config:read and refused without it", async () => {
    expect((await call("GET", "/api/config/settings-schema", { key: (await mintKey({ scopes: ["config:read"] })).key })).status).toBe(200);
    expect((await call("GET", "/api/config/settings-schema", { key: (await mintKey({ scopes: ["system"] })).key })).status).toBe(403);
  });
});
