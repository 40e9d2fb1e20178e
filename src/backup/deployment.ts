/**
 * What the deployment already holds, for an import's cross-references ("a route's target must
 * exist in the deployment or in the document"): small name sets, each read once per import with
 * one statement and kept in the import's memo. These read tables other areas own; they only read.
 */
import { z } from "zod";
import type { ImportContext } from "./section";
import { type SqlFragment, all, d1, sql } from "../platform/persistence/d1";

async function memo<T>(ctx: ImportContext, key: string, load: () => Promise<T>): Promise<T> {
  if (!ctx.memo.has(key)) ctx.memo.set(key, await load());
  return ctx.memo.get(key) as T;
}

const NameRow = z.object({ n: z.string() });

async function names(db: D1Database, query: SqlFragment): Promise<Set<string>> {
  const rows = await all(NameRow, d1(db, query));
  return new Set(rows.map((r) => r.n));
}

export interface DeployedKey {
  /** Only to refuse an import that would give another key the same hash. */
  key_hash: string;
  owner_user_id: string | null;
}

const KeyRow = z.object({ user_id: z.string(), key_hash: z.string(), owner_user_id: z.string().nullable() });

/** Every key of the deployment by user_id. */
export function deployedKeys(ctx: ImportContext): Promise<Map<string, DeployedKey>> {
  return memo(ctx, "keys", async () => {
    const rows = await all(KeyRow, d1(ctx.db)`SELECT user_id, key_hash, owner_user_id FROM api_keys`);
    return new Map(rows.map((r) => [r.user_id, { key_hash: r.key_hash, owner_user_id: r.owner_user_id }]));
  });
}

export const deployedRoles = (ctx: ImportContext) => memo(ctx, "roles", () => names(ctx.db, sql`SELECT name AS n FROM roles`));
export const deployedScopeIds = (ctx: ImportContext) => memo(ctx, "scopes", () => names(ctx.db, sql`SELECT DISTINCT scope_id AS n FROM auth_scopes`));
export const deployedTools = (ctx: ImportContext) => memo(ctx, "tools", () => names(ctx.db, sql`SELECT title AS n FROM tool_declarations`));
export const deployedAgents = (ctx: ImportContext) => memo(ctx, "agents", () => names(ctx.db, sql`SELECT title AS n FROM agent_declarations`));
export const deployedPresets = (ctx: ImportContext) => memo(ctx, "presets", () => names(ctx.db, sql`SELECT name AS n FROM presets`));
export const deployedStates = (ctx: ImportContext) => memo(ctx, "states", () => names(ctx.db, sql`SELECT name AS n FROM states`));
export const deployedTemplates = (ctx: ImportContext) => memo(ctx, "templates", () => names(ctx.db, sql`SELECT name AS n FROM state_templates`));
export const deployedTextResources = (ctx: ImportContext) => memo(ctx, "text-resources", () => names(ctx.db, sql`SELECT id AS n FROM text_resources`));
