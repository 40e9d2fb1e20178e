/**
 * Tool doors (decisions §4): registry reads, HTTP tool declarations, admin run-tool, and the tool
 * sources' reload and remove (docs/mcp.md, docs/manifest.md).
 */
import { Hono } from "hono";
import { z } from "zod";
import type { AppEnv } from "../../platform/http/app-env";
import { MAX_BODY_BYTES } from "../../platform/http/body";
import { type JsonValue, boundedJsonObject } from "../../platform/http/bounded-json";
import { type HttpError, type ServerErrorCode, badRequest, notFound, serverError } from "../../platform/http/errors";
import { addRoute } from "../../platform/http/route";
import { waitUntilOf } from "../../platform/http/wait-until";
import { RemoveSourceBody, RemovedSource, removeToolSource } from "../../manifest/sources";
import { StatusList, reloadAll, reloadServer } from "../../mcp/config";
import { mcpTitleSchema } from "../../mcp/declarations";
import { toolNameSchema } from "../../shared/tool-names";
import { tracedDirectRun } from "../../observability/runs/direct";
import { type DispatchFailureKind, type DispatchResult, createTargetContext, dispatchTool } from "../dispatch";
import { targetNameSchema } from "../../shared/target-names";
import { checkHttpToolDeclaration, deleteHttpTool, httpToolDeclarationSchema, httpToolViewSchema, httpToolView, upsertHttpTool } from "../tools/http-tools";
import { allToolSchemas, listToolNames, toolSchema } from "../tools/registry";
import { ToolTags } from "../../tool-meta/model";
import { toolTags } from "../../tool-meta/views";

export const toolsRouter = new Hono<AppEnv>();

const schemaView = z.object({
  input: z.record(z.string(), z.unknown()),
  output: z.record(z.string(), z.unknown()),
  description: z.string(),
});

/** The 500's code of each dispatch failure the run-tool door answers. */
const DISPATCH_FAILURE_CODES = {
  denied: "tool-denied",
  timeout: "tool-timeout",
  transport: "tool-transport",
  http_status: "tool-http-status",
  non_json: "tool-non-json",
  tool_error: "tool-error",
} as const satisfies Record<Exclude<DispatchFailureKind, "unknown_tool" | "invalid_kwargs">, ServerErrorCode>;

/** Maps a failed dispatch to the run-tool answer: 404 unknown, 400 bad kwargs, else 500 with a
 * `tool-<kind>` code; the message is the dispatcher's, which never carries values or secrets. */
export function dispatchFailureStatus(r: Extract<DispatchResult, { ok: false }>): HttpError {
  if (r.kind === "unknown_tool") return notFound("tool not found");
  if (r.kind === "invalid_kwargs") return badRequest(r.message);
  return serverError(DISPATCH_FAILURE_CODES[r.kind], r.message);
}

addRoute(
  toolsRouter,
  {
    method: "get",
    path: "/api/tools",
    summary: "List every registered tool name (built-ins, declared HTTP tools, presets), sorted",
    area: "tools",
    auth: { tag: "tools" },
    response: z.array(z.string()),
  },
  (c) => listToolNames(c.env.DB),
);

addRoute(
  toolsRouter,
  {
    method: "get",
    path: "/api/tools/tags",
    summary: "Every registered tool with its tags, badges and hidden flag",
    description:
      "`[{name, tags, hidden, badges}]`, sorted by name, from the tool metadata overlay (docs/tool-metadata.md): a tool without a row, or every tool while TOOL_META_STORE_URL is unset, shows `tags: []`, `badges: []`, `hidden: null` (the default: shown).",
    area: "tools",
    auth: { tag: "tools" },
    response: z.array(ToolTags),
  },
  (c) => toolTags(c.env.DB, c.get("settings").toolMeta.storeUrl !== null),
);

addRoute(
  toolsRouter,
  {
    method: "get",
    path: "/api/tools/{tool_name}/schema",
    summary: "A tool's input and output JSON Schemas and description",
    area: "tools",
    auth: { tag: "tools" },
    params: z.object({ tool_name: toolNameSchema }),
    response: schemaView,
    errors: [404],
  },
  async (c, { params }) => {
    const view = await toolSchema(c.env.DB, params.tool_name);
    if (!view) throw notFound("tool not found");
    return view;
  },
);

addRoute(
  toolsRouter,
  {
    method: "get",
    path: "/api/tools-schema",
    summary: "Every registered tool's schemas, keyed by tool name",
    area: "tools",
    auth: { tag: "tools" },
    response: z.record(z.string(), schemaView),
  },
  (c) => allToolSchemas(c.env.DB),
);

addRoute(
  toolsRouter,
  {
    method: "post",
    path: "/api/run-tool",
    links: "mint",
    summary: "Run a tool synchronously (admin)",
    description:
      "Answers the tool's result as `data`. Unknown tool 404; kwargs failing the input schema 400 (the message names locations, never values); any other failure 500 with the dispatcher's message and code `tool-<kind>` (tool-timeout, tool-transport, tool-http-status, tool-non-json, tool-error).",
    area: "tools",
    auth: { tag: "tools", admin: true },
    body: z.object({ tool_name: toolNameSchema, arguments: boundedJsonObject(MAX_BODY_BYTES).default({}) }).strict(),
    response: z.unknown(),
    errors: [404],
  },
  async (c, { body, principal: p }) => {
    const ctx = createTargetContext(c.env, c.get("settings"));
    // The run's trace: a direct tool run of the calling key, recorded in the background.
    const r = await tracedDirectRun(
      c.env,
      ctx,
      { kind: "tool_run", target: { kind: "tool", name: body.tool_name }, caller: p.key.user_id, input: body.arguments as JsonValue },
      // The calling key scopes what the call may share (the cache): never another admin's result.
      () => dispatchTool(ctx, body.tool_name, body.arguments, { caller: { user_id: p.key.user_id, fingerprint: p.key.key_fingerprint } }),
      (done) => done.value as JsonValue,
      waitUntilOf(c),
    );
    if (!r.ok) throw dispatchFailureStatus(r);
    return r.value;
  },
);

addRoute(
  toolsRouter,
  {
    method: "post",
    path: "/api/tools-config/entries",
    summary: "Declare (create or replace) an HTTP tool (admin)",
    description:
      'Header values are literal strings or {"env": "VAR"} references resolved at each dispatch. Reads never show a literal header value ("<redacted>") nor a resolved secret. A title that names a built-in tool or a preset is 409. Admin only, because a declaration can send env secrets to any URL. `url` passes the outbound address guard (private and local hosts are 400 unless OUTBOUND_ALLOW_PRIVATE_HOSTS=true); env references must name SECRET_* or a SECRET_REFERENCE_ALLOWLIST entry (else 400).',
    area: "tools",
    auth: { tag: "tools", admin: true },
    stores: [{ kind: "url", at: "url" }],
    body: httpToolDeclarationSchema,
    response: z.object({ created: z.boolean(), tool: httpToolViewSchema }),
    errors: [409],
  },
  async (c, { body }) => {
    const settings = c.get("settings");
    checkHttpToolDeclaration(body, settings, c.env);
    const { created, tool } = await upsertHttpTool(c.env.DB, body, new Date().toISOString(), settings.connectors.providers);
    return { created, tool: httpToolView(tool) };
  },
);

addRoute(
  toolsRouter,
  {
    method: "delete",
    path: "/api/tools-config/entries/{title}",
    summary: "Remove a declared HTTP tool (admin)",
    description: "Unknown title 404; a built-in tool 409. Presets standing on the tool stay and fail at dispatch until re-pointed.",
    area: "tools",
    auth: { tag: "tools", admin: true },
    params: z.object({ title: targetNameSchema }),
    response: z.object({ removed: z.literal(true), title: z.string() }),
    errors: [404, 409],
  },
  async (c, { params }) => {
    await deleteHttpTool(c.env.DB, params.title);
    return { removed: true as const, title: params.title };
  },
);

addRoute(
  toolsRouter,
  {
    method: "post",
    path: "/api/tools/reload",
    summary: "Re-list the MCP servers' tools (every server, or one)",
    description:
      "Body optional: `{server?: title}`. Lists each declared MCP server again (a deregistered one registers again) and answers their statuses `{items, total}` as GET /api/mcp-status does; an unknown server is 404. Built-ins, HTTP tools, API tools and presets are read from D1 at every lookup, so they need no reload.",
    area: "tools",
    auth: { tag: "tools" },
    body: z.object({ server: mcpTitleSchema.optional() }).strict(),
    bodyOptional: true,
    response: StatusList,
    errors: [404],
  },
  async (c, { body }) => {
    const ctx = createTargetContext(c.env, c.get("settings"));
    if (body.server === undefined) return reloadAll(ctx);
    return { items: [await reloadServer(ctx, body.server)], total: 1 };
  },
);

addRoute(
  toolsRouter,
  {
    method: "post",
    path: "/api/tools/remove",
    summary: "Remove a tool source (admin)",
    description:
      "`{name, kind?}` removes what the tool comes from: an HTTP tool (`http_tool`), an API tool (`api_tool`), an MCP server with all its tools (`mcp_server`, by title), or one MCP tool (`mcp_tool`, `<server>.<tool>`: added to the server's `exclude` so reloads keep it away). `kind` is needed only when a name is both an HTTP or API tool and an MCP server (409 without it). A built-in or a preset is 409; an unknown name 404.",
    area: "tools",
    auth: { tag: "tools", admin: true },
    body: RemoveSourceBody,
    response: RemovedSource,
    errors: [404, 409],
  },
  (c, { body }) => removeToolSource(c.env.DB, body, new Date().toISOString()),
);
