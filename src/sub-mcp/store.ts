/**
 * Sub-MCP apps (docs/mcp.md "Sub-MCP endpoints"): a chosen subset of the registry served
 * as an MCP server at `/api/sub-mcp/{slug}/mcp`. The reference's shape `{slug, tools[], transport}`;
 * this build serves Streamable HTTP only (`transport: "http"`, the default).
 */
import { z } from "zod";
import { type KeyWithOwner, keyColumns, parsePrefixedKey } from "../access-control/key-store";
import { storedByUserIdSql } from "../access-control/stored-by";
import { badRequest, notFound } from "../platform/http/errors";
import { toolNameSchema } from "../shared/tool-names";
import { all, d1, exists, first, run, trusted } from "../platform/persistence/d1";
import { parseStored } from "../platform/persistence/stored-json";

export const SLUG = /^[a-z0-9][a-z0-9-]{0,62}$/;
export const slugSchema = z.string().regex(SLUG, { message: "must be 1-63 characters of lower-case letters, digits and -, starting with a letter or digit" });

/** Most tools one app serves. */
export const MAX_APP_TOOLS = 128;
/** Most apps one deployment keeps. */
export const MAX_APPS = 100;

export const SubMcpBody = z
  .object({
    slug: slugSchema,
    tools: z
      .array(toolNameSchema)
      .min(1)
      .max(MAX_APP_TOOLS)
      .refine((l) => new Set(l).size === l.length, { message: "must not repeat a tool" }),
    transport: z.literal("http").default("http"),
  })
  .strict();
export type SubMcpBody = z.infer<typeof SubMcpBody>;

export const SubMcpApp = z.object({
  slug: z.string(),
  tools: z.array(z.string()),
  transport: z.literal("http"),
  /** Where MCP clients connect (POST, Streamable HTTP). */
  path: z.string(),
  created_at: z.string(),
  updated_at: z.string(),
});
export type SubMcpApp = z.infer<typeof SubMcpApp>;

export const appPath = (slug: string) => `/api/sub-mcp/${slug}/mcp`;

const Row = z.object({ slug: z.string(), tools: z.string(), transport: z.string(), created_at: z.string(), updated_at: z.string() });
type Row = z.infer<typeof Row>;
/** The app row with its writer and that key's columns (`sk_…`, `so_…`), kept for `parsePrefixedKey`. */
const ServedRow = z.looseObject({ ...Row.shape, stored_by: z.string() });

function toApp(r: Row): SubMcpApp {
  return {
    slug: r.slug,
    tools: parseStored(z.array(z.string()), r.tools, "sub_mcp_apps row"),
    transport: "http",
    path: appPath(r.slug),
    created_at: r.created_at,
    updated_at: r.updated_at,
  };
}

export async function getApp(db: D1Database, slug: string): Promise<SubMcpApp | null> {
  const r = await first(Row, d1(db)`SELECT slug, tools, transport, created_at, updated_at FROM sub_mcp_apps WHERE slug = ${slug}`);
  return r ? toApp(r) : null;
}

/** An app as its endpoint serves it: who declared it, and that key's live record and owner (read with the app). */
export interface ServedApp {
  app: SubMcpApp;
  stored_by: string;
  holder: KeyWithOwner | null;
}

/**
 * The app with its writer's key and owner in one statement: each tool is served only while the
 * writer may still run it (src/access-control/stored-by.ts), at no round trip beyond the app's own read.
 */
export async function getServedApp(db: D1Database, slug: string): Promise<ServedApp | null> {
  const r = await first(
    ServedRow,
    d1(
      db,
    )`SELECT a.slug, a.tools, a.transport, a.created_at, a.updated_at, a.stored_by, ${trusted(keyColumns("sk", "sk_"))}, ${trusted(keyColumns("so", "so_"))}
       FROM sub_mcp_apps a LEFT JOIN api_keys sk ON sk.user_id = ${trusted(storedByUserIdSql("a.stored_by"))} LEFT JOIN api_keys so ON so.user_id = sk.owner_user_id
       WHERE a.slug = ${slug}`,
  );
  return r ? { app: toApp(r), stored_by: r.stored_by, holder: parsePrefixedKey(r, "sk_", "so_") } : null;
}

export async function listApps(db: D1Database): Promise<SubMcpApp[]> {
  return (await all(Row, d1(db)`SELECT slug, tools, transport, created_at, updated_at FROM sub_mcp_apps ORDER BY slug`)).map(toApp);
}

/**
 * Creates or replaces an app, recording `storedBy` as its writer. Every tool must be registered now
 * (400 naming the first that is not, by position); a tool removed later is left out of the app's
 * listing until it is back.
 */
export async function upsertApp(
  db: D1Database,
  body: SubMcpBody,
  isRegistered: (name: string) => Promise<boolean>,
  nowIso: string,
  storedBy: string,
): Promise<{ created: boolean; app: SubMcpApp }> {
  for (const [i, name] of body.tools.entries()) {
    if (!(await isRegistered(name))) throw badRequest(`invalid body: tools[${i}]: no tool of the registry has this name`);
  }
  const existed = await exists(d1(db)`SELECT 1 AS one FROM sub_mcp_apps WHERE slug = ${body.slug}`);
  const meta = await run(
    d1(db)`INSERT INTO sub_mcp_apps (slug, tools, transport, created_at, updated_at, stored_by)
       SELECT ${body.slug}, ${JSON.stringify(body.tools)}, ${body.transport}, ${nowIso}, ${nowIso}, ${storedBy}
       WHERE EXISTS (SELECT 1 FROM sub_mcp_apps WHERE slug = ${body.slug}) OR (SELECT COUNT(*) FROM sub_mcp_apps) < ${MAX_APPS}
       ON CONFLICT(slug) DO UPDATE SET tools = excluded.tools, transport = excluded.transport, updated_at = excluded.updated_at, stored_by = excluded.stored_by`,
  );
  if ((meta.changes ?? 0) === 0) throw badRequest(`at most ${MAX_APPS} sub-MCP apps may exist; remove one first`);
  const app = await getApp(db, body.slug);
  if (!app) throw notFound("sub-mcp app not found");
  return { created: !existed, app };
}

export async function deleteApp(db: D1Database, slug: string): Promise<void> {
  const meta = await run(d1(db)`DELETE FROM sub_mcp_apps WHERE slug = ${slug}`);
  if ((meta.changes ?? 0) === 0) throw notFound("sub-mcp app not found");
}
