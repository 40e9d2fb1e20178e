/** Presets (decisions §4, spec §2.11): pure shapes and rules, no storage. */
import { z } from "zod";
import { Combos, ExtensionElement } from "../../extensions/combos";
import { MAX_KWARGS_BYTES, boundedJsonObject } from "../../platform/http/bounded-json";
import { intactIdentifier } from "../../platform/http/identifiers";
import { type JsonSchema, inputSchemaSchema, jsonSchemaSchema } from "../../platform/json-schema";
import { StateBinding } from "../../shared/state-binding";
import { toolNameSchema } from "../../shared/tool-names";
import { targetNameSchema } from "../../shared/target-names";

const fixedKwargsSchema = boundedJsonObject(MAX_KWARGS_BYTES);

/** One version's body as stored: every field present. */
export const presetBodySchema = z.object({
  base_tool: z.string(),
  description: z.string(),
  fixed_kwargs: z.record(z.string(), z.unknown()),
  input_schema: z.record(z.string(), z.unknown()).nullable(),
  output_schema: z.record(z.string(), z.unknown()).nullable(),
  /** The preset's own state binding (spec §2.6): merged after a route's, door entries first. A body stored without it reads as null. */
  state_binding: StateBinding.nullable().default(null),
  /**
   * Extension combos around every call of the preset (docs/extensions.md). Checked
   * against the catalog when written; read back by shape only. A body stored without it reads as [].
   */
  extensions: z.array(z.array(ExtensionElement)).default([]),
});
export type PresetBody = z.infer<typeof presetBodySchema>;

/** `POST /api/presets`. */
export const presetCreateSchema = z
  .object({
    name: targetNameSchema,
    /** Any registered tool or an agent, MCP tools (`<server>.<tool>`) included. */
    base_tool: toolNameSchema,
    description: z.string().max(4096).default(""),
    fixed_kwargs: fixedKwargsSchema.default({}),
    input_schema: inputSchemaSchema.nullable().optional(),
    output_schema: jsonSchemaSchema.nullable().optional(),
    state_binding: StateBinding.nullable().optional(),
    extensions: Combos.default([]),
  })
  .strict();
export type PresetCreate = z.infer<typeof presetCreateSchema>;

/** `POST /api/presets/{name}/versions`: omitted fields carry forward; `null` clears a schema. */
export const presetPatchSchema = z
  .object({
    base_tool: toolNameSchema.optional(),
    description: z.string().max(4096).optional(),
    fixed_kwargs: fixedKwargsSchema.optional(),
    input_schema: inputSchemaSchema.nullable().optional(),
    output_schema: jsonSchemaSchema.nullable().optional(),
    state_binding: StateBinding.nullable().optional(),
    extensions: Combos.optional(),
  })
  .strict();
export type PresetPatch = z.infer<typeof presetPatchSchema>;

export const tagsSchema = z
  .array(
    intactIdentifier(
      z
        .string()
        .min(1)
        .max(64)
        .regex(/^[^\s]+$/, { message: "must not contain whitespace" }),
    ),
  )
  .max(32);

/** The first version's body from a create request. */
export function initialBody(req: z.infer<typeof presetCreateSchema>): PresetBody {
  return {
    base_tool: req.base_tool,
    description: req.description,
    fixed_kwargs: req.fixed_kwargs,
    input_schema: (req.input_schema ?? null) as JsonSchema | null,
    output_schema: (req.output_schema ?? null) as JsonSchema | null,
    state_binding: req.state_binding ?? null,
    extensions: req.extensions ?? [],
  };
}

/** A new version's body: the patch over the active version (omitted fields carry forward). */
export function carryForward(current: PresetBody, patch: PresetPatch): PresetBody {
  return {
    base_tool: patch.base_tool ?? current.base_tool,
    description: patch.description ?? current.description,
    fixed_kwargs: patch.fixed_kwargs ?? current.fixed_kwargs,
    input_schema: patch.input_schema === undefined ? current.input_schema : (patch.input_schema as JsonSchema | null),
    output_schema: patch.output_schema === undefined ? current.output_schema : (patch.output_schema as JsonSchema | null),
    state_binding: patch.state_binding === undefined ? current.state_binding : patch.state_binding,
    extensions: patch.extensions ?? current.extensions,
  };
}

/** The kwargs a preset dispatches: the caller's, with every fixed kwarg winning. */
export function mergeKwargs(caller: Record<string, unknown>, fixed: Record<string, unknown>): Record<string, unknown> {
  return { ...caller, ...fixed };
}

/**
 * The base tool's input schema as the preset's callers see it: fixed kwargs are not theirs to
 * give, so they leave `properties` and `required`. Only the top level is touched.
 */
export function schemaWithoutFixed(schema: JsonSchema, fixed: Record<string, unknown>): JsonSchema {
  const keys = Object.keys(fixed);
  if (!keys.length) return schema;
  const out: JsonSchema = { ...schema };
  if (schema.properties && typeof schema.properties === "object") {
    const props = { ...(schema.properties as Record<string, unknown>) };
    for (const k of keys) delete props[k];
    out.properties = props;
  }
  if (Array.isArray(schema.required)) out.required = (schema.required as unknown[]).filter((k) => !keys.includes(k as string));
  return out;
}

/** Spec §2.11 PresetVersion. */
export const presetVersionViewSchema = z.object({
  version: z.number().int(),
  body: z.record(z.string(), z.unknown()),
  created_at: z.string(),
  tags: z.array(z.string()),
  is_current: z.boolean(),
});
export type PresetVersionView = z.infer<typeof presetVersionViewSchema>;

/** A preset as reads show it: the active version's body flattened beside the version pointers. */
export const presetViewSchema = z.object({
  name: z.string(),
  base_tool: z.string(),
  description: z.string(),
  fixed_kwargs: z.record(z.string(), z.unknown()),
  input_schema: z.record(z.string(), z.unknown()).nullable(),
  output_schema: z.record(z.string(), z.unknown()).nullable(),
  state_binding: StateBinding.nullable(),
  extensions: z.array(z.array(ExtensionElement)),
  current_version: z.number().int(),
  latest_version: z.number().int(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type PresetView = z.infer<typeof presetViewSchema>;

/** The body of the version a view shows (the active one). */
export function presetBodyOf(p: PresetView): PresetBody {
  return {
    base_tool: p.base_tool,
    description: p.description,
    fixed_kwargs: p.fixed_kwargs,
    input_schema: p.input_schema,
    output_schema: p.output_schema,
    state_binding: p.state_binding,
    extensions: p.extensions,
  };
}

/** `is_current` is a read-time projection of the active version, never stored. */
export function versionView(v: { version: number; body: PresetBody; created_at: string; tags: string[] }, currentVersion: number): PresetVersionView {
  return { version: v.version, body: v.body, created_at: v.created_at, tags: v.tags, is_current: v.version === currentVersion };
}

/**
 * A `{version}` path segment: an integer (optionally negative, which simply never exists) is
 * looked up; anything else is 400 (spec §4.10). Returns null for a non-integer.
 */
export function parseVersionSegment(segment: string): number | null {
  if (!/^-?\d{1,15}$/.test(segment)) return null;
  return Number(segment);
}
