/**
 * The providers document (platform-facts A2's descriptor invariants, checked at settings parse),
 * the connector settings (encryption keys, redirect URI) and the providers listing with and
 * without a connector store.
 */
import { env } from "cloudflare:workers";
import { describe, expect, it } from "vitest";
import { parseProvidersDocument } from "../../src/platform/settings/connector-settings";
import { parseSettings } from "../../src/platform/settings/settings";
import { BASE, admin, fetchWithEnv, mintKey } from "../helpers/http";
import { CLIENT_SECRET, PROVIDERS, VARS, call } from "./helpers";

const MARKER = "PLANTED_VALUE_9f3";

/** A valid oauth descriptor with `patch` applied (deep-cloned). */
function oauth(patch: (p: any) => void = () => {}): any {
  const p = structuredClone(PROVIDERS[0]) as any;
  patch(p);
  return p;
}

function errorsOf(doc: unknown): string[] {
  const errors: string[] = [];
  parseProvidersDocument(typeof doc === "string" ? doc : JSON.stringify(doc), errors);
  return errors;
}

describe("the providers document", () => {
  it("accepts the test document and fills the defaults", () => {
    const errors: string[] = [];
    const parsed = parseProvidersDocument(JSON.stringify(PROVIDERS), errors);
    expect(errors).toEqual([]);
    expect(parsed.map((p) => p.id)).toEqual(["acme", "plain"]);
    expect(parsed[0]).toMatchObject({ origin: "system", description: "Mail, calendar and files", category: "productivity" });
    expect(parsed[0].oauth).toMatchObject({ client_auth: "client_secret_basic" });
    expect(parsed[0].sub_services[0].description).toBe("");
    expect(parsed[1]).toMatchObject({ origin: "community", category: "other", config_fields: [{ key: "api_base", required: true, secret: false }] });
  });

  it("unset or blank means no providers", () => {
    expect(parseProvidersDocument(undefined, [])).toEqual([]);
    expect(parseProvidersDocument("  ", [])).toEqual([]);
  });

  it.each([
    ["a provider id off the pattern", oauth((p) => (p.id = `Acme-${MARKER}`)), "[0].id", "^[a-z][a-z0-9_]*$"],
    ["a provider id starting with a digit", oauth((p) => (p.id = "1acme")), "[0].id", "^[a-z][a-z0-9_]*$"],
    ["a sub-service id off the pattern", oauth((p) => (p.sub_services[1].id = `Cal ${MARKER}`)), "[0].sub_services[1].id", "^[a-z][a-z0-9_]*$"],
    [
      "a config key off the pattern",
      { ...PROVIDERS[1], config_fields: [{ key: `Key-${MARKER}`, label: "x", target: "env" }] },
      "[0].config_fields[0].key",
      "^[a-z][a-z0-9_]*$",
    ],
    ["an http icon_url", oauth((p) => (p.icon_url = `http://icons.fake/${MARKER}.png`)), "[0].icon_url", "https"],
    ["no sub-service", oauth((p) => (p.sub_services = [])), "[0].sub_services", "at least one sub-service"],
    ["an oauth provider without oauth data", oauth((p) => delete p.oauth), "[0].oauth", "an oauth provider needs"],
    ["an oauth provider without a token endpoint", oauth((p) => delete p.oauth.token_endpoint), "[0].oauth.token_endpoint", ""],
    ["an oauth provider without a client secret env name", oauth((p) => delete p.oauth.client_secret_env), "[0].oauth.client_secret_env", ""],
    ["an oauth sub-service without scopes", oauth((p) => (p.sub_services[0].scopes = [])), "[0].sub_services[0].scopes", "at least one scope"],
    [
      "an oauth provider with config fields",
      oauth((p) => (p.config_fields = [{ key: "k", label: "K", target: "env" }])),
      "[0].config_fields",
      "no config fields",
    ],
    ["a none provider with oauth data", { ...PROVIDERS[1], oauth: PROVIDERS[0].oauth }, "[0].oauth", "carries no oauth data"],
    [
      "a none provider with scopes",
      { ...PROVIDERS[1], sub_services: [{ id: "all", display_name: "All", scopes: ["x"] }] },
      "[0].sub_services[0].scopes",
      "no oauth data",
    ],
    ["an unknown kind", oauth((p) => (p.kind = MARKER)), "[0].kind", ""],
    ["an unknown origin", oauth((p) => (p.origin = MARKER)), "[0].origin", ""],
    [
      "a config field target outside env|header",
      { ...PROVIDERS[1], config_fields: [{ key: "k", label: "K", target: MARKER }] },
      "[0].config_fields[0].target",
      "",
    ],
    ["an http token endpoint", oauth((p) => (p.oauth.token_endpoint = `http://oauth.fake/${MARKER}`)), "[0].oauth.token_endpoint", "https"],
    [
      "an authorization endpoint with userinfo",
      oauth((p) => (p.oauth.authorization_endpoint = `https://u:${MARKER}@oauth.fake/a`)),
      "[0].oauth.authorization_endpoint",
      "user:password",
    ],
    [
      "a client secret env naming the encryption key",
      oauth((p) => (p.oauth.client_secret_env = "CONNECTORS_ENCRYPTION_KEY")),
      "[0].oauth.client_secret_env",
      "own settings",
    ],
    ["a client id env naming a channel secret", oauth((p) => (p.oauth.client_id_env = "CHANNEL_SLACK_BOT_TOKEN")), "[0].oauth.client_id_env", "channel secret"],
    ["a client env that is no env name", oauth((p) => (p.oauth.client_id_env = `${MARKER} x`)), "[0].oauth.client_id_env", "env var"],
    [
      "a reserved authorize param",
      oauth((p) => (p.oauth.authorize_params = { state: MARKER })),
      "[0].oauth.authorize_params",
      "none of those the service sets",
    ],
    ["a scope with a space", oauth((p) => (p.sub_services[0].scopes = [`a ${MARKER}`])), "[0].sub_services[0].scopes[0]", "scope token"],
    ["an unknown field", oauth((p) => (p.colour = MARKER)), "[0]", "colour"],
    ["a repeated sub-service id", oauth((p) => (p.sub_services[2].id = "mail")), "[0].sub_services[2].id", "repeats"],
    [
      "a repeated config key",
      {
        ...PROVIDERS[1],
        config_fields: [
          { key: "k", label: "a", target: "env" },
          { key: "k", label: "b", target: "env" },
        ],
      },
      "[0].config_fields[1].key",
      "repeats",
    ],
  ])("refuses %s, naming the variable, the place and the rule, never the value", (_what, descriptor, where, rule) => {
    const errors = errorsOf([descriptor]);
    expect(errors.length).toBeGreaterThan(0);
    const joined = errors.join("\n");
    expect(joined).toContain("CONNECTORS_PROVIDERS");
    expect(joined).toContain(where);
    expect(joined).toContain(rule);
    expect(joined).not.toContain(MARKER);
  });

  it("refuses repeated provider ids, text that is not JSON, and a non-array", () => {
    expect(errorsOf([PROVIDERS[0], PROVIDERS[0]]).join()).toContain("[1].id: repeats another provider's id");
    expect(errorsOf(`{"id": "${MARKER}"`)).toEqual(["CONNECTORS_PROVIDERS must be a JSON array of provider descriptors"]);
    expect(errorsOf({ providers: [] })).toEqual(["CONNECTORS_PROVIDERS must be a JSON array of provider descriptors"]);
  });

  it("an invalid document is a settings error (every request answers 500)", async () => {
    const r = parseSettings({ ...env, ...VARS, CONNECTORS_PROVIDERS: JSON.stringify([oauth((p) => (p.icon_url = "http://x.fake/i.png"))]) });
    expect(r.ok).toBe(false);
    const res = await fetchWithEnv(
      { ...env, ...VARS, CONNECTORS_PROVIDERS: "[1]" },
      new Request(`${BASE}/api/connectors/providers`, { headers: { "x-api-key": await admin() } }),
    );
    expect(res.status).toBe(500);
  });
});

describe("connector settings", () => {
  const base = { ...env, ...VARS } as Record<string, unknown>;
  const errorsFor = (vars: Record<string, unknown>) => {
    const r = parseSettings({ ...base, ...vars });
    return r.ok ? [] : r.errors;
  };

  it("the encryption key is required while the store is configured, and must be 32 bytes of base64", () => {
    expect(errorsFor({ CONNECTORS_ENCRYPTION_KEY: "" }).join()).toContain("CONNECTORS_ENCRYPTION_KEY must be set while CONNECTORS_STORE_URL is set");
    expect(errorsFor({ CONNECTORS_ENCRYPTION_KEY: "", CONNECTORS_STORE_URL: "" })).toEqual([]);
    const short = btoa("sixteen-byte-key");
    const bad = errorsFor({ CONNECTORS_ENCRYPTION_KEY: short }).join();
    expect(bad).toContain("CONNECTORS_ENCRYPTION_KEY must be 32 random bytes in base64");
    expect(bad).not.toContain(short);
    // url-safe and unpadded spellings of a 32-byte key are accepted
    const urlSafe = btoa(String.fromCharCode(...new Uint8Array(32).fill(251)))
      .replace(/\+/g, "-")
      .replace(/\//g, "_")
      .replace(/=+$/, "");
    expect(errorsFor({ CONNECTORS_ENCRYPTION_KEY: urlSafe })).toEqual([]);
  });

  it("previous keys must each be a key", () => {
    const good = btoa(String.fromCharCode(...new Uint8Array(32).fill(7)));
    expect(errorsFor({ CONNECTORS_ENCRYPTION_KEY_PREVIOUS: `${good}, ${good}` })).toEqual([]);
    const bad = errorsFor({ CONNECTORS_ENCRYPTION_KEY_PREVIOUS: `${good},${MARKER}` }).join();
    expect(bad).toContain("CONNECTORS_ENCRYPTION_KEY_PREVIOUS");
    expect(bad).not.toContain(MARKER);
  });

  it("an oauth provider needs a redirect URI, https or loopback http", () => {
    expect(errorsFor({ CONNECTORS_OAUTH_REDIRECT_URI: "" }).join()).toContain("CONNECTORS_OAUTH_REDIRECT_URI must be set");
    expect(errorsFor({ CONNECTORS_OAUTH_REDIRECT_URI: `http://app.fake/${MARKER}` }).join()).toContain(
      "CONNECTORS_OAUTH_REDIRECT_URI must be an absolute https URL",
    );
    expect(errorsFor({ CONNECTORS_OAUTH_REDIRECT_URI: "http://127.0.0.1:3000/cb" })).toEqual([]);
    expect(errorsFor({ CONNECTORS_OAUTH_REDIRECT_URI: "https://app.fake/cb#frag" }).join()).toContain("CONNECTORS_OAUTH_REDIRECT_URI");
    // No oauth provider, no redirect needed.
    expect(errorsFor({ CONNECTORS_OAUTH_REDIRECT_URI: "", CONNECTORS_PROVIDERS: JSON.stringify([PROVIDERS[1]]) })).toEqual([]);
  });

  it("the start TTL and refresh skew are bounded whole numbers", () => {
    expect(errorsFor({ CONNECTORS_OAUTH_START_TTL_SECONDS: "10" }).join()).toContain(
      "CONNECTORS_OAUTH_START_TTL_SECONDS must be a whole number from 60 to 3600",
    );
    expect(errorsFor({ CONNECTORS_TOKEN_REFRESH_SKEW_SECONDS: "-1" }).join()).toContain("CONNECTORS_TOKEN_REFRESH_SKEW_SECONDS");
  });

  it("npm start's defaults (wrangler.toml) are valid and list the GitHub example", () => {
    const r = parseSettings(env as unknown as Record<string, unknown>);
    expect(r.ok && r.settings.connectors.providers.map((p) => p.id)).toEqual(["github"]);
  });
});

describe("GET /api/connectors/providers", () => {
  it("lists the configured providers with §2.9's fields only, and the seeded categories", async () => {
    const r = await call("GET", "/api/connectors/providers", { key: await admin() });
    expect(r.status, r.text).toBe(200);
    expect(Object.keys(r.body.data).sort()).toEqual(["categories", "providers"]);
    expect(r.body.data.categories[0]).toEqual({ id: "communication", display_name: "Communication", sort_order: 10 });
    expect(r.body.data.categories.map((c: any) => c.id)).toEqual(["communication", "productivity", "developer_tools", "files", "crm", "other"]);
    const [acme, plain] = r.body.data.providers;
    expect(Object.keys(acme).sort()).toEqual(["category", "config_fields", "description", "display_name", "icon_url", "id", "kind", "origin", "sub_services"]);
    expect(acme).toEqual({
      id: "acme",
      display_name: "Acme Suite",
      description: "Mail, calendar and files",
      icon_url: "https://oauth.fake/icon.png",
      kind: "oauth",
      origin: "system",
      category: "productivity",
      sub_services: [
        { id: "mail", display_name: "Mail", description: "", scopes: ["mail.read"] },
        { id: "calendar", display_name: "Calendar", description: "Events", scopes: ["cal.read", "cal.write"] },
        { id: "files", display_name: "Files", description: "", scopes: ["files", "mail.read"] },
      ],
      config_fields: [],
    });
    expect(plain.config_fields).toEqual([{ key: "api_base", label: "API base", target: "header", required: true, secret: false }]);
    // Nothing about how the service talks to the provider.
    for (const hidden of [
      `"oauth":`,
      "authorization_endpoint",
      "token_endpoint",
      "client_auth",
      "prompt",
      "ACME_CLIENT_SECRET",
      "ACME_CLIENT_ID",
      CLIENT_SECRET,
      "oauth.fake/token",
    ])
      expect(r.text).not.toContain(hidden);
  });

  it("lists providers without a store, with no categories", async () => {
    const r = await call("GET", "/api/connectors/providers", { key: await admin() }, { ...VARS, CONNECTORS_STORE_URL: "" });
    expect(r.status).toBe(200);
    expect(r.body.data.categories).toEqual([]);
    expect(r.body.data.providers.map((p: any) => p.id)).toEqual(["acme", "plain"]);
  });

  it("needs a key with connectors:read", async () => {
    expect((await call("GET", "/api/connectors/providers")).status).toBe(401);
    const reader = await mintKey({ scopes: ["connectors:read"] });
    expect((await call("GET", "/api/connectors/providers", { key: reader.key })).status).toBe(200);
    const other = await mintKey({ scopes: ["states:read"] });
    expect((await call("GET", "/api/connectors/providers", { key: other.key })).status).toBe(403);
  });
});
