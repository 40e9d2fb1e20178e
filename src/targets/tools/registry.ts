/**
 * The live tool registry: built-ins, HTTP tools declared in D1, presets, and the tools of declared
 * MCP servers (`<server>.<tool>`, their last good listing cached in D1; docs/mcp.md), one
 * namespace. Every lookup reads D1, so a declaration is visible to every isolate at once.
 */
import type { McpServerRecord, McpToolRecord } from "../../mcp/store";
import { listMcpTools, mcpToolOf, mcpToolStatements } from "../../mcp/store";
import type { Combo } from "../../extensions/combos";
import { type CombosWriter, combosOf, combosWriterOf, toolCombosStatement } from "../../extensions/store";
import { splitMcpToolName } from "../../shared/tool-names";
import { ANY_OBJECT_SCHEMA, ANY_SCHEMA, type JsonSchema } from "../../platform/json-schema";
import { type PresetBody, presetBodyOf, schemaWithoutFixed } from "../presets/model";
import { getRunnablePreset, listPresets } from "../presets/store";
import type { KeyWithOwner } from "../../access-control/key-store";
import { BUILTIN_TOOLS, type BuiltinTool } from "./builtins";
import { type ApiTool, listApiTools, toApiTool } from "./api-tool-store";
import { d1, rowsOf, trusted } from "../../platform/persistence/d1";
import { DeclaredToolRow, type HttpTool, listHttpTools, toHttpTool } from "./http-tools";

/** An MCP server's registered tool as the dispatcher runs it: the server's call deadline applies. */
export interface McpTool {
  server: McpServerRecord;
  remote: McpToolRecord;
  description: string;
  input_schema: JsonSchema;
  output_schema: JsonSchema | null;
  timeout_seconds: number;
}

/** A tool the dispatcher can run directly (a preset's base). */
export type BaseTool =
  | { kind: "builtin"; name: string; tool: BuiltinTool }
  | { kind: "http"; name: string; tool: HttpTool; extensions?: Combo[]; extensionsBy?: CombosWriter | null }
  /** An API tool (docs/manifest.md): an OpenAPI operation made a tool by POST /api/api-tools. */
  | { kind: "api"; name: string; tool: ApiTool; extensions?: Combo[]; extensionsBy?: CombosWriter | null }
  | { kind: "mcp"; name: string; tool: McpTool; extensions?: Combo[]; extensionsBy?: CombosWriter | null };
// `extensions`: the tool's combos (docs/extensions.md), read in the batch that resolved the tool
// so that its call needs no round trip of its own for them; absent where a view built the tool.
// `extensionsBy`: who set them, with that key's live record (null: no combos row).

function mcpTool(server: McpServerRecord, remote: McpToolRecord): McpTool {
  return {
    server,
    remote,
    description: remote.description,
    input_schema: remote.input_schema,
    output_schema: remote.output_schema,
    timeout_seconds: server.spec.timeout_seconds,
  };
}

/**
 * A preset as dispatched: its active version's body, who made it active (`stored_by`) and that
 * key's live record and owner, read with the preset (src/access-control/stored-by.ts checks them at run).
 */
export type ResolvedTool = BaseTool | { kind: "preset"; name: string; version: number; body: PresetBody; stored_by: string; holder: KeyWithOwner | null };

/** What `GET /api/tools/{name}/schema` answers. */
export interface ToolSchemaView {
  input: JsonSchema;
  output: JsonSchema;
  description: string;
}

/** Finds a non-preset tool: the only kind a preset may stand on. */
export async function resolveBaseTool(db: D1Database, name: string): Promise<BaseTool | null> {
  const mcp = splitMcpToolName(name);
  if (mcp) {
    const [tool, server, combos] = await db.batch([...mcpToolStatements(db, mcp.server, mcp.tool), toolCombosStatement(db, name)]);
    const found = mcpToolOf(tool, server);
    return found ? { kind: "mcp", name, tool: mcpTool(found.server, found.tool), extensions: combosOf(combos), extensionsBy: combosWriterOf(combos) } : null;
  }
  const builtin = BUILTIN_TOOLS.get(name);
  if (builtin) return { kind: "builtin", name, tool: builtin };
  // Both declared kinds and the name's extensions in one round trip; the two kinds' titles never
  // collide (each door refuses the other's).
  const columns = trusted("title, description, spec, created_at, updated_at");
  const httpRead = d1(db)`SELECT ${columns} FROM tool_declarations WHERE title = ${name}`;
  const apiRead = d1(db)`SELECT ${columns} FROM api_tools WHERE title = ${name}`;
  // The combos' read comes as a prepared statement from its own store, so this batch is D1's own.
  const [http, api, combos] = await db.batch([httpRead.prepared(), apiRead.prepared(), toolCombosStatement(db, name)]);
  const [httpRow] = rowsOf(DeclaredToolRow, http.results.slice(0, 1), httpRead.text);
  const [apiRow] = rowsOf(DeclaredToolRow, api.results.slice(0, 1), apiRead.text);
  if (httpRow) return { kind: "http", name, tool: toHttpTool(httpRow), extensions: combosOf(combos), extensionsBy: combosWriterOf(combos) };
  return apiRow ? { kind: "api", name, tool: toApiTool(apiRow), extensions: combosOf(combos), extensionsBy: combosWriterOf(combos) } : null;
}

/** Finds any tool by name (null when none). */
export async function resolveTool(db: D1Database, name: string): Promise<ResolvedTool | null> {
  const base = await resolveBaseTool(db, name);
  if (base) return base;
  const preset = await getRunnablePreset(db, name);
  if (!preset) return null;
  return { kind: "preset", name, version: preset.view.current_version, body: presetBodyOf(preset.view), stored_by: preset.stored_by, holder: preset.holder };
}

function baseSchema(t: BaseTool): ToolSchemaView {
  if (t.kind === "builtin") return { input: t.tool.input_schema, output: t.tool.output_schema, description: t.tool.description };
  if (t.kind === "mcp") return { input: t.tool.input_schema, output: t.tool.output_schema ?? ANY_SCHEMA, description: t.tool.description };
  if (t.kind === "api") return { input: t.tool.input_schema, output: ANY_SCHEMA, description: t.tool.description };
  return { input: t.tool.input_schema ?? ANY_OBJECT_SCHEMA, output: ANY_SCHEMA, description: t.tool.description };
}

/** A preset's schemas: its own where declared, else its base tool's (minus the fixed kwargs). */
function presetSchema(body: PresetBody, base: ToolSchemaView | null): ToolSchemaView {
  const b = base ?? { input: ANY_OBJECT_SCHEMA, output: ANY_SCHEMA, description: "" };
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
  const base = await resolveBaseTool(db, t.body.base_tool);
  return presetSchema(t.body, base ? baseSchema(base) : null);
}

/** Every registered tool's schema view, keyed by name, names sorted. */
export async function allToolSchemas(db: D1Database): Promise<Record<string, ToolSchemaView>> {
  const [https, apis, presets, mcps] = await Promise.all([listHttpTools(db), listApiTools(db), listPresets(db), listMcpTools(db)]);
  const bases = new Map<string, ToolSchemaView>();
  for (const [name, tool] of BUILTIN_TOOLS) bases.set(name, baseSchema({ kind: "builtin", name, tool }));
  for (const tool of apis) bases.set(tool.title, baseSchema({ kind: "api", name: tool.title, tool }));
  // After API tools: should a title ever be both, the HTTP tool is the one resolveBaseTool finds.
  for (const tool of https) bases.set(tool.title, baseSchema({ kind: "http", name: tool.title, tool }));
  for (const t of mcps) bases.set(t.name, { input: t.input_schema, output: t.output_schema ?? ANY_SCHEMA, description: t.description });
  const views = new Map(bases);
  for (const p of presets) views.set(p.name, presetSchema(p, bases.get(p.base_tool) ?? null));
  const out: Record<string, ToolSchemaView> = {};
  for (const [name, view] of [...views].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0))) out[name] = view;
  return out;
}

/** Every registered tool name, sorted. */
export async function listToolNames(db: D1Database): Promise<string[]> {
  return Object.keys(await allToolSchemas(db));
}
