/**
 * Which env vars a `{"env": "VAR"}` secret reference may name (decisions §14). Pure: shared by
 * the settings validator (an allowlist entry naming a forbidden variable makes the settings
 * invalid), the declaration doors (400) and resolution at call time (defence in depth).
 *
 * A declared tool or agent sends a referenced value to a URL its declarer chose, so a reference
 * to the service's own settings or a channel secret would hand that secret to whoever may
 * declare. Only names meant to be referenced resolve: `SECRET_*`, or those the operator lists in
 * `SECRET_REFERENCE_ALLOWLIST`.
 */
import { type EnvVars, envVar } from "../env";
import { ORIGIN_PATTERN_RULE, type OriginPattern, originAllowed, parseOriginPattern } from "./origin-patterns";

/** The setting listing extra referenceable names (comma-separated). */
export const SECRET_REFERENCE_ALLOWLIST_SETTING = "SECRET_REFERENCE_ALLOWLIST";

/** The setting binding each referenceable name to the origins its value may be sent to (a JSON object). */
export const SECRET_REFERENCE_ORIGINS_SETTING = "SECRET_REFERENCE_ORIGINS";

/** Names starting with this are referenceable without being listed. */
export const SECRET_PREFIX = "SECRET_";

/**
 * Prefixes of the service's own settings and of channel secrets: never referenceable. `SETTINGS_`
 * and `CONNECTORS_` hold the keys sealing the settings overlay and connector tokens at rest.
 */
const FORBIDDEN_PREFIXES = ["CONVERSATIONS_", "ACCESS_CONTROL_", "LLM_PROVIDER_", "OUTBOUND_", "JQ_", "CHANNEL_", "SETTINGS_", "CONNECTORS_"];

/** Exact names never referenceable: the allowlist itself and the Worker's bindings. */
const FORBIDDEN_NAMES: ReadonlySet<string> = new Set([
  SECRET_REFERENCE_ALLOWLIST_SETTING,
  SECRET_REFERENCE_ORIGINS_SETTING,
  "DB",
  "THREADS",
  "ADDRESS_BUCKETS",
  "BUCKET_DIRECTORY",
]);

/** The shape of an env var name a reference may carry (also what an allowlist entry must be). */
export const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;

/** The providers document's own setting (src/platform/settings/connector-settings.ts); read here for its credential names only. */
const PROVIDERS_SETTING = "CONNECTORS_PROVIDERS";

let credentialNamesOf: { doc: string; names: ReadonlySet<string> } | null = null;

/**
 * The env vars the connector providers document names as OAuth client credentials
 * (`oauth.client_id_env`, `oauth.client_secret_env`), upper-cased; read leniently (a broken
 * document is the connector settings' error to report) and remembered for the last document seen.
 */
function connectorCredentialNames(env: EnvVars): ReadonlySet<string> {
  const doc = envVar(env, PROVIDERS_SETTING);
  if (typeof doc !== "string" || doc.trim() === "") return new Set();
  if (credentialNamesOf?.doc === doc) return credentialNamesOf.names;
  const names = new Set<string>();
  try {
    const parsed: unknown = JSON.parse(doc);
    for (const p of Array.isArray(parsed) ? parsed : []) {
      const oauth = p && typeof p === "object" ? (p as Record<string, unknown>).oauth : undefined;
      if (!oauth || typeof oauth !== "object") continue;
      for (const key of ["client_id_env", "client_secret_env"]) {
        const v = (oauth as Record<string, unknown>)[key];
        if (typeof v === "string") names.add(v.toUpperCase());
      }
    }
  } catch {
    // Not JSON: the connector settings report it; it names nothing here.
  }
  credentialNamesOf = { doc, names };
  return names;
}

/**
 * Is `name` one of the service's own settings, a binding, a channel secret or a connector's client
 * credential? Compared case-insensitively: refusing a look-alike costs nothing. `env`, when given,
 * also marks any name bound to a non-string (a binding under another name) and the env vars its
 * connector providers document names as client credentials: a reference would send the client
 * secret to a URL of the declarer's choosing instead of the provider's token endpoint.
 */
export function isForbiddenReference(name: string, env?: EnvVars): boolean {
  const upper = name.toUpperCase();
  if (FORBIDDEN_NAMES.has(upper)) return true;
  if (FORBIDDEN_PREFIXES.some((p) => upper.startsWith(p))) return true;
  if (env && name in env) {
    const v = envVar(env, name);
    if (v !== undefined && v !== null && typeof v !== "string") return true;
  }
  if (env && connectorCredentialNames(env).has(upper)) return true;
  return false;
}

/** Splits the allowlist setting: comma-separated, blanks around entries and empty entries ignored. */
export function splitAllowlist(raw: unknown): string[] {
  if (typeof raw !== "string") return [];
  return raw
    .split(",")
    .map((s) => s.trim())
    .filter((s) => s !== "");
}

/**
 * May a reference name `name`, given the allowlist? Forbidden names never may, even when
 * listed or prefixed `SECRET_` (the allowlist setting itself starts with `SECRET_`).
 */
export function isReferenceable(name: string, allowlist: readonly string[], env?: EnvVars): boolean {
  if (!ENV_NAME.test(name) || isForbiddenReference(name, env)) return false;
  return name.startsWith(SECRET_PREFIX) || allowlist.includes(name);
}

/** Why a reference was refused, for a 400 or a failed call: names the rule, never the variable's value. */
export const REFERENCE_RULE =
  `only env vars named ${SECRET_PREFIX}* or listed in ${SECRET_REFERENCE_ALLOWLIST_SETTING} may be referenced; ` +
  "the service's own settings, its bindings, channel secrets and connector client credentials never";

/**
 * Where each referenceable name's value may be sent: name → origin patterns
 * (src/platform/settings/origin-patterns.ts). A name without an entry goes nowhere. Read with
 * `Object.hasOwn` only (a key may be any env var name).
 */
export type ReferenceOrigins = Readonly<Record<string, readonly OriginPattern[]>>;

const MAX_ORIGINS_DOCUMENT_CHARS = 64 * 1024;
const MAX_BOUND_NAMES = 256;
export const MAX_ORIGINS_PER_NAME = 32;

const ORIGINS_SHAPE = `${SECRET_REFERENCE_ORIGINS_SETTING} must be a JSON object of env var name to an array of origins, e.g. {"SECRET_WEATHER_TOKEN": ["https://api.weather.example"]}`;

/**
 * Parses `SECRET_REFERENCE_ORIGINS` (unset or blank: no bindings). Each problem is pushed naming the
 * setting and, for a bound name that may be referenced at all, the name and the entry's index; never
 * an origin, and never a key that names one of the service's own settings (as the allowlist's errors).
 * A binding does not widen the scope: a name outside it stays unreferenceable, bound or not.
 */
export function parseReferenceOrigins(raw: unknown, env: EnvVars | undefined, errors: string[]): ReferenceOrigins {
  if (raw === undefined || raw === null || (typeof raw === "string" && raw.trim() === "")) return {};
  if (typeof raw !== "string") {
    errors.push(ORIGINS_SHAPE);
    return {};
  }
  if (raw.length > MAX_ORIGINS_DOCUMENT_CHARS) {
    errors.push(`${SECRET_REFERENCE_ORIGINS_SETTING} must be at most ${MAX_ORIGINS_DOCUMENT_CHARS} characters`);
    return {};
  }
  let doc: unknown;
  try {
    doc = JSON.parse(raw);
  } catch {
    errors.push(ORIGINS_SHAPE);
    return {};
  }
  if (typeof doc !== "object" || doc === null || Array.isArray(doc)) {
    errors.push(ORIGINS_SHAPE);
    return {};
  }
  const entries = Object.entries(doc);
  if (entries.length > MAX_BOUND_NAMES) {
    errors.push(`${SECRET_REFERENCE_ORIGINS_SETTING} may bind at most ${MAX_BOUND_NAMES} names`);
    return {};
  }
  const out: Array<[string, OriginPattern[]]> = [];
  const before = errors.length;
  for (const [name, list] of entries) {
    if (!ENV_NAME.test(name)) {
      errors.push(`${SECRET_REFERENCE_ORIGINS_SETTING} has a key that is not an env var name (letters, digits, _)`);
      continue;
    }
    if (isForbiddenReference(name, env)) {
      errors.push(
        `${SECRET_REFERENCE_ORIGINS_SETTING} binds a variable that is never referenceable (the service's own settings, its bindings, CHANNEL_* secrets, connector client credentials)`,
      );
      continue;
    }
    if (!Array.isArray(list) || list.length === 0 || list.length > MAX_ORIGINS_PER_NAME) {
      errors.push(`${SECRET_REFERENCE_ORIGINS_SETTING}.${name} must be an array of 1 to ${MAX_ORIGINS_PER_NAME} origins`);
      continue;
    }
    const patterns: OriginPattern[] = [];
    list.forEach((text, i) => {
      const p = parseOriginPattern(text);
      if (p) patterns.push(p);
      else errors.push(`${SECRET_REFERENCE_ORIGINS_SETTING}.${name}[${i}] ${ORIGIN_PATTERN_RULE}`);
    });
    out.push([name, patterns]);
  }
  return errors.length > before ? {} : Object.fromEntries(out);
}

let originsOf: { doc: unknown; origins: ReferenceOrigins } | null = null;

/**
 * The bindings as `env` holds them, for resolution at call time (the settings, parsed from the same
 * env, are not always at hand there). A document with any problem binds nothing: the settings
 * refuse it anyway, and a call must never send more than the settings would allow. Remembered for
 * the last document seen.
 */
export function referenceOriginsOf(env: EnvVars): ReferenceOrigins {
  const doc = envVar(env, SECRET_REFERENCE_ORIGINS_SETTING);
  if (originsOf && originsOf.doc === doc) return originsOf.origins;
  const origins = parseReferenceOrigins(doc, env, []);
  originsOf = { doc, origins };
  return origins;
}

/** Whether `url`'s origin is among those `origins` binds `name` to (false for an unbound name). */
export function referenceMayGoTo(name: string, url: string, origins: ReferenceOrigins): boolean {
  return Object.hasOwn(origins, name) && originAllowed(origins[name], url);
}

/** Why a reference may not go to a URL, for a 400 or a failed call; names the rule, never an origin. */
export const ORIGINS_RULE = `${SECRET_REFERENCE_ORIGINS_SETTING} binds each referenceable name to the origins its value may be sent to; a name it does not bind goes nowhere`;
