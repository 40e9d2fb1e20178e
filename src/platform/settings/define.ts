/**
 * How a setting is defined: once, in one object that reads and checks its value from the env and
 * also says everything the service tells operators about it (type, bounds, default, secret,
 * overlayable, meaning). The registry (registry.ts) lists these definitions; the settings JSON
 * Schema, the overlay's name check, secret masking, the not-configured gates of the doors and the
 * settings table of docs/operations.md are all derived from them, so none can drift from what the
 * service reads.
 *
 * A `read` pushes each problem onto `errors` naming the variable and the rule, never the value (a
 * secret pasted into the wrong variable must not be echoed), and falls back to the default. Rules
 * that tie several settings together live in the area's parser, next to the reads they compare.
 */

/** The env the settings are read from (wrangler vars, secrets, .dev.vars, the runtime overlay). */
export type EnvVars = Record<string, unknown>;

/** How a value is written in the env (always as text) and what it must parse to. */
export type SettingType =
  | "string"
  /** A whole number. */
  | "integer"
  /** A number (durations may be fractional). */
  | "number"
  /** `true` or `false`. */
  | "boolean"
  /** One of `enum`. */
  | "enum"
  /** `d1://BINDING`: a store switch. */
  | "store-url"
  /** An absolute URL. */
  | "url"
  /** A comma-separated list. */
  | "list"
  /** A JSON object (its text). */
  | "json-object"
  /** A JSON array (its text). */
  | "json-array";

export type SettingDefault = string | number | boolean | null | Readonly<Record<string, number>> | readonly unknown[];

/** The areas settings are grouped by (in the schema and the docs). */
export type SettingArea =
  | "conversations"
  | "states"
  | "notifications"
  | "connectors"
  | "marketplace"
  | "tool-runs"
  | "schedules"
  | "hooks"
  | "interactions"
  | "storage"
  | "tool-meta"
  | "runs"
  | "mcp"
  | "checkpoints"
  | "outbound"
  | "jq"
  | "access-control"
  | "channels"
  | "config";

/** The 501 a door answers while the store this setting switches on is unset. */
export interface StoreGate {
  /** `<code>-not-configured`. */
  code: string;
  /** The 501's message; it names the variable to set. */
  message: string;
}

/** What the service says about a setting: everything but how it is read. */
export interface SettingDefinition {
  /** The env var name; for a family, its template with a `<PLACEHOLDER>` (see `family`). */
  name: string;
  /** A family of names (`NOTIFICATIONS_FROM_<CHANNEL>`): matches each concrete name. */
  family?: RegExp;
  area: SettingArea;
  type: SettingType;
  enum?: readonly string[];
  minimum?: number;
  maximum?: number;
  exclusiveMinimum?: number;
  /** The value in force when unset (null: unset means "off" or "none"). */
  default: SettingDefault;
  /** Never shown by any door, sealed at rest in the overlay and in profiles. */
  secret: boolean;
  /** May the runtime overlay set it? False: env only (docs/runtime-settings.md, "What may be overlaid"). */
  overlay: boolean;
  description: string;
  /** For a store switch: the doors' answer while it is unset. */
  gate?: StoreGate;
}

/** A definition with its reader. */
export interface Setting<T> extends SettingDefinition {
  /** The value from `env`; a problem is pushed onto `errors` (naming the variable, never its value) and the default is used. */
  read(env: EnvVars, errors: string[]): T;
}

/** A numeric setting, whose default is a number. */
export type NumberSetting = Setting<number> & { readonly default: number };

/** What every builder below takes besides the name. */
interface Meta {
  area: SettingArea;
  description: string;
  /** Default true: the overlay may set it. */
  overlay?: boolean;
  /** Default false. */
  secret?: boolean;
}

function base(name: string, meta: Meta): Pick<SettingDefinition, "name" | "area" | "description" | "overlay" | "secret"> {
  return { name, area: meta.area, description: meta.description, overlay: meta.overlay ?? true, secret: meta.secret ?? false };
}

/** The variable as text: a non-string (a test's or the overlay's typed value) as its JSON. */
export function envString(env: EnvVars, name: string): string | undefined {
  const v = env[name];
  if (v === undefined || v === null) return undefined;
  return typeof v === "string" ? v : JSON.stringify(v);
}

/** A definition whose reader is written out (a shape no builder covers); its own type is kept (a `gate`, a literal default). */
export function defineSetting<S extends Setting<unknown>>(setting: S): S {
  return setting;
}

/** A store switch: a setting with the doors' answer while it is unset. */
export type GatedSetting<T> = Setting<T> & { readonly gate: StoreGate };

/** A whole number within [min, max]; the default when unset or blank. */
export function wholeNumber(name: string, meta: Meta & { default: number; min: number; max: number }): NumberSetting {
  return {
    ...base(name, meta),
    type: "integer",
    default: meta.default,
    minimum: meta.min,
    maximum: meta.max,
    read(env, errors) {
      const raw = envString(env, name)?.trim();
      if (!raw) return meta.default;
      const n = Number(raw);
      if (!Number.isInteger(n) || n < meta.min || n > meta.max) {
        errors.push(`${name} must be a whole number from ${meta.min} to ${meta.max}`);
        return meta.default;
      }
      return n;
    },
  };
}

/**
 * A number greater than 0 (a whole one when `whole`), optionally within `min`/`max`; the default
 * when unset or blank. Durations may be fractional, which is handy for fast local runs.
 */
export function positiveNumber(name: string, meta: Meta & { default: number; whole: boolean; min?: number; max?: number }): NumberSetting {
  return {
    ...base(name, meta),
    type: meta.whole ? "integer" : "number",
    default: meta.default,
    exclusiveMinimum: 0,
    ...(meta.min !== undefined ? { minimum: meta.min } : {}),
    ...(meta.max !== undefined ? { maximum: meta.max } : {}),
    read(env, errors) {
      const raw = envString(env, name);
      if (raw === undefined || raw.trim() === "") return meta.default;
      const n = Number(raw.trim());
      if (!Number.isFinite(n) || n <= 0) errors.push(`${name} must be a number greater than 0`);
      else if (meta.whole && !Number.isInteger(n)) errors.push(`${name} must be a whole number`);
      else if (meta.min !== undefined && n < meta.min) errors.push(`${name} must be at least ${meta.min}`);
      else if (meta.max !== undefined && n > meta.max) errors.push(`${name} must be at most ${meta.max}`);
      else return n;
      return meta.default;
    },
  };
}

/**
 * A store switch, `d1://BINDING`: null when unset; an error when malformed or naming a binding that
 * is not bound. `gate` is what the area's doors answer while it is unset.
 */
export function storeUrl(
  name: string,
  meta: { area: SettingArea; what: string; unset: string; gate: { code: string; what: string } },
): GatedSetting<string | null> {
  const gate = { code: meta.gate.code, message: `${meta.gate.what} not configured (set ${name})` };
  return {
    ...base(name, { area: meta.area, description: `${meta.what} as d1://BINDING; unset → ${meta.unset}.` }),
    type: "store-url",
    default: null,
    gate,
    read(env, errors) {
      const url = envString(env, name)?.trim();
      if (!url) return null;
      if (!/^d1:\/\/[A-Za-z_][A-Za-z0-9_]*$/.test(url)) errors.push(`${name} must name a D1 binding as d1://BINDING`);
      else if (!(url.slice(5) in env)) errors.push(`${name} names a D1 binding that is not bound`);
      return url;
    },
  };
}

/** Free text (a URL, a list, an identifier) trimmed, or undefined when unset or blank; its area's parser checks its form. */
export function text(name: string, meta: Meta & { type?: "string" | "url" | "list"; default?: string | null }): Setting<string | undefined> {
  return {
    ...base(name, meta),
    type: meta.type ?? "string",
    default: meta.default ?? null,
    read(env) {
      return envString(env, name)?.trim() || undefined;
    },
  };
}
