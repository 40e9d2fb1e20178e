/**
 * Canonical JSON: object keys sorted at every level, so equal values give equal text whatever
 * order their keys arrived in. Used for cache keys and for telling combos apart. Pure.
 * Callers pass bounded JSON (kwargs, configs), so the recursion depth is bounded too.
 */
export function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (typeof value === "object" && value !== null) {
    const keys = Object.keys(value).sort();
    return `{${keys.map((k) => `${JSON.stringify(k)}:${canonicalJson((value as Record<string, unknown>)[k])}`).join(",")}}`;
  }
  return JSON.stringify(value) ?? "null";
}
