/**
 * Serving a sub-MCP app (docs/mcp.md "Sub-MCP endpoints") with the SDK's own server side: a
 * low-level `Server` and the web-standard Streamable HTTP transport, stateless (a fresh pair per
 * request, no session id) and answering JSON rather than SSE, which suits a Worker.
 *
 * The caller is the api key that authenticated the request (x-api-key or Bearer). `tools/list`
 * lists the app's tools that are registered now AND that the caller may run (its `tool:<name>`,
 * `tools:write` or `*` grants, bounded by its owner, and its conditions), so a client never sees a
 * tool it would be refused. `tools/call` checks the same again and then runs the tool through the
 * one dispatcher, traced as a direct tool run of the caller. A tool outside the app, unregistered
 * or not granted is the same "unknown tool" error, so the endpoint does not reveal which. A tool
 * the app's writer may no longer run is left out the same way (src/access-control/stored-by.ts).
 */
import { Server } from "@modelcontextprotocol/sdk/server/index.js";
import { WebStandardStreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js";
import { CallToolRequestSchema, type CallToolResult, ErrorCode, ListToolsRequestSchema, McpError, type Tool } from "@modelcontextprotocol/sdk/types.js";
import { CfWorkerJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/cfworker";
import { type Principal, principalConditionsAllow, principalGrantsRun } from "../access-control/principal";
import type { Env } from "../platform/env";
import type { JsonValue } from "../platform/http/bounded-json";
import { CLIENT_INFO } from "../mcp/client";
import { tracedDirectRun } from "../observability/runs/direct";
import { type DispatchResult, type TargetContext, dispatchTool } from "../targets/dispatch";
import { allToolSchemas } from "../targets/tools/registry";
import { storedByRefusal } from "../access-control/stored-by";
import type { ServedApp, SubMcpApp } from "./store";

export interface SubMcpRequest {
  env: Env;
  ctx: TargetContext;
  app: SubMcpApp;
  /** Who declared the app, read with it: a tool is served only while that key may run it. */
  writer: Pick<ServedApp, "stored_by" | "holder">;
  principal: Principal;
  request: { method: string; path: string };
  waitUntil?: (p: Promise<unknown>) => void;
}

/** Does the app's writer still let it serve `name`, and the caller's key let it run `name` now (grants and conditions)? */
async function mayRun(r: SubMcpRequest, name: string): Promise<boolean> {
  if (storedByRefusal(r.writer.stored_by, r.writer.holder, [{ kind: "tool", name }]) !== null) return false;
  if (!principalGrantsRun(r.principal, "tool", name)) return false;
  return principalConditionsAllow(r.principal, r.ctx.now(), r.request);
}

/** The tools/list answer: the app's registered tools the caller may run, in the app's order. */
export async function listedTools(r: SubMcpRequest): Promise<Tool[]> {
  const schemas = await allToolSchemas(r.ctx.db);
  const out: Tool[] = [];
  for (const name of r.app.tools) {
    const view = schemas[name];
    if (!view || !(await mayRun(r, name))) continue;
    // MCP requires an object schema at the root; a tool's input schema always describes its kwargs object.
    const input = { ...view.input, type: "object" } as Tool["inputSchema"];
    out.push({ name, description: view.description, inputSchema: input });
  }
  return out;
}

/** A dispatch's answer as an MCP tool result (pure; exported for its unit tests). */
export function toCallResult(r: DispatchResult): CallToolResult {
  if (!r.ok) return { isError: true, content: [{ type: "text", text: r.message }] };
  const v = r.value;
  if (typeof v === "string") return { content: [{ type: "text", text: v }] };
  const text = JSON.stringify(v ?? null);
  const structured = typeof v === "object" && v !== null && !Array.isArray(v) ? { structuredContent: v as Record<string, unknown> } : {};
  return { content: [{ type: "text", text }], ...structured };
}

const unknownTool = () => new McpError(ErrorCode.InvalidParams, "unknown tool");

async function callTool(r: SubMcpRequest, name: string, args: Record<string, unknown>): Promise<CallToolResult> {
  if (!r.app.tools.includes(name) || !(await mayRun(r, name))) throw unknownTool();
  const result = await tracedDirectRun(
    r.env,
    r.ctx,
    { kind: "tool_run", target: { kind: "tool", name }, caller: r.principal.key.user_id, input: args as JsonValue },
    // The calling key scopes what the call may share (the cache): never another caller's result.
    () => dispatchTool(r.ctx, name, args, { caller: { user_id: r.principal.key.user_id, fingerprint: r.principal.key.key_fingerprint } }),
    (done) => done.value as JsonValue,
    r.waitUntil,
  );
  if (!result.ok && result.kind === "unknown_tool") throw unknownTool();
  return toCallResult(result);
}

/** The transport's error answers without their `data` (it may carry an exception's text) or echoed header values. */
async function scrubbed(res: Response): Promise<Response> {
  if (res.status < 400 || !(res.headers.get("content-type") ?? "").includes("application/json")) return res;
  let body: { jsonrpc?: unknown; id?: unknown; error?: { code?: unknown; message?: unknown } };
  try {
    body = await res.json();
  } catch {
    return new Response(null, { status: res.status, headers: res.headers });
  }
  const code = typeof body.error?.code === "number" ? body.error.code : ErrorCode.InternalError;
  let message = typeof body.error?.message === "string" ? body.error.message : "error";
  if (message.startsWith("Bad Request: Unsupported protocol version")) message = "Bad Request: Unsupported protocol version";
  const headers = new Headers(res.headers);
  headers.delete("content-length");
  return new Response(JSON.stringify({ jsonrpc: "2.0", error: { code, message }, id: body.id ?? null }), { status: res.status, headers });
}

/** Answers one HTTP request to the app's endpoint (`raw` is the already-read body). */
export async function serveSubMcp(r: SubMcpRequest, req: Request, raw: Uint8Array): Promise<Response> {
  const server = new Server(
    { name: `sub-mcp:${r.app.slug}`, version: CLIENT_INFO.version },
    { capabilities: { tools: {} }, jsonSchemaValidator: new CfWorkerJsonSchemaValidator() },
  );
  server.setRequestHandler(ListToolsRequestSchema, async () => ({ tools: await listedTools(r) }));
  server.setRequestHandler(CallToolRequestSchema, async (call) => callTool(r, call.params.name, (call.params.arguments ?? {}) as Record<string, unknown>));
  const transport = new WebStandardStreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
  await server.connect(transport);
  try {
    const copy = new Request(req.url, { method: req.method, headers: req.headers, body: raw.byteLength ? raw : null });
    return await scrubbed(await transport.handleRequest(copy));
  } finally {
    await server.close().catch(() => undefined);
  }
}
