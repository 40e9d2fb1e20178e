/**
 * Transport bounds of spec §4.2 / decisions §6 (pure). Violations name the bound, never the value.
 * The media caps sit with the media shapes (channels/media.ts), the JSON cap with the free-form
 * JSON bounds (http/bounded-json.ts): the channels' rich parts need them and never import bridge/.
 */
import { MAX_JSON_BYTES, checkJsonBounds } from "../../platform/http/bounded-json";

export const MAX_PARAMS = 16;
export const PARAM_KEY = /^[A-Za-z0-9_-]{1,64}$/;
export const MAX_PARAM_VALUE = 512;
export const MAX_PARAMS_BYTES = 2048;

/** Checks a JSON object (form, event payload) against the shared free-form bounds; returns the broken rule or null. */
export function checkJsonObject(value: unknown): string | null {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return "must be a JSON object";
  return checkJsonBounds(value, MAX_JSON_BYTES);
}

/** Checks params; returns the broken rule or null. */
export function checkParams(params: Record<string, unknown>): string | null {
  const entries = Object.entries(params);
  if (entries.length > MAX_PARAMS) return `at most ${MAX_PARAMS} entries`;
  for (const [k, v] of entries) {
    if (!PARAM_KEY.test(k)) return "keys must match ^[A-Za-z0-9_-]{1,64}$";
    if (typeof v !== "string") return "values must be strings";
    if ([...v].length > MAX_PARAM_VALUE) return `values must be at most ${MAX_PARAM_VALUE} characters`;
  }
  if (new TextEncoder().encode(JSON.stringify(params)).byteLength > MAX_PARAMS_BYTES) {
    return `at most ${MAX_PARAMS_BYTES} bytes serialized`;
  }
  return null;
}
