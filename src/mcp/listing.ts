/**
 * Listing a server's tools (`tools/list`, every page) and registering them (docs/mcp.md "Listing
 * and status"). Runs at declaration, at reload and at reload-failed; the outcome is written with
 * the revision it listed (src/mcp/store.ts), so a listing that ends after a newer declaration
 * writes nothing.
 *
 * A remote tool registers as `<server>.<tool>` when the declaration's include/exclude admit it,
 * its name fits the registry (src/shared/tool-names.ts) and its `inputSchema` is a usable JSON Schema by
 * the same rules as a declared tool's (bounded, RE2 patterns, known types). Others are reported
 * as skipped with the reason, never silently dropped.
 */
import type { Tool } from "@modelcontextprotocol/sdk/types.js";
import { z } from "zod";
import { inputSchemaSchema, jsonSchemaSchema, type JsonSchema } from "../platform/json-schema";
import { type McpContext, withMcpSession } from "./client";
import { admitsTool } from "./declarations";
import { remoteNameRefusal } from "../shared/tool-names";
import {
  type ListingOutcome,
  MAX_LISTING_BYTES,
  type McpServerRecord,
  type McpStatus,
  type SkippedTool,
  getMcpServer,
  toolNamesByServer,
  writeListing,
} from "./store";

/** Pages of `tools/list` one listing follows at most. */
export const MAX_LIST_PAGES = 20;
/** Skipped tools a status reports at most (the count beyond is summarised). */
export const MAX_SKIPPED_REPORTED = 100;
const MAX_DESCRIPTION = 4096;

type Registered = Extract<ListingOutcome, { ok: true }>["tools"][number];

function skippedName(name: unknown): string {
  const s = typeof name === "string" ? name : "(unnamed)";
  return s.length > 128 ? `${s.slice(0, 125)}...` : s;
}

/** Which listed tools register and which are skipped (pure; exported for its unit tests). */
export function selectTools(
  server: string,
  spec: { include: string[]; exclude: string[] },
  listed: Tool[],
  maxTools: number,
): { tools: Registered[]; skipped: SkippedTool[] } {
  const tools: Registered[] = [];
  const skipped: SkippedTool[] = [];
  const seen = new Set<string>();
  let bytes = 2;
  for (const t of listed) {
    if (!admitsTool(spec, t.name)) continue;
    const refusal = seen.has(t.name) ? "the server listed the name twice" : remoteNameRefusal(server, t.name);
    if (refusal) {
      skipped.push({ name: skippedName(t.name), reason: refusal });
      continue;
    }
    seen.add(t.name);
    const input = inputSchemaSchema.safeParse(t.inputSchema);
    if (!input.success) {
      skipped.push({ name: t.name, reason: `its inputSchema ${input.error.issues[0]?.message ?? "is not usable"}` });
      continue;
    }
    if (tools.length >= maxTools) {
      skipped.push({ name: t.name, reason: "over MCP_MAX_TOOLS_PER_SERVER" });
      continue;
    }
    // An output schema is shown by the schema doors only; an unusable one is left out, not fatal.
    const output = t.outputSchema === undefined ? null : jsonSchemaSchema.safeParse(t.outputSchema);
    const description = (t.description ?? t.title ?? "").slice(0, MAX_DESCRIPTION);
    const tool: Registered = {
      remote_name: t.name,
      description,
      input_schema: input.data as JsonSchema,
      output_schema: output?.success ? (output.data as JsonSchema) : null,
    };
    const size = JSON.stringify(tool).length + 1;
    if (bytes + size > MAX_LISTING_BYTES) {
      skipped.push({ name: t.name, reason: "the listing is over the stored size bound" });
      continue;
    }
    bytes += size;
    tools.push(tool);
  }
  if (skipped.length > MAX_SKIPPED_REPORTED) {
    const more = skipped.length - MAX_SKIPPED_REPORTED + 1;
    skipped.splice(MAX_SKIPPED_REPORTED - 1, skipped.length, { name: "...", reason: `${more} more tools skipped` });
  }
  return { tools, skipped };
}

/** Lists the server's tools (every page, under MCP_LIST_TIMEOUT_SECONDS) into a listing outcome. */
export async function listServer(ctx: McpContext, server: McpServerRecord): Promise<ListingOutcome> {
  const ms = ctx.settings.mcp.listTimeoutSeconds * 1000;
  const r = await withMcpSession(ctx, server, ms, async (client, options) => {
    const listed: Tool[] = [];
    let cursor: string | undefined;
    for (let page = 0; page < MAX_LIST_PAGES; page++) {
      const res = await client.listTools(cursor === undefined ? undefined : { cursor }, options);
      listed.push(...res.tools);
      cursor = res.nextCursor;
      if (!cursor) break;
    }
    const info = client.getServerVersion();
    return { listed, info: info ? { name: String(info.name).slice(0, 256), version: String(info.version).slice(0, 256) } : null };
  });
  if (!r.ok) return { ok: false, error: r.message };
  const { tools, skipped } = selectTools(server.title, server.spec, r.value.listed, ctx.settings.mcp.maxToolsPerServer);
  return { ok: true, tools, skipped, server_info: r.value.info };
}

/** Lists and records one server; answers its status after (null when it was removed meanwhile). */
export async function refreshServer(ctx: McpContext, server: McpServerRecord): Promise<McpStatusView | null> {
  const outcome = await listServer(ctx, server);
  await writeListing(ctx.db, server.title, server.revision, outcome, ctx.now().toISOString());
  return serverStatus(ctx.db, server.title);
}

/** A server's listing state as the status doors show it. */
export const McpStatusView = z.object({
  title: z.string(),
  status: z.enum(["pending", "ok", "failed", "deregistered"]),
  /** Registered names (`<server>.<tool>`), sorted. */
  tools: z.array(z.string()),
  skipped: z.array(z.object({ name: z.string(), reason: z.string() })),
  last_error: z.string().nullable(),
  server: z.object({ name: z.string(), version: z.string() }).nullable(),
  checked_at: z.string().nullable(),
});
export type McpStatusView = z.infer<typeof McpStatusView>;

export function statusView(s: McpServerRecord, tools: string[]): McpStatusView {
  return { title: s.title, status: s.status, tools, skipped: s.skipped, last_error: s.last_error, server: s.server_info, checked_at: s.checked_at };
}

export async function serverStatus(db: D1Database, title: string): Promise<McpStatusView | null> {
  // This server's names only, read alongside its row (not every server's tools after it).
  const [s, names] = await Promise.all([getMcpServer(db, title), toolNamesByServer(db, title)]);
  if (!s) return null;
  return statusView(s, names.get(title) ?? []);
}

/** Every server's status, by title; optionally only those in `only`. */
export function statusViews(servers: McpServerRecord[], names: Map<string, string[]>, only?: McpStatus): McpStatusView[] {
  return servers.filter((s) => only === undefined || s.status === only).map((s) => statusView(s, names.get(s.title) ?? []));
}
