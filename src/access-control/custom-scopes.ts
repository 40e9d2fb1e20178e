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
import { CountRow, all, batch, d1, rowsOf, run, sql } from "../platform/persistence/d1";
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
  const [before] = await batch(db, [
    d1(db)`SELECT 1 AS one FROM auth_scopes WHERE scope_id = ${scopeId} AND url = ${url}`,
    d1(db)`INSERT INTO auth_scopes (scope_id, url, pattern, created_at) VALUES (${scopeId}, ${url}, ${pattern ? 1 : 0}, ${now})
      ON CONFLICT(scope_id, url) DO UPDATE SET pattern = excluded.pattern`,
  ]);
  return { added: before.results.length === 0 };
}

const row = AuthScopeRow.strip();
const ScopeIdRow = z.object({ scope_id: z.string() });
const COLUMNS = sql`scope_id, url, pattern, created_at`;

function grouped(rows: readonly AuthScopeRow[]): CustomScope[] {
  const byId = new Map<string, CustomScope>();
  for (const r of rows) {
    const scope = byId.get(r.scope_id) ?? { scope_id: r.scope_id, urls: [] };
    scope.urls.push({ url: r.url, pattern: r.pattern !== 0, created_at: r.created_at });
    byId.set(r.scope_id, scope);
  }
  return [...byId.values()];
}

export async function getScope(db: D1Database, scopeId: string): Promise<CustomScope | null> {
  return grouped(await all(row, d1(db)`SELECT ${COLUMNS} FROM auth_scopes WHERE scope_id = ${scopeId} ORDER BY url`))[0] ?? null;
}

/** A page of scopes (ordered by id), each with all its URLs. */
export async function listScopes(db: D1Database, offset: number, limit: number): Promise<{ items: CustomScope[]; total: number }> {
  const rows = d1(db)`SELECT ${COLUMNS} FROM auth_scopes
    WHERE scope_id IN (SELECT DISTINCT scope_id FROM auth_scopes ORDER BY scope_id LIMIT ${limit} OFFSET ${offset}) ORDER BY scope_id, url`;
  const count = d1(db)`SELECT COUNT(DISTINCT scope_id) AS n FROM auth_scopes`;
  const [page, counted] = await batch(db, [rows, count]);
  return { items: grouped(rowsOf(row, page.results, rows.text)), total: rowsOf(CountRow, counted.results, count.text)[0]?.n ?? 0 };
}

/** Every URL of every scope (the route listing; a small table). */
export async function allScopeUrls(db: D1Database): Promise<ScopeUrl[]> {
  const rows = await all(row, d1(db)`SELECT ${COLUMNS} FROM auth_scopes ORDER BY scope_id, url`);
  return rows.map((r) => ({ scope_id: r.scope_id, url: r.url, pattern: r.pattern !== 0 }));
}

/** Removes a scope (all its URLs); the number of URLs removed. */
export async function deleteScope(db: D1Database, scopeId: string): Promise<number> {
  return (await run(d1(db)`DELETE FROM auth_scopes WHERE scope_id = ${scopeId}`)).changes ?? 0;
}

/** Removes a URL from every scope; the scopes it was removed from. */
export async function deleteUrlEverywhere(db: D1Database, url: string): Promise<string[]> {
  const found = d1(db)`SELECT scope_id FROM auth_scopes WHERE url = ${url} ORDER BY scope_id`;
  const [rows] = await batch(db, [found, d1(db)`DELETE FROM auth_scopes WHERE url = ${url}`]);
  return rowsOf(ScopeIdRow, rows.results, found.text).map((r) => r.scope_id);
}

/** Which of `ids` exist now (have at least one URL). */
export async function existingScopeIds(db: D1Database, ids: readonly string[]): Promise<Set<string>> {
  if (ids.length === 0) return new Set();
  const rows = await all(ScopeIdRow, d1(db)`SELECT DISTINCT scope_id FROM auth_scopes WHERE scope_id IN (SELECT value FROM json_each(${JSON.stringify(ids)}))`);
  return new Set(rows.map((r) => r.scope_id));
}

/** Every scope id (capabilities: a small table). */
export async function scopeIds(db: D1Database): Promise<string[]> {
  return (await all(ScopeIdRow, d1(db)`SELECT DISTINCT scope_id FROM auth_scopes ORDER BY scope_id`)).map((r) => r.scope_id);
}
