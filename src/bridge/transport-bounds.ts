/**
 * Transport bounds of spec §4.2 / decisions §6 (pure). Violations name the bound, never the value.
 */
export const MAX_JSON_DEPTH = 64;
export const MAX_JSON_BYTES = 32_768;
export const MAX_PARAMS = 16;
export const PARAM_KEY = /^[A-Za-z0-9_-]{1,64}$/;
export const MAX_PARAM_VALUE = 512;
export const MAX_PARAMS_BYTES = 2048;
export const MAX_ATTACHMENTS = 50;
export const MAX_URL = 8192;

/** Checks a JSON object against depth, finiteness and serialized-size bounds; returns the broken rule or null. */
export function checkJsonObject(value: unknown): string | null {
  if (typeof value !== "object" || value === null || Array.isArray(value)) return "must be a JSON object";
  const stack: Array<[unknown, number]> = [[value, 1]];
  while (stack.length) {
    const [v, depth] = stack.pop()!;
    if (depth > MAX_JSON_DEPTH) return `must nest at most ${MAX_JSON_DEPTH} levels`;
    if (typeof v === "number" && !Number.isFinite(v)) return "numbers must be finite";
    if (typeof v === "object" && v !== null) {
      for (const child of Array.isArray(v) ? v : Object.values(v)) stack.push([child, depth + 1]);
    }
  }
  if (new TextEncoder().encode(JSON.stringify(value)).byteLength > MAX_JSON_BYTES) {
    return `must be at most ${MAX_JSON_BYTES} bytes as compact JSON`;
  }
  return null;
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
