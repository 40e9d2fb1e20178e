/**
 * The runtime settings' own settings (docs/runtime-settings.md), and the bootstrap token. All are
 * read from the Worker's env only: they govern how the overlay is read and opened, or mint the
 * first admin key, and the overlay is written with an admin key.
 */
import { type EnvVars, defineSetting, envString, text } from "./define";
import { type KeyRing, parseKeyRing } from "./sealing-keys";

export const SETTINGS_ENCRYPTION_KEY = text("SETTINGS_ENCRYPTION_KEY", {
  area: "config",
  secret: true,
  overlay: false,
  description:
    "The AES-256-GCM key (32 random bytes, base64) sealing secret settings of the overlay and profiles at rest; unset, writing a secret answers 501 settings-encryption-not-configured. Env only.",
});

export const SETTINGS_ENCRYPTION_KEY_PREVIOUS = text("SETTINGS_ENCRYPTION_KEY_PREVIOUS", {
  area: "config",
  type: "list",
  secret: true,
  overlay: false,
  description:
    "Comma-separated older settings keys that still open values sealed before a rotation (at most 8); POST /api/config/reload re-seals them under the current key. Env only.",
});

const MIN_REFRESH_SECONDS = 0.05;
const MAX_REFRESH_SECONDS = 60;

export const SETTINGS_REFRESH_SECONDS = defineSetting({
  name: "SETTINGS_REFRESH_SECONDS",
  area: "config",
  type: "number",
  minimum: MIN_REFRESH_SECONDS,
  maximum: MAX_REFRESH_SECONDS,
  default: 2,
  secret: false,
  overlay: false,
  description: "Seconds between two overlay generation checks of one isolate: the bound on how long a change made elsewhere takes to apply. Env only.",
  read(env, errors): number {
    const r = envString(env, "SETTINGS_REFRESH_SECONDS")?.trim();
    if (!r) return 2;
    const n = Number(r);
    if (!Number.isFinite(n) || n < MIN_REFRESH_SECONDS || n > MAX_REFRESH_SECONDS) {
      errors.push(`SETTINGS_REFRESH_SECONDS must be a number of seconds from ${MIN_REFRESH_SECONDS} to ${MAX_REFRESH_SECONDS}`);
      return 2;
    }
    return n;
  },
});

/** Read where the bootstrap door checks it (src/access-control/bootstrap-token.ts); defined here with the other env-only machinery. */
export const ACCESS_CONTROL_BOOTSTRAP_TOKEN = text("ACCESS_CONTROL_BOOTSTRAP_TOKEN", {
  area: "access-control",
  secret: true,
  overlay: false,
  description:
    "Enables POST /api/keys/bootstrap (the first admin key) while no key exists: at least 32 characters and not a published value. Env only: the overlay is written with an admin key, so it cannot hold what mints the first one.",
});

export const CONFIG_SETTINGS = [SETTINGS_ENCRYPTION_KEY, SETTINGS_ENCRYPTION_KEY_PREVIOUS, SETTINGS_REFRESH_SECONDS] as const;

export interface ConfigSettings {
  /** The sealing keys as standard base64 of 32 bytes: `current` seals, every key opens. */
  keys: KeyRing;
  /** Seconds between two generation checks of one isolate. */
  refreshSeconds: number;
}

export function parseConfigSettings(env: EnvVars, errors: string[]): ConfigSettings {
  return {
    keys: parseKeyRing(env, SETTINGS_ENCRYPTION_KEY.name, SETTINGS_ENCRYPTION_KEY_PREVIOUS.name, errors),
    refreshSeconds: SETTINGS_REFRESH_SECONDS.read(env, errors),
  };
}
