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

/**
 * Is `name` one of the service's own settings, a binding or a channel secret? Compared
 * case-insensitively: refusing a look-alike costs nothing. `env`, when given, also marks any
 * name bound to a non-string (a binding under another name).
 */
export function isForbiddenReference(name: string, env?: EnvVars): boolean {
  const upper = name.toUpperCase();
  if (FORBIDDEN_NAMES.has(upper)) return true;
  if (FORBIDDEN_PREFIXES.some((p) => upper.startsWith(p))) return true;
  if (env && name in env) {
    const v = envVar(env, name);
    if (v !== undefined && v !== null && typeof v !== "string") return true;
  }
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
  "the service's own settings, its bindings and channel secrets never";
