/**
 * A state declaration (`PUT /api/states/{name}`, spec §2.10) as pure rules: the body's shape, the
 * base-schema rules, and the additive-only rule a re-declaration meets once records exist.
 *
 * The body parse judges shape only. The base-schema rules live in `checkBaseSchema`, because a
 * schema sent as a TemplatedText is only known once rendered, and both spellings must meet the
 * same rules. Messages name the field or rule, never the submitted value.
 */
import { type Schema, dereference } from "@cfworker/json-schema";
import { z } from "zod";
import { MAX_SCHEMA_BYTES, boundedJsonObject, checkJsonBounds } from "../platform/http/bounded-json";
import { jsonSchemaSchema } from "../platform/json-schema";
import { templatedTextSchema } from "../templates/templated-text";

// ---------------------------------------------------------------------------------------------
// Names

export const STATE_NAME_PATTERN = /^[a-z0-9][a-z0-9_-]*$/;
export const SUBJECT_KIND_PATTERN = /^[a-z][a-z0-9_-]{0,62}$/;

/** A state's name (from the path). No `:`, so it can join other parts of a key unambiguously. */
export const StateName = z
  .string()
  .min(1, { message: "must not be empty" })
  .max(128, { message: "must be at most 128 characters" })
  .regex(STATE_NAME_PATTERN, { message: "must match ^[a-z0-9][a-z0-9_-]*$" });
export type StateName = z.infer<typeof StateName>;

export const SubjectKind = z.string().regex(SUBJECT_KIND_PATTERN, { message: "must match ^[a-z][a-z0-9_-]{0,62}$" });
export type SubjectKind = z.infer<typeof SubjectKind>;

// ---------------------------------------------------------------------------------------------
// The body

/** Upper bound of `retention_days` (spec §2.10: a positive 32-bit integer, at most 2^30 - 1). */
export const MAX_RETENTION_DAYS = 1_073_741_823;

const TEMPLATED_TEXT_KEYS = new Set(["content", "id", "kwargs"]);

function isPlainObject(v: unknown): v is Record<string, unknown> {
  return typeof v === "object" && v !== null && !Array.isArray(v);
}

/**
 * A JSON Schema object and a TemplatedText are both objects, so the shape decides: only
 * TemplatedText keys and a string `content` or `id` read as a TemplatedText. No draft 2020-12
 * keyword is named content, id or kwargs, so a real schema never reads as one.
 */
export function looksLikeTemplatedText(v: unknown): boolean {
  if (!isPlainObject(v)) return false;
  if (!Object.keys(v).every((k) => TEMPLATED_TEXT_KEYS.has(k))) return false;
  return typeof v.content === "string" || typeof v.id === "string";
}

/** The raw spelling: a bounded JSON object. What makes it a usable base schema is `checkBaseSchema`. */
const rawSchemaObject = boundedJsonObject(MAX_SCHEMA_BYTES);

/**
 * Judges the value by the one spelling its shape says it is. A plain union would try both and,
 * when both fail, report whichever branch zod happens to prefer (a raw schema over the size
 * bound was reported as "Unrecognized keys" of a TemplatedText). Issues added here stop the
 * pipe, so the union below only ever sees a value its intended branch accepts.
 */
function judgeBySpelling(value: unknown, ctx: z.RefinementCtx): unknown {
  const meantAsTemplate = looksLikeTemplatedText(value);
  if (!meantAsTemplate && !isPlainObject(value)) {
    ctx.addIssue({ code: "custom", message: "must be a JSON Schema object or a TemplatedText {content|id, kwargs}" });
    return value;
  }
  const judged = (meantAsTemplate ? templatedTextSchema : rawSchemaObject).safeParse(value);
  for (const issue of judged.success ? [] : judged.error.issues) {
    ctx.addIssue({ code: "custom", path: issue.path, message: meantAsTemplate ? `as a TemplatedText: ${issue.message}` : issue.message });
  }
  return value;
}

/**
 * `schema`: the base JSON Schema, raw or as a TemplatedText that renders to it. The union is
 * what the value parses into (and what the OpenAPI document shows); the branches are exclusive,
 * since a valid TemplatedText always reads as one.
 */
export const StateSchemaSource = z.preprocess(judgeBySpelling, z.union([templatedTextSchema, rawSchemaObject]));
export type StateSchemaSource = z.infer<typeof StateSchemaSource>;

/** Fields the platform computes: a client may echo them back as null, never set them. */
function platformField(what: "computed" | "set") {
  return z.null({ message: `is ${what} by the platform: omit it or send null` }).optional();
}

const SubjectKinds = z
  .array(SubjectKind)
  .min(1, { message: "must list at least one subject kind" })
  .max(32, { message: "must list at most 32 subject kinds" })
  .refine((kinds) => new Set(kinds).size === kinds.length, { message: "must not list a subject kind twice" });

/**
 * The body of `PUT /api/states/{name}`, parsed. Unknown keys are refused. `name` is accepted
 * (clients echo a read-back state) and dropped: the path names the state. When
 * `default_subject_kind` is absent or null it becomes the first of `subject_kinds`, so the
 * output always carries one. `retention_days` null means records are kept forever.
 */
export const StateDeclarationBody = z
  .object({
    name: z.string().nullable().optional(),
    description: z.string().max(2000, { message: "must be at most 2000 characters" }).default(""),
    schema: StateSchemaSource,
    subject_kinds: SubjectKinds,
    default_subject_kind: SubjectKind.nullable().optional(),
    retention_days: z
      .int({ message: "must be an integer" })
      .min(1, { message: "must be at least 1 (or null to keep records forever)" })
      .max(MAX_RETENTION_DAYS, { message: `must be at most ${MAX_RETENTION_DAYS}` })
      .nullable()
      .default(null),
    effective_schema: platformField("computed"),
    regimes: platformField("computed"),
    updated_at: platformField("set"),
  })
  .strict()
  .superRefine((body, ctx) => {
    const chosen = body.default_subject_kind;
    if (chosen !== undefined && chosen !== null && !body.subject_kinds.includes(chosen)) {
      ctx.addIssue({ code: "custom", path: ["default_subject_kind"], message: "must be one of subject_kinds" });
    }
  })
  .transform((body) => ({
    description: body.description,
    schema: body.schema,
    subject_kinds: body.subject_kinds,
    default_subject_kind: body.default_subject_kind ?? body.subject_kinds[0],
    retention_days: body.retention_days,
  }));
export type StateDeclarationBody = z.infer<typeof StateDeclarationBody>;

// ---------------------------------------------------------------------------------------------
// Base-schema rules

const DRAFT_2020_12 = new Set(["https://json-schema.org/draft/2020-12/schema", "https://json-schema.org/draft/2020-12/schema#"]);
const JSON_TYPES = new Set(["array", "boolean", "integer", "null", "number", "object", "string"]);
/** Keywords whose values are data, not schemas: a `$ref` key inside one is an ordinary key. */
const DATA_KEYWORDS = new Set(["const", "enum", "default", "examples"]);

/** Keywords holding one subschema, a non-empty list of them, or a name → subschema map. */
const ONE_SCHEMA = new Set([
  "additionalProperties",
  "unevaluatedProperties",
  "propertyNames",
  "items",
  "contains",
  "not",
  "if",
  "then",
  "else",
  "unevaluatedItems",
  "contentSchema",
]);
const SCHEMA_LIST = new Set(["prefixItems", "allOf", "anyOf", "oneOf"]);
const SCHEMA_MAP = new Set(["properties", "patternProperties", "$defs", "dependentSchemas"]);

const isNonNegativeInt = (v: unknown) => Number.isInteger(v) && (v as number) >= 0;
const isUniqueStrings = (v: unknown) => Array.isArray(v) && v.every((s) => typeof s === "string") && new Set(v).size === v.length;
const isTypeName = (v: unknown) => typeof v === "string" && JSON_TYPES.has(v);

type ValueRule = { holds: (v: unknown) => boolean; expect: string };
const rule = (holds: (v: unknown) => boolean, expect: string): ValueRule => ({ holds, expect });

/**
 * The forms the draft 2020-12 meta-schema gives the non-schema keywords. @cfworker/json-schema
 * ships no meta-schema, so this is the structural part of it; `checkBaseSchema` adds a compile.
 */
const VALUE_RULES = new Map<string, ValueRule>(
  Object.entries({
    type: rule(
      (v) => isTypeName(v) || (Array.isArray(v) && v.length > 0 && v.every(isTypeName) && new Set(v).size === v.length),
      "a JSON type name or a non-empty list of distinct ones",
    ),
    enum: rule(Array.isArray, "an array"),
    examples: rule(Array.isArray, "an array"),
    required: rule(isUniqueStrings, "an array of distinct strings"),
    dependentRequired: rule((v) => isPlainObject(v) && Object.values(v).every(isUniqueStrings), "an object of arrays of distinct strings"),
    multipleOf: rule((v) => typeof v === "number" && v > 0, "a number above 0"),
    $vocabulary: rule((v) => isPlainObject(v) && Object.values(v).every((b) => typeof b === "boolean"), "an object of booleans"),
    $schema: rule((v) => typeof v === "string" && DRAFT_2020_12.has(v), "the draft 2020-12 meta-schema URI"),
    $anchor: rule((v) => typeof v === "string" && /^[A-Za-z_][-A-Za-z0-9._]*$/.test(v), "a plain anchor name"),
    $dynamicAnchor: rule((v) => typeof v === "string" && /^[A-Za-z_][-A-Za-z0-9._]*$/.test(v), "a plain anchor name"),
  }),
);
for (const k of ["maxLength", "minLength", "maxItems", "minItems", "maxProperties", "minProperties", "maxContains", "minContains"]) {
  VALUE_RULES.set(k, rule(isNonNegativeInt, "a non-negative integer"));
}
for (const k of ["minimum", "maximum", "exclusiveMinimum", "exclusiveMaximum"])
  VALUE_RULES.set(
    k,
    rule((v) => typeof v === "number", "a number"),
  );
for (const k of ["uniqueItems", "deprecated", "readOnly", "writeOnly"])
  VALUE_RULES.set(
    k,
    rule((v) => typeof v === "boolean", "a boolean"),
  );
for (const k of ["$id", "$ref", "$comment", "title", "description", "pattern", "format", "contentEncoding", "contentMediaType"]) {
  VALUE_RULES.set(
    k,
    rule((v) => typeof v === "string", "a string"),
  );
}

const isSchema = (v: unknown) => typeof v === "boolean" || isPlainObject(v);
const notDraft = (keyword: string, expect: string) => `schema is not valid draft 2020-12: ${keyword} must be ${expect}`;

/** The first keyword of `node` (a schema) or its subschemas whose value has the wrong form. */
function structuralProblem(node: unknown): string | null {
  if (typeof node === "boolean") return null;
  if (!isPlainObject(node)) return "schema is not valid draft 2020-12: a subschema must be an object or a boolean";
  for (const [keyword, value] of Object.entries(node)) {
    // A Map, not an object literal: a keyword named "constructor" must not find Object's.
    const valueRule = VALUE_RULES.get(keyword);
    if (valueRule && !valueRule.holds(value)) return notDraft(keyword, valueRule.expect);
    let children: unknown[] = [];
    if (ONE_SCHEMA.has(keyword)) children = [value];
    else if (SCHEMA_LIST.has(keyword)) {
      if (!Array.isArray(value) || value.length === 0) return notDraft(keyword, "a non-empty array of schemas");
      children = value;
    } else if (SCHEMA_MAP.has(keyword)) {
      if (!isPlainObject(value)) return notDraft(keyword, "an object of schemas");
      children = Object.values(value);
    }
    for (const child of children) {
      if (!isSchema(child)) return notDraft(keyword, "made of schemas (objects or booleans)");
      const inner = structuralProblem(child);
      if (inner) return inner;
    }
  }
  return null;
}

/**
 * Refs must stay inside the document: a remote ref would fetch (or fail) at write time, and
 * `$dynamicRef` resolves by the evaluation path, which the additive-only rule cannot reason
 * about. Walks every key, not only schema positions, except data keywords; under a
 * name → schema map the keys are names (a property may be called `$ref`).
 */
function refProblem(node: unknown, keysAreNames = false): string | null {
  if (Array.isArray(node)) {
    for (const item of node) {
      const p = refProblem(item);
      if (p) return p;
    }
    return null;
  }
  if (!isPlainObject(node)) return null;
  for (const [key, value] of Object.entries(node)) {
    if (!keysAreNames) {
      if (DATA_KEYWORDS.has(key)) continue;
      if (key === "$dynamicRef") return "schema must not use $dynamicRef";
      if (key === "$ref" && !(typeof value === "string" && value.startsWith("#"))) {
        return "schema $ref must be local (#, #/pointer or #anchor)";
      }
    }
    const p = refProblem(value, !keysAreNames && SCHEMA_MAP.has(key));
    if (p) return p;
  }
  return null;
}

/**
 * Every local ref points at a subschema the validator knows. A dangling one would only throw
 * when a record reaches it, failing that write (and every later one) instead of the declare.
 * Resolution goes through the validator's own `dereference`, on a copy because it tags nodes.
 */
function refsResolve(schema: Record<string, unknown>): boolean {
  let lookup: Record<string, unknown>;
  try {
    lookup = dereference(structuredClone(schema) as Schema);
  } catch {
    return false; // a duplicate or malformed $id
  }
  for (const node of Object.values(lookup)) {
    const target = isPlainObject(node) ? (node as { __absolute_ref__?: string }).__absolute_ref__ : undefined;
    if (target !== undefined && lookup[target] === undefined) return false;
  }
  return true;
}

/**
 * The rules a base schema meets (null when it does): a JSON object within the schema bounds
 * (64 levels, MAX_SCHEMA_BYTES), draft 2020-12 in form, root `"type": "object"` with at least one
 * property, local refs that resolve, no `$dynamicRef`, and usable by the validator (patterns in
 * RE2 syntax, compiles).
 */
export function checkBaseSchema(schema: unknown): string | null {
  if (!isPlainObject(schema)) return "schema must be a JSON object";
  // Bounds first: every walk below recurses, and the bound is what makes that safe.
  const broken = checkJsonBounds(schema, MAX_SCHEMA_BYTES);
  if (broken) return `schema ${broken}`;
  const problem = structuralProblem(schema) ?? refProblem(schema);
  if (problem) return problem;
  if (schema.type !== "object") return 'schema root must declare "type": "object"';
  if (!isPlainObject(schema.properties) || Object.keys(schema.properties).length === 0) {
    return "schema root must declare at least one property";
  }
  if (!refsResolve(schema)) return "schema has a $ref that does not resolve inside the schema";
  // The validator tags what it compiles, so it gets a copy: the caller's value stays as sent.
  const usable = jsonSchemaSchema.safeParse(structuredClone(schema));
  if (!usable.success) return `schema ${usable.error.issues[0]?.message ?? "is not a usable JSON Schema"}`;
  return null;
}

// ---------------------------------------------------------------------------------------------
// Re-declaration rules

/**
 * Compact JSON with object keys sorted (by UTF-16 code units), so two values that differ only
 * in key order compare equal as strings. Like JSON.stringify, undefined members are left out
 * (in arrays they become null). Callers pass bounded values (schemas, records).
 */
export function canonicalJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map((item) => (item === undefined ? "null" : canonicalJson(item))).join(",")}]`;
  if (isPlainObject(v)) {
    const members = Object.keys(v)
      .filter((k) => v[k] !== undefined)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${canonicalJson(v[k])}`);
    return `{${members.join(",")}}`;
  }
  return JSON.stringify(v) ?? "null";
}

/**
 * Null when `newSchema` only adds top-level properties to `oldSchema`, else why not. Records
 * already stored were valid under the old schema; any other change could make one invalid, so
 * the rule is byte-level (canonical) rather than a semantic subset check.
 */
export function isNarrowing(oldSchema: object, newSchema: object): string | null {
  const before = oldSchema as Record<string, unknown>;
  const after = newSchema as Record<string, unknown>;
  if (propertiesNarrowed(before.properties, after.properties)) return "an existing property was removed or changed";
  const keywords = new Set([...Object.keys(before), ...Object.keys(after)]);
  keywords.delete("properties");
  for (const k of keywords) {
    const was = Object.hasOwn(before, k) ? canonicalJson(before[k]) : undefined;
    const now = Object.hasOwn(after, k) ? canonicalJson(after[k]) : undefined;
    if (was !== now) return "a root keyword other than properties changed";
  }
  return null;
}

/** Whether a property of `before` (a `properties` value) is missing or different in `after`. */
function propertiesNarrowed(before: unknown, after: unknown): boolean {
  if (before === undefined) return false; // nothing existed to remove
  if (!isPlainObject(before)) return canonicalJson(before) !== canonicalJson(after);
  const kept = isPlainObject(after) ? after : {};
  return Object.entries(before).some(([name, sub]) => !Object.hasOwn(kept, name) || canonicalJson(kept[name]) !== canonicalJson(sub));
}

/** Kinds in `oldKinds` missing from `newKinds`, each once, in their old order. */
export function removedKinds(oldKinds: string[], newKinds: string[]): string[] {
  const kept = new Set(newKinds);
  return [...new Set(oldKinds)].filter((k) => !kept.has(k));
}
