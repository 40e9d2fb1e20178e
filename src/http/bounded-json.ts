/**
 * The one bound on free-form JSON (kwargs, fixed_kwargs, run-tool arguments, JSON Schemas, forms,
 * event payloads, and the results HTTP tools and agents answer): at most MAX_JSON_DEPTH levels of
 * nesting, finite numbers only, and a byte cap on the compact JSON.
 *
 * Why: JSON.parse is iterative, so a value nested 10,000 levels passes it, and then overflows the
 * stack of whatever recurses over it later (mustache, JSON.stringify, jq's input), which for a
 * stored route means every later message fails. JSON.parse also turns `1e400` into Infinity,
 * which JSON.stringify writes back as `null`, silently changing the value. The walk below is
 * iterative and stops at the first broken bound, so checking a hostile value cannot overflow.
 */
import { z } from "zod";

/** Most levels of nesting: `{}` and `[]` are one level, `{"a": []}` two. */
export const MAX_JSON_DEPTH = 64;

/** Byte caps of the free-form fields (compact JSON, UTF-8); documented in docs/security.md. */
export const MAX_KWARGS_BYTES = 64 * 1024;
export const MAX_SCHEMA_BYTES = 64 * 1024;

/** Returns the broken bound (a message naming it, never the value) or null. */
export function checkJsonBounds(value: unknown, maxBytes: number): string | null {
  const stack: Array<[unknown, number]> = [[value, 0]];
  while (stack.length) {
    const [v, depth] = stack.pop()!;
    if (typeof v === "number") {
      if (!Number.isFinite(v)) return "numbers must be finite";
      continue;
    }
    if (typeof v !== "object" || v === null) continue;
    // A cycle (only possible in-process, never from JSON.parse) also ends here.
    if (depth >= MAX_JSON_DEPTH) return `must nest at most ${MAX_JSON_DEPTH} levels`;
    for (const child of Array.isArray(v) ? v : Object.values(v)) stack.push([child, depth + 1]);
  }
  // Depth is bounded now, so stringifying cannot recurse deeply.
  const json = JSON.stringify(value) ?? "";
  if (json.length > maxBytes || new TextEncoder().encode(json).byteLength > maxBytes) {
    return `must be at most ${maxBytes} bytes as compact JSON`;
  }
  return null;
}

/**
 * Adds the bound to a schema as its first check; `abort` keeps later refinements (which may
 * recurse, e.g. a JSON Schema compile) from ever seeing an unbounded value.
 */
function bounded<T extends z.ZodType>(schema: T, maxBytes: number): T {
  return schema.check(
    z.superRefine((v, ctx) => {
      const broken = checkJsonBounds(v, maxBytes);
      if (broken) ctx.addIssue({ code: "custom", message: broken, continue: false });
    }),
  ) as T;
}

/** A free-form JSON object field, bounded. */
export function boundedJsonObject(maxBytes: number) {
  return bounded(z.record(z.string(), z.unknown()), maxBytes);
}

/** A free-form JSON value field (any JSON type), bounded. */
export function boundedJsonValue(maxBytes: number) {
  return bounded(z.unknown(), maxBytes);
}
