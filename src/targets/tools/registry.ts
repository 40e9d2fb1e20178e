/**
 * The live tool registry: built-ins, HTTP tools declared in D1 and presets, one namespace.
 * Every lookup reads D1, so a declaration is visible to every isolate at once.
 */
import { ANY_OBJECT_SCHEMA, ANY_SCHEMA, type JsonSchema } from "../json-schema";
import { type PresetBody, presetBodyOf, schemaWithoutFixed } from "../presets/model";
import { getPreset, listPresets } from "../presets/store";
import { BUILTIN_TOOLS, type BuiltinTool } from "./builtins";
import { type HttpTool, getHttpTool, listHttpTools } from "./http-tools";

/** A tool the dispatcher can run directly (a preset's base). */
export type BaseTool = { kind: "builtin"; name: string; tool: BuiltinTool } | { kind: "http"; name: string; tool: HttpTool };

export type ResolvedTool = BaseTool | { kind: "preset"; name: string; version: number; body: PresetBody };

/** What `GET /api/tools/{name}/schema` answers. */
export interface ToolSchemaView {
  input: JsonSchema;
  output: JsonSchema;
  description: string;
}

/** Finds a non-preset tool: the only kind a preset may stand on. */
export async function resolveBaseTool(db: D1Database, name: string): Promise<BaseTool | null> {
  const builtin = BUILTIN_TOOLS.get(name);
  if (builtin) return { kind: "builtin", name, tool: builtin };
  const http = await getHttpTool(db, name);
  return http ? { kind: "http", name, tool: http } : null;
}

/** Finds any tool by name (null when none). */
export async function resolveTool(db: D1Database, name: string): Promise<ResolvedTool | null> {
  const base = await resolveBaseTool(db, name);
  if (base) return base;
  const preset = await getPreset(db, name);
  if (!preset) return null;
  return { kind: "preset", name, version: preset.current_version, body: presetBodyOf(preset) };
}

function baseSchema(t: BaseTool): ToolSchemaView {
  if (t.kind === "builtin") return { input: t.tool.input_schema, output: t.tool.output_schema, description: t.tool.description };
  return { input: t.tool.input_schema ?? ANY_OBJECT_SCHEMA, output: ANY_SCHEMA, description: t.tool.description };
}

/** A preset's schemas: its own where declared, else its base tool's (minus the fixed kwargs). */
function presetSchema(body: PresetBody, base: BaseTool | null): ToolSchemaView {
  const b = base ? baseSchema(base) : { input: ANY_OBJECT_SCHEMA, output: ANY_SCHEMA, description: "" };
  return {
    input: body.input_schema ?? schemaWithoutFixed(b.input, body.fixed_kwargs),
    output: body.output_schema ?? b.output,
    description: body.description || b.description,
  };
}

/** One tool's schema view, or null when the name is not registered. */
export async function toolSchema(db: D1Database, name: string): Promise<ToolSchemaView | null> {
  const t = await resolveTool(db, name);
  if (!t) return null;
  if (t.kind !== "preset") return baseSchema(t);
  return presetSchema(t.body, await resolveBaseTool(db, t.body.base_tool));
}

/** Every registered tool's schema view, keyed by name, names sorted. */
export async function allToolSchemas(db: D1Database): Promise<Record<string, ToolSchemaView>> {
  const [https, presets] = await Promise.all([listHttpTools(db), listPresets(db)]);
  const bases = new Map<string, BaseTool>();
  for (const [name, tool] of BUILTIN_TOOLS) bases.set(name, { kind: "builtin", name, tool });
  for (const tool of https) bases.set(tool.title, { kind: "http", name: tool.title, tool });
  const views = new Map<string, ToolSchemaView>();
  for (const [name, base] of bases) views.set(name, baseSchema(base));
  for (const p of presets) views.set(p.name, presetSchema(p, bases.get(p.base_tool) ?? null));
  const out: Record<string, ToolSchemaView> = {};
  for (const name of [...views.keys()].sort()) out[name] = views.get(name)!;
  return out;
}

/** Every registered tool name, sorted. */
export async function listToolNames(db: D1Database): Promise<string[]> {
  return Object.keys(await allToolSchemas(db));
}
