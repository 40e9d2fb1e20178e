/**
 * Reading back what we stored: parse, validate against the shape's one schema, or throw.
 *
 * Everything here was written by this service, so data that does not read back is corrupt
 * storage, not bad input: it throws a plain Error (the error contract renders it as a logged
 * generic 500), never an HttpError 400. `what` names the table or field in the message, never the
 * stored value.
 */
import { z } from "zod";
import type { JsonObject } from "../http/bounded-json";

/** Parses the JSON text `json` and validates it against `schema`; throws naming `what` when either fails. */
export function parseStored<S extends z.ZodType>(schema: S, json: string, what: string): z.output<S> {
  let raw: unknown;
  try {
    raw = JSON.parse(json);
  } catch {
    throw new Error(`${what} holds invalid JSON`);
  }
  return validStored(schema, raw, what);
}

/** Validates a value already read (a D1 row, say) against `schema`; throws naming `what` when it fails. */
export function validStored<S extends z.ZodType>(schema: S, value: unknown, what: string): z.output<S> {
  const parsed = schema.safeParse(value);
  if (!parsed.success) throw new Error(`${what} failed validation`);
  return parsed.data;
}

/**
 * A column that holds `schema`'s value as JSON text, for a row schema read with `validStored`.
 * A codec: decoding parses the text (unreadable text is a validation issue, so the row fails as
 * a whole), and `z.encode` on the row schema turns the value back into the text to store.
 */
export function jsonColumn<S extends z.ZodType>(schema: S) {
  return z.codec(z.string(), schema, {
    decode: (text, ctx) => {
      try {
        return JSON.parse(text);
      } catch {
        ctx.issues.push({ code: "custom", message: "stored JSON is unreadable", input: text });
        return z.NEVER;
      }
    },
    encode: (value) => JSON.stringify(value),
  });
}

/**
 * A stored JSON object, checked without being rebuilt. `JsonObject` (a zod record) copies key by
 * key and leaves out an own `__proto__` key, which JSON.parse keeps as data; stored documents whose
 * keys are anyone's choice read back through this one, whole.
 */
export const storedJsonObject = z.custom<JsonObject>((v) => typeof v === "object" && v !== null && !Array.isArray(v), "expected a JSON object");
