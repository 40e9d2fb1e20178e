/**
 * The key rings that seal secrets at rest (connector tokens, secret runtime settings): a current
 * key that seals and opens, and previous keys that still open what was sealed before a rotation.
 * One parser for every `*_ENCRYPTION_KEY` / `*_ENCRYPTION_KEY_PREVIOUS` pair; errors name the
 * variables, never a value.
 */
import { envString } from "./define";

/** The sealing keys as standard base64 of 32 bytes: `current` seals, every key opens. */
export interface KeyRing {
  current: string | null;
  previous: string[];
}

export const KEY_RULE = "must be 32 random bytes in base64 (e.g. `openssl rand -base64 32`)";
const MAX_PREVIOUS_KEYS = 8;

/** A base64 (standard or url-safe, padding optional) 256-bit key, normalized to standard base64; null when it is not one. */
export function normalizeKey(text: string): string | null {
  const t = text.trim().replace(/-/g, "+").replace(/_/g, "/").replace(/=+$/, "");
  if (!/^[A-Za-z0-9+/]+$/.test(t)) return null;
  let bin: string;
  try {
    bin = atob(t + "=".repeat((4 - (t.length % 4)) % 4));
  } catch {
    return null;
  }
  return bin.length === 32 ? btoa(bin) : null;
}

/** Reads the ring from `keySetting` and the comma-separated `previousSetting`; an unset key is null. */
export function parseKeyRing(env: Record<string, unknown>, keySetting: string, previousSetting: string, errors: string[]): KeyRing {
  let current: string | null = null;
  const raw = envString(env, keySetting)?.trim();
  if (raw) {
    current = normalizeKey(raw);
    if (!current) errors.push(`${keySetting} ${KEY_RULE}`);
  }
  const previous: string[] = [];
  for (const entry of (envString(env, previousSetting) ?? "")
    .split(",")
    .map((s) => s.trim())
    .filter(Boolean)) {
    const key = normalizeKey(entry);
    if (!key) {
      errors.push(`${previousSetting} must be a comma-separated list of keys that each ${KEY_RULE.replace(/^must be/, "are")}`);
      break;
    }
    if (key !== current && !previous.includes(key)) previous.push(key);
  }
  if (previous.length > MAX_PREVIOUS_KEYS) errors.push(`${previousSetting} may list at most ${MAX_PREVIOUS_KEYS} keys`);
  return { current, previous };
}
