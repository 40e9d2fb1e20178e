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

/**
 * A JSON value, as JSON.parse yields it. Declared through interfaces on purpose: the Durable
 * Object RPC type mapping (`Rpc.Serializable`) recurses into a self-referencing type alias until
 * TypeScript gives up ("excessively deep"), and it maps `unknown` to `never`, which hides every
 * stub method returning a value that holds one. Through interfaces it resolves.
 */
export type JsonValue = string | number | boolean | null | JsonArray | JsonObject;
export interface JsonObject {
  [key: string]: JsonValue;
}
export interface JsonArray extends Array<JsonValue> {}

/**
 * The schema of a JSON value. It checks nothing by itself: every value it meets came out of
 * JSON.parse (a request body, stored JSON, a provider's or tool's answer), so it is JSON by
 * construction, and the checks that matter (depth, size, finite numbers) are the bounds below.
 * A recursive zod schema (`z.json()`) would also put `$defs` references into the OpenAPI document
 * that do not resolve there; this one renders as `{}`, as `z.unknown()` did.
 */
export const JsonValue = z.custom<JsonValue>();

/** The schema of a JSON object (its values unchecked, as for `JsonValue`). */
export const JsonObject = z.record(z.string(), JsonValue);

/** Most levels of nesting: `{}` and `[]` are one level, `{"a": []}` two. */
export const MAX_JSON_DEPTH = 64;

/** Byte caps of the free-form fields (compact JSON, UTF-8); documented in docs/security.md. */
export const MAX_KWARGS_BYTES = 64 * 1024;
export const MAX_SCHEMA_BYTES = 64 * 1024;
/** A form, an event payload or an operator form schema (the transport bound of decisions §6). */
export const MAX_JSON_BYTES = 32_768;

/** Returns the broken bound (a message naming it, never the value) or null. */
export function checkJsonBounds(value: unknown, maxBytes: number): string | null {
  const stack: Array<[unknown, number]> = [[value, 0]];
  for (let top = stack.pop(); top; top = stack.pop()) {
    const [v, depth] = top;
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
  return bounded(JsonObject, maxBytes);
}

/** A free-form JSON value field (any JSON type), bounded. */
export function boundedJsonValue(maxBytes: number) {
  return bounded(JsonValue, maxBytes);
}

/** `form`, `event.payload` and an operator form `schema`: free-form, transport-bounded (decisions §6). */
export const jsonObjectSchema = boundedJsonObject(MAX_JSON_BYTES);
