/**
 * Calling one MCP tool (`tools/call`) for the dispatcher, and mapping its result (docs/mcp.md
 * "Results"): `structuredContent` is the value when present; otherwise text-only content is its
 * text (items joined by a newline); any other content is `{content: [...]}` as the server sent
 * it. `isError: true` is a tool failure whose message names the tool, never the server's text
 * (it may echo the arguments), like an HTTP tool's failed answer.
 */
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { checkJsonBounds } from "../platform/http/bounded-json";
import { MAX_RESPONSE_BYTES } from "../outbound/fetch";
import { type McpContext, type McpFailureKind, withMcpSession } from "./client";
import type { McpServerSpec } from "./declarations";

export type McpCallResult = { ok: true; value: unknown } | { ok: false; kind: McpFailureKind | "tool_error"; message: string };

/** The value of a successful call's result, or why it is a failure (pure). */
export function mapCallResult(name: string, r: CallToolResult): McpCallResult {
  if (r.isError === true) return { ok: false, kind: "tool_error", message: `MCP tool ${name} answered an error` };
  let value: unknown;
  if (r.structuredContent !== undefined && r.structuredContent !== null) value = r.structuredContent;
  else if (r.content.every((c) => c.type === "text")) value = r.content.map((c) => (c.type === "text" ? c.text : "")).join("\n");
  else value = { content: r.content };
  // The value feeds jq, memory and records: the same bound as every tool answer.
  const broken = checkJsonBounds(value, MAX_RESPONSE_BYTES);
  if (broken) return { ok: false, kind: "tool_error", message: `MCP tool ${name} answered a result out of bounds: ${broken}` };
  return { ok: true, value };
}

/** Calls `remoteName` on the server with `kwargs` under `timeoutMs` (the whole session). */
export async function callMcpTool(
  ctx: McpContext,
  server: { title: string; spec: McpServerSpec },
  remoteName: string,
  registeredName: string,
  kwargs: Record<string, unknown>,
  timeoutMs: number,
): Promise<McpCallResult> {
  const r = await withMcpSession(ctx, server, timeoutMs, (client, options) => client.callTool({ name: remoteName, arguments: kwargs }, undefined, options));
  if (!r.ok) return r;
  return mapCallResult(registeredName, r.value as CallToolResult);
}
