/**
 * JSON Schema at the edges of targets: tool and preset input schemas, preset output schemas.
 * Validation messages name the failing location and keyword only: validators quote instance
 * values, and kwargs may carry user text or secrets.
 */
import { type Schema, Validator } from "@cfworker/json-schema";
import { RE2JS } from "re2js";
import { MAX_SCHEMA_BYTES, boundedJsonObject } from "./http/bounded-json";

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

/**
 * Declared schemas come from `tools:write` and `presets:write` holders, and JavaScript's RegExp
 * backtracks: `"pattern": "^(a+)+$"` against 40 characters would block the isolate for hours, and
 * no timer can interrupt it. So the validator's regular expressions run on RE2 (re2js), which
 * matches in time linear in the input. @cfworker/json-schema builds them with `new RegExp(p, "u")`
 * (for `pattern`, `patternProperties` and `format: "regex"`) and only calls `.test()`, so during
 * a validation, which is synchronous and cannot interleave with other code, the global RegExp is
 * swapped for this stand-in. Regex literals elsewhere are unaffected (they never go through the
 * global constructor).
 */
class LinearRegExp {
  private readonly re: RE2JS;
  constructor(pattern: string) {
    this.re = compileLinear(pattern);
  }
  test(input: string): boolean {
    return this.re.test(input);
  }
}

/**
 * Compiled `pattern`s per isolate. Bound: LINEAR_CACHE_MAX patterns (a pattern is bounded by its
 * schema's size). Eviction: the oldest first.
 */
const linearCache = new Map<string, RE2JS>();
export const LINEAR_CACHE_MAX = 256;

/** Patterns compiled and kept (tests, and the bound above). */
export function linearPatternCount(): number {
  return linearCache.size;
}

function compileLinear(pattern: string): RE2JS {
  let re = linearCache.get(pattern);
  if (!re) {
    re = RE2JS.compile(pattern); // throws for syntax RE2 lacks (backreferences, lookaround)
    if (linearCache.size >= LINEAR_CACHE_MAX) linearCache.delete(linearCache.keys().next().value as string);
    linearCache.set(pattern, re);
  }
  return re;
}

function withLinearRegExp<T>(run: () => T): T {
  const original = globalThis.RegExp;
  globalThis.RegExp = LinearRegExp as unknown as RegExpConstructor;
  try {
    return run();
  } finally {
    globalThis.RegExp = original;
  }
}

/** Keywords whose values are data, not schemas: a `pattern` key inside them is not a regex. */
const DATA_KEYWORDS = new Set(["const", "enum", "default", "examples"]);

/** Every `pattern` and `patternProperties` regex in the schema compiles under RE2. */
function regexesAreLinear(node: unknown, depth = 0): boolean {
  if (depth > 64 || node === null || typeof node !== "object") return true;
  if (Array.isArray(node)) return node.every((n) => regexesAreLinear(n, depth + 1));
  for (const [key, value] of Object.entries(node as Record<string, unknown>)) {
    if (DATA_KEYWORDS.has(key)) continue;
    try {
      if (key === "pattern" && typeof value === "string") compileLinear(value);
      if (key === "patternProperties" && value && typeof value === "object" && !Array.isArray(value)) {
        for (const p of Object.keys(value)) compileLinear(p);
      }
    } catch {
      return false;
    }
    if (!regexesAreLinear(value, depth + 1)) return false;
  }
  return true;
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
    // The validator writes its bookkeeping into the schema it compiles, so a shared frozen schema
    // (ANY_SCHEMA, ANY_OBJECT_SCHEMA) is checked as a copy rather than failing to evaluate.
    const compiled = Object.isFrozen(schema) ? structuredClone(schema) : schema;
    result = withLinearRegExp(() => validatorFor(compiled).validate(value));
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
export const jsonSchemaSchema = boundedJsonObject(MAX_SCHEMA_BYTES)
  // The bound runs first and aborts, so the checks below never walk an unbounded value.
  .refine((s) => typesAreKnown(s), { message: "names an unknown JSON Schema type" })
  .refine((s) => regexesAreLinear(s), { message: "has a pattern outside RE2 syntax (patterns run on a linear-time engine: no backreferences or lookaround)" })
  .refine(
    (s) => {
      try {
        const v = new Validator(s as Schema, "2020-12", false);
        withLinearRegExp(() => {
          for (const probe of [{}, null, "", 0, []]) v.validate(probe);
        });
        return true;
      } catch {
        return false;
      }
    },
    { message: "is not a usable JSON Schema" },
  );

/** An input schema must describe the kwargs object. */
export const inputSchemaSchema = jsonSchemaSchema.refine((s) => s.type === undefined || s.type === "object", {
  message: 'must describe an object (type "object")',
});

/** Accepts every JSON value: the schema of an undeclared output. */
export const ANY_SCHEMA: JsonSchema = Object.freeze({}) as JsonSchema;

/** The schema of an HTTP tool that declares none: any JSON object. */
export const ANY_OBJECT_SCHEMA: JsonSchema = Object.freeze({ type: "object" }) as JsonSchema;
