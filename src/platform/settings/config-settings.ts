/**
 * The runtime settings' own settings (docs/runtime-settings.md). All three are read from
 * the Worker's env only: they govern how the overlay is read and opened, so the overlay cannot
 * change them.
 * - `SETTINGS_ENCRYPTION_KEY`: the AES-256-GCM key (32 bytes, base64) sealing secret values of the
 *   overlay and of profiles at rest. Unset, writing a secret answers 501
 *   `settings-encryption-not-configured`; non-secret settings work without it.
 * - `SETTINGS_ENCRYPTION_KEY_PREVIOUS`: comma-separated older keys that still open values sealed
 *   before a rotation (`POST /api/config/reload` re-seals them under the current key).
 * - `SETTINGS_REFRESH_SECONDS`: how often an isolate re-checks the overlay's generation (the bound
 *   on how long a change made elsewhere takes to apply); default 2.
 */
import { type KeyRing, parseKeyRing } from "./sealing-keys";
import { envString } from "./store-url";

export const SETTINGS_KEY_SETTING = "SETTINGS_ENCRYPTION_KEY";
export const SETTINGS_PREVIOUS_KEYS_SETTING = "SETTINGS_ENCRYPTION_KEY_PREVIOUS";
export const SETTINGS_REFRESH_SETTING = "SETTINGS_REFRESH_SECONDS";

export const DEFAULT_REFRESH_SECONDS = 2;
export const MIN_REFRESH_SECONDS = 0.05;
export const MAX_REFRESH_SECONDS = 60;

export interface ConfigSettings {
  /** The sealing keys as standard base64 of 32 bytes: `current` seals, every key opens. */
  keys: KeyRing;
  /** Seconds between two generation checks of one isolate. */
  refreshSeconds: number;
}

export function parseConfigSettings(env: Record<string, unknown>, errors: string[]): ConfigSettings {
  const keys = parseKeyRing(env, SETTINGS_KEY_SETTING, SETTINGS_PREVIOUS_KEYS_SETTING, errors);

  let refreshSeconds = DEFAULT_REFRESH_SECONDS;
  const r = envString(env, SETTINGS_REFRESH_SETTING)?.trim();
  if (r) {
    const n = Number(r);
    if (!Number.isFinite(n) || n < MIN_REFRESH_SECONDS || n > MAX_REFRESH_SECONDS) {
      errors.push(`${SETTINGS_REFRESH_SETTING} must be a number of seconds from ${MIN_REFRESH_SECONDS} to ${MAX_REFRESH_SECONDS}`);
    } else refreshSeconds = n;
  }
  return { keys, refreshSeconds };
}
