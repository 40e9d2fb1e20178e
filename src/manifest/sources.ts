/**
 * `POST /api/tools/remove` (docs/manifest.md "Removing a tool source"): removes the declaration a
 * registered tool comes from. The kinds it acts on are the declared sources: an HTTP tool, an API
 * tool, an MCP server (all its tools), or one MCP tool (`<server>.<tool>`: added to the server's
 * `exclude`, so it stays away across reloads). Built-ins cannot be removed (409); presets have
 * their own door (409 naming it). A name that is both an HTTP or API tool and an MCP server's
 * title needs `kind` (409 without it).
 */
import { z } from "zod";
import { HttpError, conflict, notFound } from "../platform/http/errors";
import { splitMcpToolName } from "../shared/tool-names";
import { deleteMcpServer, excludeMcpTool, getMcpServer, getMcpTool } from "../mcp/store";
import { getPreset } from "../targets/presets/store";
import { isBuiltinTool } from "../targets/tools/builtins";
import { deleteHttpTool, getHttpTool } from "../targets/tools/http-tools";
import { deleteApiTool, getApiTool } from "../targets/tools/api-tool-store";
import { must } from "../platform/must";

export const SOURCE_KINDS = ["http_tool", "api_tool", "mcp_server", "mcp_tool"] as const;
export type SourceKind = (typeof SOURCE_KINDS)[number];

export const RemoveSourceBody = z
  .object({
    name: z
      .string()
      .min(1)
      .max(64)
      .regex(/^[A-Za-z0-9_.-]+$/, { message: "must be a tool name, an MCP server's title or <server>.<tool>" }),
    kind: z.enum(SOURCE_KINDS).optional(),
  })
  .strict();
export type RemoveSourceBody = z.infer<typeof RemoveSourceBody>;

export const RemovedSource = z.object({ removed: z.literal(true), name: z.string(), kind: z.enum(SOURCE_KINDS) });
export type RemovedSource = z.infer<typeof RemovedSource>;

/** Which kinds of source `name` names now (an MCP tool name is only ever an MCP tool). */
async function kindsOf(db: D1Database, name: string): Promise<SourceKind[]> {
  const mcp = splitMcpToolName(name);
  if (mcp) return (await getMcpTool(db, mcp.server, mcp.tool)) ? ["mcp_tool"] : [];
  const [http, api, server] = await Promise.all([getHttpTool(db, name), getApiTool(db, name), getMcpServer(db, name)]);
  const kinds: SourceKind[] = [];
  if (http) kinds.push("http_tool");
  if (api) kinds.push("api_tool");
  if (server) kinds.push("mcp_server");
  return kinds;
}

export async function removeToolSource(db: D1Database, body: RemoveSourceBody, nowIso: string): Promise<RemovedSource> {
  if (isBuiltinTool(body.name)) throw conflict("built-in tools cannot be removed");
  const kinds = await kindsOf(db, body.name);
  let kind = body.kind;
  if (kind === undefined) {
    if (kinds.length > 1) throw conflict(`the name is ${kinds.join(" and ")}; say which with kind`);
    kind = kinds[0];
  }
  if (kind === undefined || !kinds.includes(kind)) {
    if (!splitMcpToolName(body.name) && (await getPreset(db, body.name))) throw conflict("presets are removed with DELETE /api/presets/{name}");
    throw notFound("no tool source has this name");
  }
  if (kind === "http_tool") await deleteHttpTool(db, body.name);
  else if (kind === "api_tool") await deleteApiTool(db, body.name);
  else if (kind === "mcp_server") await deleteMcpServer(db, body.name);
  else {
    const { server, tool } = must(splitMcpToolName(body.name), "the server and tool of an mcp_tool name");
    const record = await getMcpServer(db, server);
    if (!record) throw new HttpError(404, "no tool source has this name");
    await excludeMcpTool(db, record, tool, nowIso);
  }
  return { removed: true, name: body.name, kind };
}
