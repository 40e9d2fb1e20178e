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

/** The setting listing extra referenceable names (comma-separated). */
export const SECRET_REFERENCE_ALLOWLIST_SETTING = "SECRET_REFERENCE_ALLOWLIST";

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
  "DB",
  "THREADS",
  "ADDRESS_BUCKETS",
  "BUCKET_DIRECTORY",
]);

/** The shape of an env var name a reference may carry (also what an allowlist entry must be). */
export const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]{0,127}$/;

/** The providers document's own setting (src/settings/connector-settings.ts); read here for its credential names only. */
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
    const parsed = JSON.parse(doc) as unknown;
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
