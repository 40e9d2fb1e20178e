/**
 * The connectors area's settings (docs/connectors.md "Settings"):
 * - `CONNECTORS_STORE_URL` switches connections and categories on (501 `connectors-not-configured`
 *   without it);
 * - `CONNECTORS_PROVIDERS`: the providers document (a JSON array of provider descriptors), checked
 *   here against the descriptor invariants of platform-facts A2, so a broken document stops the
 *   service at start-up instead of failing one request later;
 * - `CONNECTORS_ENCRYPTION_KEY` (+ `CONNECTORS_ENCRYPTION_KEY_PREVIOUS`): the AES-256-GCM key that
 *   seals stored tokens, required while the store is configured;
 * - `CONNECTORS_OAUTH_REDIRECT_URI`, `CONNECTORS_OAUTH_START_TTL_SECONDS`,
 *   `CONNECTORS_TOKEN_REFRESH_SKEW_SECONDS`.
 *
 * Errors name the variable and the rule (and where in the document), never a value: the
 * document names env vars holding client secrets, and a key pasted into the wrong variable must
 * not be echoed.
 */
import { z } from "zod";
import { ORIGIN_PATTERN_RULE, parseOriginPattern } from "./origin-patterns";
import { ENV_NAME, isForbiddenReference } from "./secret-references";
import { KEY_RULE, type KeyRing, parseKeyRing } from "./sealing-keys";
import { type EnvVars, defineSetting, envString, storeUrl as storeUrlSetting, text, wholeNumber } from "./define";

/** The pattern of provider ids, sub-service ids and config keys (platform-facts A2). */
export const CONNECTOR_ID = /^[a-z][a-z0-9_]*$/;
const ID_RULE = "must match ^[a-z][a-z0-9_]*$ (at most 64 characters)";

export const PROVIDERS_SETTING = "CONNECTORS_PROVIDERS";
export const ENCRYPTION_KEY_SETTING = "CONNECTORS_ENCRYPTION_KEY";
export const PREVIOUS_KEYS_SETTING = "CONNECTORS_ENCRYPTION_KEY_PREVIOUS";
export const REDIRECT_URI_SETTING = "CONNECTORS_OAUTH_REDIRECT_URI";

/** Largest providers document accepted (compact or not, as given). */
const MAX_DOCUMENT_CHARS = 256 * 1024;

const idSchema = z.string().max(64, { message: ID_RULE }).regex(CONNECTOR_ID, { message: ID_RULE });

function isHttpsUrl(s: string): boolean {
  let u: URL;
  try {
    u = new URL(s);
  } catch {
    return false;
  }
  return u.protocol === "https:" && u.hostname !== "" && !u.username && !u.password && !u.hash;
}

const HTTPS_RULE = "must be an absolute https URL with a host, no user:password and no fragment";
const httpsUrl = z.string().max(2048, { message: HTTPS_RULE }).refine(isHttpsUrl, { message: HTTPS_RULE });

/** RFC 6749 §3.3 scope-token: printable ASCII without space, `"` or `\`. */
const scopeSchema = z
  .string()
  .min(1, { message: "must not be empty" })
  .max(256)
  .regex(/^[\x21\x23-\x5B\x5D-\x7E]+$/, { message: "must be an OAuth scope token (printable ASCII, no space, quote or backslash)" });

/**
 * An env var holding a client id or secret. Never one of the service's own settings, a binding
 * or a channel secret (the rule `{"env"}` references follow), nor a `CONNECTORS_*` setting:
 * naming the encryption key here would send it to a token endpoint.
 */
const clientEnvSchema = z
  .string()
  .regex(ENV_NAME, { message: "must name an env var (letters, digits, _)" })
  .refine((n) => !isForbiddenReference(n) && !n.toUpperCase().startsWith("CONNECTORS_"), {
    message: "must not name one of the service's own settings (CONNECTORS_* included), a binding or a channel secret",
  });

/** Query parameters the service sets itself on an authorization URL; `authorize_params` may not. */
export const RESERVED_AUTHORIZE_PARAMS: ReadonlySet<string> = new Set([
  "response_type",
  "client_id",
  "redirect_uri",
  "scope",
  "state",
  "code_challenge",
  "code_challenge_method",
]);

const oauthSchema = z
  .object({
    authorization_endpoint: httpsUrl,
    token_endpoint: httpsUrl,
    client_id_env: clientEnvSchema,
    client_secret_env: clientEnvSchema,
    /** How the client authenticates at the token endpoint (RFC 6749 §2.3.1); basic is the one every server must support. */
    client_auth: z.enum(["client_secret_basic", "client_secret_post"]).default("client_secret_basic"),
    /** Extra query parameters of the authorization URL (e.g. Google's `access_type=offline`). */
    authorize_params: z
      .record(z.string().regex(/^[A-Za-z0-9_.-]{1,64}$/, { message: "must be a query parameter name (letters, digits, _ . -)" }), z.string().max(512))
      .default({})
      .refine((p) => Object.keys(p).length <= 16 && !Object.keys(p).some((k) => RESERVED_AUTHORIZE_PARAMS.has(k)), {
        message:
          "at most 16 parameters, none of those the service sets (response_type, client_id, redirect_uri, scope, state, code_challenge, code_challenge_method)",
      }),
  })
  .strict();

/**
 * An origin a provider's API answers at: where its connections' access tokens may be sent
 * (src/platform/settings/origin-patterns.ts). Parsed here, so a call only compares.
 */
const apiOriginSchema = z.string().transform((text, ctx) => {
  const p = parseOriginPattern(text);
  if (!p) {
    ctx.addIssue({ code: "custom", message: ORIGIN_PATTERN_RULE });
    return z.NEVER;
  }
  return p;
});

const subServiceSchema = z
  .object({
    id: idSchema,
    display_name: z.string().min(1).max(200),
    description: z.string().max(2000).default(""),
    scopes: z.array(scopeSchema).max(64).default([]),
  })
  .strict();

const configFieldSchema = z
  .object({
    key: idSchema,
    label: z.string().min(1).max(200),
    target: z.enum(["env", "header"]),
    required: z.boolean().default(true),
    secret: z.boolean().default(false),
  })
  .strict();

/** One provider descriptor as the operator writes it in `CONNECTORS_PROVIDERS`. */
export const ProviderDescriptor = z
  .object({
    id: idSchema,
    display_name: z.string().min(1).max(200),
    description: z.string().max(2000).default(""),
    icon_url: httpsUrl,
    kind: z.enum(["oauth", "none"]),
    origin: z.enum(["system", "community"]).default("system"),
    category: idSchema.default("other"),
    sub_services: z.array(subServiceSchema).min(1, { message: "must have at least one sub-service" }).max(64),
    config_fields: z.array(configFieldSchema).max(64).default([]),
    oauth: oauthSchema.optional(),
    /**
     * The origins of the provider's API: a tool, agent or MCP server header naming one of its
     * connections may be declared only at a URL of one of them, and the token is sent nowhere else.
     * Without it, its connections cannot be lent to declarations at all.
     */
    api_origins: z
      .array(apiOriginSchema)
      .min(1, { message: "must list at least one origin (leave the field out to lend connections to no declaration)" })
      .max(16)
      .optional(),
  })
  .strict()
  .superRefine((p, ctx) => {
    const dup = (ids: string[]) => ids.findIndex((id, i) => ids.indexOf(id) !== i);
    const s = dup(p.sub_services.map((x) => x.id));
    if (s >= 0) ctx.addIssue({ code: "custom", path: ["sub_services", s, "id"], message: "repeats another sub-service's id" });
    const k = dup(p.config_fields.map((x) => x.key));
    if (k >= 0) ctx.addIssue({ code: "custom", path: ["config_fields", k, "key"], message: "repeats another config field's key" });
    if (p.kind === "oauth") {
      if (!p.oauth)
        ctx.addIssue({
          code: "custom",
          path: ["oauth"],
          message: "an oauth provider needs oauth {authorization_endpoint, token_endpoint, client_id_env, client_secret_env}",
        });
      p.sub_services.forEach((sub, i) => {
        if (sub.scopes.length === 0)
          ctx.addIssue({ code: "custom", path: ["sub_services", i, "scopes"], message: "an oauth provider's sub-service needs at least one scope" });
      });
      if (p.config_fields.length) ctx.addIssue({ code: "custom", path: ["config_fields"], message: "an oauth provider carries no config fields" });
    } else {
      if (p.oauth) ctx.addIssue({ code: "custom", path: ["oauth"], message: "a none provider carries no oauth data" });
      p.sub_services.forEach((sub, i) => {
        if (sub.scopes.length)
          ctx.addIssue({ code: "custom", path: ["sub_services", i, "scopes"], message: "a none provider carries no oauth data (no scopes)" });
      });
    }
  });
export type ProviderDescriptor = z.infer<typeof ProviderDescriptor>;

export const ProvidersDocument = z
  .array(ProviderDescriptor)
  .max(100, { message: "at most 100 providers" })
  .superRefine((list, ctx) => {
    const ids = list.map((p) => p.id);
    const i = ids.findIndex((id, n) => ids.indexOf(id) !== n);
    if (i >= 0) ctx.addIssue({ code: "custom", path: [i, "id"], message: "repeats another provider's id" });
  });
export type ProvidersDocument = z.infer<typeof ProvidersDocument>;

export interface ConnectorSettings {
  /** `CONNECTORS_STORE_URL` (d1://BINDING). */
  storeUrl: string | null;
  /** `CONNECTORS_PROVIDERS`: the validated providers document (empty when unset). */
  providers: ProviderDescriptor[];
  /**
   * `CONNECTORS_ENCRYPTION_KEY` and `CONNECTORS_ENCRYPTION_KEY_PREVIOUS` as standard base64 of
   * 32 bytes each: `current` seals, every key opens (docs/connectors.md "Tokens at rest").
   */
  keys: KeyRing;
  /** `CONNECTORS_OAUTH_REDIRECT_URI`: where the provider sends the browser back with `code` and `state`. */
  redirectUri: string | null;
  /** `CONNECTORS_OAUTH_START_TTL_SECONDS`: how long a started authorization may be completed (default 600). */
  startTtlSeconds: number;
  /** `CONNECTORS_TOKEN_REFRESH_SKEW_SECONDS`: an access token this close to expiry is refreshed before use (default 60). */
  refreshSkewSeconds: number;
}

/** Where a zod issue sits in the document, as `[2].sub_services[0].id`. */
function issuePath(path: PropertyKey[]): string {
  return path
    .map((p) => (typeof p === "number" ? `[${p}]` : `.${String(p)}`))
    .join("")
    .replace(/^\./, "");
}

/** Parses the providers document; each problem is pushed naming the setting, where and the rule. */
export function parseProvidersDocument(raw: unknown, errors: string[]): ProviderDescriptor[] {
  if (raw === undefined || raw === null || (typeof raw === "string" && raw.trim() === "")) return [];
  let value: unknown = raw;
  if (typeof raw === "string") {
    if (raw.length > MAX_DOCUMENT_CHARS) {
      errors.push(`${PROVIDERS_SETTING} must be at most ${MAX_DOCUMENT_CHARS} characters`);
      return [];
    }
    try {
      value = JSON.parse(raw);
    } catch {
      errors.push(`${PROVIDERS_SETTING} must be a JSON array of provider descriptors`);
      return [];
    }
  }
  if (!Array.isArray(value)) {
    errors.push(`${PROVIDERS_SETTING} must be a JSON array of provider descriptors`);
    return [];
  }
  const parsed = ProvidersDocument.safeParse(value);
  if (parsed.success) return parsed.data;
  for (const issue of parsed.error.issues.slice(0, 10)) {
    const where = issuePath(issue.path);
    errors.push(`${PROVIDERS_SETTING}${where ? ` ${where.startsWith("[") ? where : `.${where}`}` : ""}: ${issue.message}`);
  }
  return [];
}

const LOOPBACK_HOSTS: ReadonlySet<string> = new Set(["127.0.0.1", "localhost", "[::1]"]);

/** https, or http on a loopback host (RFC 8252 §7.3: local development); no fragment, no userinfo. */
function isRedirectUri(s: string): boolean {
  let u: URL;
  try {
    u = new URL(s);
  } catch {
    return false;
  }
  if (u.username || u.password || u.hash || !u.hostname) return false;
  return u.protocol === "https:" || (u.protocol === "http:" && LOOPBACK_HOSTS.has(u.hostname));
}

export const CONNECTORS_STORE_URL = storeUrlSetting("CONNECTORS_STORE_URL", {
  area: "connectors",
  what: "The connectors area's store",
  unset: "every connection door answers 501 connectors-not-configured (providers still list)",
  gate: { code: "connectors", what: "connector store" },
});

// Env only: a descriptor names the token endpoint that receives the client secret (and every
// refresh token) together with the env vars holding them, so setting it at runtime would let an
// admin key send those secrets to a host of its choosing.
export const CONNECTORS_PROVIDERS = defineSetting({
  name: PROVIDERS_SETTING,
  area: "connectors",
  type: "json-array",
  default: [],
  secret: false,
  overlay: false,
  description:
    "The connector providers document: a JSON array of provider descriptors (docs/connectors.md). Env only: its token endpoints receive the client secrets and refresh tokens.",
  read: (env, errors): ProviderDescriptor[] => parseProvidersDocument(env[PROVIDERS_SETTING], errors),
});

export const CONNECTORS_ENCRYPTION_KEY = text(ENCRYPTION_KEY_SETTING, {
  area: "connectors",
  secret: true,
  description: "The AES-256-GCM key sealing stored connector tokens: 32 random bytes in base64; required while CONNECTORS_STORE_URL is set.",
});

export const CONNECTORS_ENCRYPTION_KEY_PREVIOUS = text(PREVIOUS_KEYS_SETTING, {
  area: "connectors",
  type: "list",
  secret: true,
  description: "Comma-separated older connector keys that still open tokens sealed before a rotation (at most 8).",
});

const REDIRECT_RULE = `${REDIRECT_URI_SETTING} must be an absolute https URL (or http on 127.0.0.1/localhost for local development) without user:password or fragment`;

export const CONNECTORS_OAUTH_REDIRECT_URI = defineSetting({
  name: REDIRECT_URI_SETTING,
  area: "connectors",
  type: "url",
  default: null,
  secret: false,
  overlay: true,
  description: "Where providers send the browser back with code and state: an https URL (or http on 127.0.0.1/localhost).",
  read(env, errors): string | null {
    const uri = envString(env, REDIRECT_URI_SETTING)?.trim() || null;
    if (uri && (uri.length > 2048 || !isRedirectUri(uri))) {
      errors.push(REDIRECT_RULE);
      return null;
    }
    return uri;
  },
});

export const CONNECTORS_OAUTH_START_TTL_SECONDS = wholeNumber("CONNECTORS_OAUTH_START_TTL_SECONDS", {
  area: "connectors",
  default: 600,
  min: 60,
  max: 3600,
  description: "How long a started authorization may be completed.",
});

export const CONNECTORS_TOKEN_REFRESH_SKEW_SECONDS = wholeNumber("CONNECTORS_TOKEN_REFRESH_SKEW_SECONDS", {
  area: "connectors",
  default: 60,
  min: 0,
  max: 3600,
  description: "An access token this close to expiry is refreshed before use.",
});

export const CONNECTOR_SETTINGS = [
  CONNECTORS_STORE_URL,
  CONNECTORS_PROVIDERS,
  CONNECTORS_ENCRYPTION_KEY,
  CONNECTORS_ENCRYPTION_KEY_PREVIOUS,
  CONNECTORS_OAUTH_REDIRECT_URI,
  CONNECTORS_OAUTH_START_TTL_SECONDS,
  CONNECTORS_TOKEN_REFRESH_SKEW_SECONDS,
] as const;

export function parseConnectorSettings(env: EnvVars, errors: string[]): ConnectorSettings {
  const storeUrl = CONNECTORS_STORE_URL.read(env, errors);
  const providers = CONNECTORS_PROVIDERS.read(env, errors);
  const keys = parseKeyRing(env, CONNECTORS_ENCRYPTION_KEY.name, CONNECTORS_ENCRYPTION_KEY_PREVIOUS.name, errors);
  // Tokens are sealed at rest, so a store without a key would have nothing to seal them with.
  if (!CONNECTORS_ENCRYPTION_KEY.read(env, errors) && storeUrl) {
    errors.push(`${ENCRYPTION_KEY_SETTING} must be set while CONNECTORS_STORE_URL is set: it ${KEY_RULE.replace(/^must be/, "is")}`);
  }
  const redirectUri = CONNECTORS_OAUTH_REDIRECT_URI.read(env, errors);
  if (!redirectUri && !envString(env, REDIRECT_URI_SETTING)?.trim() && storeUrl && providers.some((p) => p.kind === "oauth")) {
    errors.push(`${REDIRECT_URI_SETTING} must be set while CONNECTORS_STORE_URL is set and ${PROVIDERS_SETTING} lists an oauth provider`);
  }
  return {
    storeUrl,
    providers,
    keys,
    redirectUri,
    startTtlSeconds: CONNECTORS_OAUTH_START_TTL_SECONDS.read(env, errors),
    refreshSkewSeconds: CONNECTORS_TOKEN_REFRESH_SKEW_SECONDS.read(env, errors),
  };
}
