/**
 * Custom URL scopes (docs/access-control.md, "Custom URL scopes"): a named set of URL
 * paths or patterns. A key listing a scope id may call exactly those URLs, with any method, on any
 * door that is not admin-only. The URLs of the scopes a key (and its owner) names are read in the
 * key's own statement (src/access-control/key-store.ts), so a change reaches the key's next request.
 *
 * A scope exists while it has at least one URL. Deleting a scope leaves keys that name it as they
 * are: the id then grants nothing (and grants again if the scope is re-created).
 */
import { z } from "zod";
import { scopeUrlMatches, scopeUrlOverlapsTemplate } from "./url-pattern";

/** One URL of a custom scope, as carried on a key record. */
export const ScopeUrl = z.object({ scope_id: z.string(), url: z.string(), pattern: z.boolean() });
export type ScopeUrl = z.infer<typeof ScopeUrl>;

/** A custom scope as the doors show it. */
export const CustomScope = z.object({
  scope_id: z.string(),
  urls: z.array(z.object({ url: z.string(), pattern: z.boolean(), created_at: z.string() })),
});
export type CustomScope = z.infer<typeof CustomScope>;

/** The raw D1 row (for backup and restore). */
export const AuthScopeRow = z.object({ scope_id: z.string(), url: z.string(), pattern: z.number().int(), created_at: z.string() }).strict();
export type AuthScopeRow = z.infer<typeof AuthScopeRow>;

/** Do the custom scopes in `scopes` grant `path`? (`urls` are the scopes' URLs as read with the key.) */
export function customScopesGrantPath(scopes: readonly string[], urls: readonly ScopeUrl[], path: string): boolean {
  return urls.some((u) => scopes.includes(u.scope_id) && scopeUrlMatches(u.url, u.pattern, path));
}

/** The ids among `urls` with a URL that can reach a route with path template `template`. */
export function scopesMappingTemplate(urls: readonly ScopeUrl[], template: string): string[] {
  const ids = new Set<string>();
  for (const u of urls) if (scopeUrlOverlapsTemplate(u.url, u.pattern, template)) ids.add(u.scope_id);
  return [...ids].sort();
}

/** Adds (or re-flags) a URL of a scope; `added` is false when the scope already had that URL. */
export async function addScopeUrl(db: D1Database, scopeId: string, url: string, pattern: boolean, now: string): Promise<{ added: boolean }> {
  const [before] = await db.batch([
    db.prepare("SELECT 1 AS one FROM auth_scopes WHERE scope_id = ? AND url = ?").bind(scopeId, url),
    db
      .prepare(
        "INSERT INTO auth_scopes (scope_id, url, pattern, created_at) VALUES (?, ?, ?, ?) ON CONFLICT(scope_id, url) DO UPDATE SET pattern = excluded.pattern",
      )
      .bind(scopeId, url, pattern ? 1 : 0, now),
  ]);
  return { added: before.results.length === 0 };
}

const row = AuthScopeRow.strip();

function grouped(rows: unknown[]): CustomScope[] {
  const byId = new Map<string, CustomScope>();
  for (const raw of rows) {
    const r = row.parse(raw);
    const scope = byId.get(r.scope_id) ?? { scope_id: r.scope_id, urls: [] };
    scope.urls.push({ url: r.url, pattern: r.pattern !== 0, created_at: r.created_at });
    byId.set(r.scope_id, scope);
  }
  return [...byId.values()];
}

export async function getScope(db: D1Database, scopeId: string): Promise<CustomScope | null> {
  const { results } = await db.prepare("SELECT scope_id, url, pattern, created_at FROM auth_scopes WHERE scope_id = ? ORDER BY url").bind(scopeId).all();
  return grouped(results)[0] ?? null;
}

/** A page of scopes (ordered by id), each with all its URLs. */
export async function listScopes(db: D1Database, offset: number, limit: number): Promise<{ items: CustomScope[]; total: number }> {
  const [rows, count] = await db.batch([
    db
      .prepare(
        "SELECT scope_id, url, pattern, created_at FROM auth_scopes WHERE scope_id IN (SELECT DISTINCT scope_id FROM auth_scopes ORDER BY scope_id LIMIT ? OFFSET ?) ORDER BY scope_id, url",
      )
      .bind(limit, offset),
    db.prepare("SELECT COUNT(DISTINCT scope_id) AS n FROM auth_scopes"),
  ]);
  return { items: grouped(rows.results), total: Number((count.results[0] as { n: number }).n) };
}

/** Every URL of every scope (the route listing; a small table). */
export async function allScopeUrls(db: D1Database): Promise<ScopeUrl[]> {
  const { results } = await db.prepare("SELECT scope_id, url, pattern, created_at FROM auth_scopes ORDER BY scope_id, url").all();
  return results.map((raw) => {
    const r = row.parse(raw);
    return { scope_id: r.scope_id, url: r.url, pattern: r.pattern !== 0 };
  });
}

/** Removes a scope (all its URLs); the number of URLs removed. */
export async function deleteScope(db: D1Database, scopeId: string): Promise<number> {
  const res = await db.prepare("DELETE FROM auth_scopes WHERE scope_id = ?").bind(scopeId).run();
  return res.meta.changes ?? 0;
}

/** Removes a URL from every scope; the scopes it was removed from. */
export async function deleteUrlEverywhere(db: D1Database, url: string): Promise<string[]> {
  const [found] = await db.batch([
    db.prepare("SELECT scope_id FROM auth_scopes WHERE url = ? ORDER BY scope_id").bind(url),
    db.prepare("DELETE FROM auth_scopes WHERE url = ?").bind(url),
  ]);
  return (found.results as Array<{ scope_id: string }>).map((r) => r.scope_id);
}

/** Which of `ids` exist now (have at least one URL). */
export async function existingScopeIds(db: D1Database, ids: readonly string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const { results } = await db
    .prepare("SELECT DISTINCT scope_id FROM auth_scopes WHERE scope_id IN (SELECT value FROM json_each(?))")
    .bind(JSON.stringify(ids))
    .all<{ scope_id: string }>();
  return new Set(results.map((r) => r.scope_id));
}

/** Every scope id (capabilities: a small table). */
export async function scopeIds(db: D1Database): Promise<string[]> {
  const { results } = await db.prepare("SELECT DISTINCT scope_id FROM auth_scopes ORDER BY scope_id").all<{ scope_id: string }>();
  return results.map((r) => r.scope_id);
}
