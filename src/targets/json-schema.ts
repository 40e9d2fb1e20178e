/**
 * JSON Schema at the edges of targets: tool and preset input schemas, preset output schemas.
 * Validation messages name the failing location and keyword only: validators quote instance
 * values, and kwargs may carry user text or secrets.
 */
import { type Schema, Validator } from "@cfworker/json-schema";
import { z } from "zod";

export type JsonSchema = Record<string, unknown>;

const VALID_TYPES = new Set(["array", "boolean", "integer", "null", "number", "object", "string"]);

/** Errors that only say "a child failed"; the child's own error is the useful one. */
const AGGREGATE_KEYWORDS = new Set(["properties", "items", "prefixItems", "allOf", "$ref", "$dynamicRef", "patternProperties", "dependentSchemas"]);

const validators = new WeakMap<object, Validator>();

function validatorFor(schema: JsonSchema): Validator {
  let v = validators.get(schema);
  if (!v) {
    v = new Validator(schema as Schema, "2020-12", false);
    validators.set(schema, v);
  }
  return v;
}

export type SchemaCheck = { ok: true } | { ok: false; problems: string[] };

/**
 * Validates `value` against `schema`. Problems read like `/message: type` or
 * `/: required property "message"` (schema words, never instance values). A schema that
 * cannot be evaluated (bad $ref, bad pattern) is reported as one problem, not thrown.
 */
export function checkAgainstSchema(schema: JsonSchema, value: unknown): SchemaCheck {
  let result;
  try {
    result = validatorFor(schema).validate(value);
  } catch {
    return { ok: false, problems: ["the schema could not be evaluated"] };
  }
  if (result.valid) return { ok: true };
  const problems: string[] = [];
  for (const e of result.errors) {
    if (AGGREGATE_KEYWORDS.has(e.keyword)) continue;
    const at = e.instanceLocation.replace(/^#/, "") || "/";
    let what = e.keyword;
    if (e.keyword === "required") {
      const m = /required property "([^"]{1,64})"/.exec(e.error);
      if (m) what = `required property "${m[1]}"`;
    }
    const line = `${at}: ${what}`;
    if (!problems.includes(line)) problems.push(line);
    if (problems.length === 5) break;
  }
  if (!problems.length) problems.push("/: does not match the schema");
  return { ok: false, problems };
}

function typesAreKnown(node: unknown, depth = 0): boolean {
  if (depth > 64 || node === null || typeof node !== "object") return true;
  if (Array.isArray(node)) return node.every((n) => typesAreKnown(n, depth + 1));
  const obj = node as Record<string, unknown>;
  const t = obj.type;
  if (typeof t === "string" && !VALID_TYPES.has(t)) return false;
  if (Array.isArray(t) && !t.every((x) => typeof x === "string" && VALID_TYPES.has(x))) return false;
  return Object.values(obj).every((v) => typesAreKnown(v, depth + 1));
}

/**
 * A declared JSON Schema (object form). Refused when it names an unknown type or cannot be
 * evaluated at all (probed against a few instances so a dangling $ref surfaces at declare time).
 */
export const jsonSchemaSchema = z
  .record(z.string(), z.unknown())
  .refine((s) => typesAreKnown(s), { message: "names an unknown JSON Schema type" })
  .refine(
    (s) => {
      try {
        const v = new Validator(s as Schema, "2020-12", false);
        for (const probe of [{}, null, "", 0, []]) v.validate(probe);
        return true;
      } catch {
        return false;
      }
    },
    { message: "is not a usable JSON Schema" },
  );

/** An input schema must describe the kwargs object. */
export const inputSchemaSchema = jsonSchemaSchema.refine(
  (s) => s.type === undefined || s.type === "object",
  { message: "must describe an object (type \"object\")" },
);

/** Accepts every JSON value: the schema of an undeclared output. */
export const ANY_SCHEMA: JsonSchema = Object.freeze({}) as JsonSchema;

/** The schema of an HTTP tool that declares none: any JSON object. */
export const ANY_OBJECT_SCHEMA: JsonSchema = Object.freeze({ type: "object" }) as JsonSchema;
