/**
 * The MCP config operations behind the doors (docs/mcp.md): declare one server, replace them all,
 * reload (one, every one, the failed ones) and deregister. Each declaration is written first and
 * listed after, so a server that is down is still declared (status `failed`) and a reload lists it
 * again later.
 */
import { z } from "zod";
import { assertConnectionsLendable, sentTo } from "../connectors/references";
import type { EnvVars } from "../platform/env";
import { badRequest, notFound } from "../platform/http/errors";
import { type Statement, batch, d1, first } from "../platform/persistence/d1";
import type { Settings } from "../platform/settings/settings";
import { headerConnections } from "../outbound/env-refs";
import type { McpContext } from "./client";
import { McpServerDeclaration, McpServerView, checkMcpDeclaration, mcpServerView, specOf } from "./declarations";
import { McpStatusView, refreshServer, serverStatus, statusViews } from "./listing";
import {
  type McpServerRecord,
  type McpStatus,
  declareStatements,
  deleteServerStatement,
  deregisterMcpServer,
  getMcpServer,
  listMcpServers,
  newRevision,
  toolNamesByServer,
  upsertMcpServer,
} from "./store";

/** Servers listed at once by a reload of several (each listing is a few requests of its own). */
export const RELOAD_CONCURRENCY = 4;

/** Most servers one deployment declares (a whole-config replace and a reload touch them all). */
export const MAX_MCP_SERVERS = 100;

/** `POST /api/mcp-config`: the whole MCP config. */
export const McpConfigDocument = z
  .object({
    mcp: z
      .array(McpServerDeclaration)
      .max(MAX_MCP_SERVERS)
      .superRefine((list, ctx) => {
        const seen = new Set<string>();
        list.forEach((d, i) => {
          if (seen.has(d.title)) ctx.addIssue({ code: "custom", path: [i, "title"], message: "repeats another entry's title" });
          seen.add(d.title);
        });
      }),
  })
  .strict();
export type McpConfigDocument = z.infer<typeof McpConfigDocument>;

export const DeclaredServer = z.object({ created: z.boolean(), server: McpServerView, status: McpStatusView });
export type DeclaredServer = z.infer<typeof DeclaredServer>;

export const StatusList = z.object({ items: z.array(McpStatusView), total: z.number().int() });
export type StatusList = z.infer<typeof StatusList>;

/** Runs `work` over `items`, at most `limit` at a time, keeping the order of `items`. */
export async function mapLimited<T, R>(items: readonly T[], limit: number, work: (item: T) => Promise<R>): Promise<R[]> {
  const out = new Array<R>(items.length);
  let next = 0;
  const lanes = Array.from({ length: Math.min(limit, items.length) }, async () => {
    while (next < items.length) {
      const i = next++;
      out[i] = await work(items[i]);
    }
  });
  await Promise.all(lanes);
  return out;
}

const RoomRow = z.object({ n: z.number(), same: z.number().nullable() });

/** A declaration refused when the deployment holds MAX_MCP_SERVERS others already. */
async function assertRoomFor(db: D1Database, title: string): Promise<void> {
  const row = await first(RoomRow, d1(db)`SELECT COUNT(*) AS n, SUM(title = ${title}) AS same FROM mcp_servers`);
  if (row && !row.same && row.n >= MAX_MCP_SERVERS) throw badRequest(`at most ${MAX_MCP_SERVERS} MCP servers may be declared; remove one first`);
}

/** `POST /api/mcp-config/entries`: declares (or re-declares) one server, then lists it. */
export async function declareServer(ctx: McpContext, d: McpServerDeclaration): Promise<DeclaredServer> {
  checkMcpDeclaration(d, ctx.settings, ctx.env);
  await assertRoomFor(ctx.db, d.title);
  const { created, server } = await upsertMcpServer(ctx.db, d, ctx.now().toISOString(), ctx.settings.connectors.providers);
  const status = (await refreshServer(ctx, server)) ?? (await pendingStatus(ctx.db, server));
  return { created, server: mcpServerView(server), status };
}

async function pendingStatus(db: D1Database, s: McpServerRecord): Promise<McpStatusView> {
  return (await serverStatus(db, s.title)) ?? { title: s.title, status: "pending", tools: [], skipped: [], last_error: null, server: null, checked_at: null };
}

/** Checks every entry of a whole MCP config (the settings-bound checks and the connections). */
export async function checkMcpEntries(db: D1Database, list: McpServerDeclaration[], settings: Settings, env: EnvVars, field: string): Promise<void> {
  list.forEach((d, i) => checkMcpDeclaration(d, settings, env, `${field}[${i}].`));
  await assertConnectionsLendable(
    db,
    settings.connectors.providers,
    list.flatMap((d, i) => sentTo(headerConnections(d.config.headers, `${field}[${i}].config.headers`), d.config.url)),
  );
}

/** Does `d` differ from the stored declaration (or is there none)? An identical one keeps its listing. */
export function mcpEntryChanged(stored: McpServerRecord | undefined, d: McpServerDeclaration): boolean {
  return !stored || stored.description !== d.description || JSON.stringify(stored.spec) !== JSON.stringify(specOf(d));
}

/**
 * The statements that make the declared servers exactly `list`: servers not in it are removed
 * (their tools with them), new and changed ones are (re)declared pending, identical ones are left
 * as they are. Batched by the caller.
 */
export function replaceMcpStatements(db: D1Database, current: readonly McpServerRecord[], list: McpServerDeclaration[], nowIso: string): D1PreparedStatement[] {
  return replaceMcpWrites(db, current, list, nowIso).map((s) => s.prepared());
}

function replaceMcpWrites(db: D1Database, current: readonly McpServerRecord[], list: McpServerDeclaration[], nowIso: string): Statement[] {
  const keep = new Set(list.map((d) => d.title));
  const stored = new Map(current.map((s) => [s.title, s]));
  return [
    ...current.filter((s) => !keep.has(s.title)).map((s) => deleteServerStatement(db, s.title)),
    ...list.filter((d) => mcpEntryChanged(stored.get(d.title), d)).flatMap((d) => declareStatements(db, d, newRevision(), nowIso, nowIso)),
  ];
}

/** `POST /api/mcp-config`: the declared servers become exactly the document's, in one batch; each is then listed. */
export async function replaceMcpConfig(
  ctx: McpContext,
  doc: McpConfigDocument,
): Promise<{ servers: McpServerView[]; status: McpStatusView[]; removed: string[] }> {
  await checkMcpEntries(ctx.db, doc.mcp, ctx.settings, ctx.env, "mcp");
  const current = await listMcpServers(ctx.db);
  await batch(ctx.db, replaceMcpWrites(ctx.db, current, doc.mcp, ctx.now().toISOString()));
  const keep = new Set(doc.mcp.map((d) => d.title));
  const declared = (await listMcpServers(ctx.db)).filter((s) => keep.has(s.title));
  const status = await reloadServers(ctx, declared);
  return { servers: declared.map(mcpServerView), status, removed: current.filter((s) => !keep.has(s.title)).map((s) => s.title) };
}

/** Lists each server again (RELOAD_CONCURRENCY at a time); servers removed meanwhile are left out. */
export async function reloadServers(ctx: McpContext, servers: McpServerRecord[]): Promise<McpStatusView[]> {
  const done = await mapLimited(servers, RELOAD_CONCURRENCY, (s) => refreshServer(ctx, s));
  return done.filter((s): s is McpStatusView => s !== null);
}

/** Reloads one server by title (404 unknown). */
export async function reloadServer(ctx: McpContext, title: string): Promise<McpStatusView> {
  const s = await getMcpServer(ctx.db, title);
  if (!s) throw notFound("mcp server not found");
  const [status] = await reloadServers(ctx, [s]);
  if (!status) throw notFound("mcp server not found");
  return status;
}

/** Reloads every server, or only those with `status`. */
export async function reloadAll(ctx: McpContext, only?: McpStatus): Promise<StatusList> {
  const servers = (await listMcpServers(ctx.db)).filter((s) => only === undefined || s.status === only);
  const items = await reloadServers(ctx, servers);
  return { items, total: items.length };
}

/** `POST /api/mcp-status/{title}/deregister` (404 unknown). */
export async function deregisterServer(db: D1Database, title: string, nowIso: string): Promise<McpStatusView> {
  if (!(await deregisterMcpServer(db, title, nowIso))) throw notFound("mcp server not found");
  const status = await serverStatus(db, title);
  if (!status) throw notFound("mcp server not found");
  return status;
}

/** Every server's status (optionally only those with `only`). */
export async function statusList(db: D1Database, only?: McpStatus): Promise<StatusList> {
  const [servers, names] = await Promise.all([listMcpServers(db), toolNamesByServer(db)]);
  const items = statusViews(servers, names, only);
  return { items, total: items.length };
}
