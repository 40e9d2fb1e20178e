/**
 * The checks every overlay or profile write runs on its entries, before anything is written:
 * each name must be a setting the overlay may set, each value must be text the env could carry,
 * and the Worker's env with the candidate on top must pass `parseSettings`, the one validator.
 * Messages name settings (registry names) or positions, never a value, nor a name the caller
 * made up (it is input, and could be anything).
 */
import { badRequest } from "../platform/http/errors";
import { isOverlayable, isSecretSetting } from "../platform/settings/registry";
import { parseSettings } from "../platform/settings/settings";
import { mergeEnv } from "./isolate-settings";

/** Longest value text accepted (the largest documented setting, the connector providers document, is capped at 256 KiB). */
export const MAX_VALUE_CHARS = 256 * 1024;
/** Most entries one write or profile carries. */
export const MAX_ENTRIES = 200;

/** An entry as a write means it: the plain text and whether it is secret. */
export interface Entry {
  value: string;
  secret: boolean;
}

function ordinal(i: number): string {
  return `#${i + 1}`;
}

/**
 * Checks the names of `names` (from field `field`): each must be a setting the overlay may set.
 * An unknown name is reported by position, never echoed.
 */
export function checkNames(field: string, names: readonly string[]): void {
  if (names.length > MAX_ENTRIES) throw badRequest(`invalid body: ${field}: at most ${MAX_ENTRIES} settings`);
  names.forEach((name, i) => {
    if (!isOverlayable(name)) {
      throw badRequest(
        `invalid body: ${field}: name ${ordinal(i)} is not a setting the overlay may set (GET /api/config/settings-schema lists them; bindings, ACCESS_CONTROL_BOOTSTRAP_TOKEN, SETTINGS_*, CHANNEL_*_API_BASE and CONNECTORS_PROVIDERS stay env-only)`,
      );
    }
  });
}

/**
 * A value as the env carries it: text as is, numbers and booleans as their text, objects and arrays
 * as their JSON text (what parseSettings itself does with a non-text env value). Null is refused
 * (use `unset`); the message names the setting, which is a registry name by now.
 */
export function valueText(field: string, name: string, v: unknown): string {
  let text: string | undefined;
  if (typeof v === "string") text = v;
  else if (typeof v === "number" && Number.isFinite(v)) text = String(v);
  else if (typeof v === "boolean") text = String(v);
  else if (typeof v === "object" && v !== null) text = JSON.stringify(v);
  if (text === undefined) throw badRequest(`invalid body: ${field}.${name}: must be a string, a finite number, a boolean or a JSON object or array`);
  if (text.length > MAX_VALUE_CHARS) throw badRequest(`invalid body: ${field}.${name}: must be at most ${MAX_VALUE_CHARS} characters`);
  return text;
}

/** `secret_keys` must name entries of `env`; reported by position. */
export function checkSecretKeys(field: string, secretKeys: readonly string[], names: ReadonlySet<string>): void {
  secretKeys.forEach((k, i) => {
    if (!names.has(k)) throw badRequest(`invalid body: ${field}: entry ${ordinal(i)} does not name a setting of env`);
  });
}

/** Is the entry secret: by the registry, or because the caller marked it. */
export function secretFlag(name: string, marked: boolean): boolean {
  return isSecretSetting(name) || marked;
}

/**
 * The Worker's env with `entries` as the whole overlay must pass parseSettings; else 400 listing
 * the broken rules (they name env vars, never values).
 */
export function validateAgainst(base: object, entries: ReadonlyMap<string, Entry>): void {
  const values: Record<string, string> = {};
  for (const [name, e] of entries) values[name] = e.value;
  const result = parseSettings(mergeEnv(base, values));
  if (!result.ok) throw badRequest(`invalid settings: ${result.errors.join("; ")}`);
}
