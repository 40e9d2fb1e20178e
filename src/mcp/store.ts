/**
 * MCP servers, their listing state and their registered tools in D1 (migrations/0020_mcp.sql).
 * A (re)declaration bumps the row's `revision`, resets it to `pending` and drops its tools in one
 * batch; a listing writes its outcome only while the revision it listed is still the row's.
 */
import { z } from "zod";
import { assertConnectionsLendable, sentTo } from "../connectors/references";
import type { ProviderDescriptor } from "../platform/settings/connector-settings";
import { notFound } from "../platform/http/errors";
import { type SqlFragment, type Statement, all, batch, d1, exists, first, rowsOf, run, sql, trusted } from "../platform/persistence/d1";
import { parseStored } from "../platform/persistence/stored-json";
import { headerConnections } from "../outbound/env-refs";
import type { JsonSchema } from "../platform/json-schema";
import { type McpServerDeclaration, McpServerSpec, specOf } from "./declarations";
import { mcpToolName } from "../shared/tool-names";

export const MCP_STATUSES = ["pending", "ok", "failed", "deregistered"] as const;
export type McpStatus = (typeof MCP_STATUSES)[number];

export const SkippedTool = z.object({ name: z.string(), reason: z.string() });
export type SkippedTool = z.infer<typeof SkippedTool>;

const ServerInfo = z.object({ name: z.string(), version: z.string() });
export type ServerInfo = z.infer<typeof ServerInfo>;

export interface McpServerRecord {
  title: string;
  description: string;
  spec: McpServerSpec;
  revision: string;
  status: McpStatus;
  last_error: string | null;
  skipped: SkippedTool[];
  server_info: ServerInfo | null;
  checked_at: string | null;
  created_at: string;
  updated_at: string;
}

/** A registered tool of a server, as the registry and the dispatcher use it. */
export interface McpToolRecord {
  server: string;
  /** The server's own name for it. */
  remote_name: string;
  /** `<server>.<remote_name>`. */
  name: string;
  description: string;
  input_schema: JsonSchema;
  output_schema: JsonSchema | null;
}

const ServerRow = z.object({
  title: z.string(),
  description: z.string(),
  spec: z.string(),
  revision: z.string(),
  status: z.string(),
  last_error: z.string().nullable(),
  skipped: z.string(),
  server_info: z.string().nullable(),
  checked_at: z.string().nullable(),
  created_at: z.string(),
  updated_at: z.string(),
});
type ServerRow = z.infer<typeof ServerRow>;

const SERVER_COLUMNS = trusted("title, description, spec, revision, status, last_error, skipped, server_info, checked_at, created_at, updated_at");

function toServer(r: ServerRow): McpServerRecord {
  return {
    title: r.title,
    description: r.description,
    spec: parseStored(McpServerSpec, r.spec, "mcp_servers row"),
    revision: r.revision,
    status: (MCP_STATUSES as readonly string[]).includes(r.status) ? (r.status as McpStatus) : "failed",
    last_error: r.last_error,
    skipped: parseStored(z.array(SkippedTool), r.skipped, "mcp_servers row"),
    server_info: r.server_info === null ? null : parseStored(ServerInfo, r.server_info, "mcp_servers row"),
    checked_at: r.checked_at,
    created_at: r.created_at,
    updated_at: r.updated_at,
  };
}

const ToolRow = z.object({ server: z.string(), name: z.string(), description: z.string(), input_schema: z.string(), output_schema: z.string().nullable() });
type ToolRow = z.infer<typeof ToolRow>;

const ToolNameRow = z.object({ server: z.string(), name: z.string() });

const JsonSchemaObject = z.record(z.string(), z.unknown());

function toTool(r: ToolRow): McpToolRecord {
  return {
    server: r.server,
    remote_name: r.name,
    name: mcpToolName(r.server, r.name),
    description: r.description,
    input_schema: parseStored(JsonSchemaObject, r.input_schema, "mcp_tools row"),
    output_schema: r.output_schema === null ? null : parseStored(JsonSchemaObject, r.output_schema, "mcp_tools row"),
  };
}

export async function getMcpServer(db: D1Database, title: string): Promise<McpServerRecord | null> {
  const r = await first(ServerRow, d1(db)`SELECT ${SERVER_COLUMNS} FROM mcp_servers WHERE title = ${title}`);
  return r ? toServer(r) : null;
}

export async function listMcpServers(db: D1Database): Promise<McpServerRecord[]> {
  return (await all(ServerRow, d1(db)`SELECT ${SERVER_COLUMNS} FROM mcp_servers ORDER BY title`)).map(toServer);
}

/** Registered tool names per server, names sorted; only server `only`'s when given. */
export async function toolNamesByServer(db: D1Database, only?: string): Promise<Map<string, string[]>> {
  const stmt =
    only === undefined
      ? d1(db)`SELECT server, name FROM mcp_tools ORDER BY server, name`
      : d1(db)`SELECT server, name FROM mcp_tools WHERE server = ${only} ORDER BY name`;
  const results = await all(ToolNameRow, stmt);
  const out = new Map<string, string[]>();
  for (const r of results) {
    const names = out.get(r.server);
    if (names) names.push(mcpToolName(r.server, r.name));
    else out.set(r.server, [mcpToolName(r.server, r.name)]);
  }
  return out;
}

/** One registered tool with its server, or null. */
export async function getMcpTool(db: D1Database, server: string, remoteName: string): Promise<{ tool: McpToolRecord; server: McpServerRecord } | null> {
  const [toolRead, serverRead] = mcpToolReads(db, server, remoteName);
  const [tool, srv] = await batch(db, [toolRead, serverRead]);
  return mcpToolOf(tool, srv);
}

/** getMcpTool's two reads (the tool row, its server row), for a caller that batches more with them. */
export function mcpToolStatements(db: D1Database, server: string, remoteName: string): [D1PreparedStatement, D1PreparedStatement] {
  const [tool, srv] = mcpToolReads(db, server, remoteName);
  return [tool.prepared(), srv.prepared()];
}

const toolRead = (server: string, remoteName: string) =>
  sql`SELECT server, name, description, input_schema, output_schema FROM mcp_tools WHERE server = ${server} AND name = ${remoteName}`;
const serverRead = (title: string) => sql`SELECT ${SERVER_COLUMNS} FROM mcp_servers WHERE title = ${title}`;

function mcpToolReads(db: D1Database, server: string, remoteName: string) {
  return [d1(db, toolRead(server, remoteName)), d1(db, serverRead(server))] as const;
}

/** The tool and its server from mcpToolStatements' results; null when either is gone. */
export function mcpToolOf(tool: D1Result, srv: D1Result): { tool: McpToolRecord; server: McpServerRecord } | null {
  const [t] = rowsOf(ToolRow, tool.results.slice(0, 1), toolRead("", "").text);
  const [s] = rowsOf(ServerRow, srv.results.slice(0, 1), serverRead("").text);
  return t && s ? { tool: toTool(t), server: toServer(s) } : null;
}

/** Every registered MCP tool, by name. */
export async function listMcpTools(db: D1Database): Promise<McpToolRecord[]> {
  return (await all(ToolRow, d1(db)`SELECT server, name, description, input_schema, output_schema FROM mcp_tools ORDER BY server, name`)).map(toTool);
}

/**
 * The statements of a (re)declaration: the row's create-or-replace (pending, a new revision; a
 * replaced row keeps its created_at) and the drop of its tools. Used by the entry door, the
 * whole-config door and the manifest's replace, which batch them with their other writes.
 */
export function declareStatements(db: D1Database, d: McpServerDeclaration, revision: string, createdAt: string, updatedAt: string): Statement[] {
  return [
    d1(db)`INSERT INTO mcp_servers (title, description, spec, revision, status, last_error, skipped, server_info, checked_at, created_at, updated_at)
         VALUES (${d.title}, ${d.description}, ${JSON.stringify(specOf(d))}, ${revision}, 'pending', NULL, '[]', NULL, NULL, ${createdAt}, ${updatedAt})
         ON CONFLICT(title) DO UPDATE SET description = excluded.description, spec = excluded.spec, revision = excluded.revision,
           status = 'pending', last_error = NULL, skipped = '[]', server_info = NULL, checked_at = NULL, updated_at = excluded.updated_at`,
    d1(db)`DELETE FROM mcp_tools WHERE server = ${d.title}`,
  ];
}

export function newRevision(): string {
  return crypto.randomUUID();
}

/**
 * Creates or replaces a declaration (pending until listed); a `{"connection"}` header naming no
 * connection, or one whose provider does not lend its tokens to `config.url`'s origin, is 400.
 */
export async function upsertMcpServer(
  db: D1Database,
  d: McpServerDeclaration,
  nowIso: string,
  providers: readonly ProviderDescriptor[],
): Promise<{ created: boolean; server: McpServerRecord }> {
  await assertConnectionsLendable(db, providers, sentTo(headerConnections(d.config.headers, "config.headers"), d.config.url));
  const existed = await exists(d1(db)`SELECT 1 AS one FROM mcp_servers WHERE title = ${d.title}`);
  await batch(db, declareStatements(db, d, newRevision(), nowIso, nowIso));
  const server = await getMcpServer(db, d.title);
  // Removed meanwhile by another request: the declaration is gone, as that request asked.
  if (!server) throw notFound("mcp server not found");
  return { created: !existed, server };
}

export function deleteServerStatement(db: D1Database, title: string): Statement {
  return d1(db)`DELETE FROM mcp_servers WHERE title = ${title}`;
}

/** Removes a declaration and its tools; an unknown title is 404. */
export async function deleteMcpServer(db: D1Database, title: string): Promise<void> {
  const meta = await run(deleteServerStatement(db, title));
  if ((meta.changes ?? 0) === 0) throw notFound("mcp server not found");
}

/** A listing's outcome, written only while `revision` is still the row's. */
export type ListingOutcome =
  | { ok: true; tools: Array<Omit<McpToolRecord, "server" | "name">>; skipped: SkippedTool[]; server_info: ServerInfo | null }
  | { ok: false; error: string };

/** Largest JSON text of one listing's tools written in one statement (D1 caps a value at 2 MB). */
export const MAX_LISTING_BYTES = 1_500_000;

/** Writes a listing's outcome; false when the row moved on (re-declared or removed) meanwhile. */
export async function writeListing(db: D1Database, title: string, revision: string, outcome: ListingOutcome, nowIso: string): Promise<boolean> {
  const current: SqlFragment = sql`EXISTS (SELECT 1 FROM mcp_servers WHERE title = ${title} AND revision = ${revision})`;
  if (!outcome.ok) {
    // A failed listing keeps the last good tools: a server that is down for a moment does not
    // unregister tools that routes and agents name (calls fail meanwhile, as the server does).
    const meta = await run(
      d1(db)`UPDATE mcp_servers SET status = 'failed', last_error = ${outcome.error}, checked_at = ${nowIso} WHERE title = ${title} AND revision = ${revision}`,
    );
    return (meta.changes ?? 0) > 0;
  }
  const rows = JSON.stringify(
    outcome.tools.map((t) => ({
      name: t.remote_name,
      description: t.description,
      input_schema: JSON.stringify(t.input_schema),
      output_schema: t.output_schema === null ? null : JSON.stringify(t.output_schema),
    })),
  );
  const serverInfo = outcome.server_info === null ? null : JSON.stringify(outcome.server_info);
  const [update] = await batch(db, [
    d1(
      db,
    )`UPDATE mcp_servers SET status = 'ok', last_error = NULL, skipped = ${JSON.stringify(outcome.skipped)}, server_info = ${serverInfo}, checked_at = ${nowIso}
       WHERE title = ${title} AND revision = ${revision}`,
    d1(db)`DELETE FROM mcp_tools WHERE server = ${title} AND ${current}`,
    d1(db)`INSERT INTO mcp_tools (server, name, description, input_schema, output_schema)
         SELECT ${title}, j.value ->> 'name', j.value ->> 'description', j.value ->> 'input_schema', j.value ->> 'output_schema'
         FROM json_each(${rows}) AS j WHERE ${current}`,
  ]);
  return (update.meta.changes ?? 0) > 0;
}

/** Deregisters a server's tools until its next reload; false for an unknown title. */
export async function deregisterMcpServer(db: D1Database, title: string, nowIso: string): Promise<boolean> {
  const [update] = await batch(db, [
    d1(db)`UPDATE mcp_servers SET status = 'deregistered', last_error = NULL, checked_at = ${nowIso} WHERE title = ${title}`,
    d1(db)`DELETE FROM mcp_tools WHERE server = ${title}`,
  ]);
  return (update.meta.changes ?? 0) > 0;
}

/** Adds a remote tool name to a server's `exclude` list and unregisters that tool (tools/remove). */
export async function excludeMcpTool(db: D1Database, server: McpServerRecord, remoteName: string, nowIso: string): Promise<void> {
  const spec: McpServerSpec = {
    ...server.spec,
    exclude: [...new Set([...server.spec.exclude, remoteName])],
    include: server.spec.include.filter((n) => n !== remoteName),
  };
  await batch(db, [
    // Only while the declaration is the one read, so a concurrent re-declaration is not overwritten.
    d1(db)`UPDATE mcp_servers SET spec = ${JSON.stringify(spec)}, updated_at = ${nowIso} WHERE title = ${server.title} AND revision = ${server.revision}`,
    d1(db)`DELETE FROM mcp_tools WHERE server = ${server.title} AND name = ${remoteName}`,
  ]);
}
