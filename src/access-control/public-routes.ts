/**
 * Public pins (docs/access-control.md, "Public routes"): an admin may pin a door of the
 * route table as public, so it is served without a credential. Which doors may be pinned is pure
 * policy (`pinRefusal`); the pins live in D1 `public_routes` and are read only for requests that
 * carry no credential (which would be 401 otherwise) or that a key's grants refused.
 */
import { z } from "zod";
import { CountRow, all, batch, d1, exists, rowsOf, run } from "../platform/persistence/d1";

/** The parts of a route declaration the pin policy reads (structurally a `RouteSpec`). */
export interface DoorDeclaration {
  method: string;
  path: string;
  auth: { public: true } | { authenticated: true } | { tag: string; action?: "read" | "write"; admin?: boolean };
  /** true: a non-GET door that opts in to pinning; false: a GET door that needs its caller's identity. */
  pinnable?: boolean;
}

/**
 * Why `door` can never be pinned public (a reason for the 400, naming the rule), or null when it
 * can. Never public: the access-control doors (`/api/auth/*`, `/api/keys/*`), the bridge's write
 * doors under `/api/conversations`, `POST /api/run-tool`, every admin-only door and every door
 * that needs a key by declaration (`authenticated`, e.g. `me`). Only read (GET) doors are
 * pinnable unless a door declares `pinnable: true`; a GET door declaring `pinnable: false` needs
 * its caller's identity and is refused too.
 */
export function pinRefusal(door: DoorDeclaration): string | null {
  const method = door.method.toLowerCase();
  const path = door.path;
  if ("public" in door.auth) return "the door is public already";
  if ("authenticated" in door.auth) return "the door answers about the calling key, so it needs one";
  if (door.auth.admin) return "admin-only doors are never public";
  if (path === "/api/auth" || path.startsWith("/api/auth/") || path === "/api/keys" || path.startsWith("/api/keys/"))
    return "access-control doors are never public";
  if ((path === "/api/conversations" || path.startsWith("/api/conversations/")) && method !== "get") return "the bridge's write doors are never public";
  if (path === "/api/run-tool") return "run-tool is never public";
  if (door.pinnable === false) return "the door needs its caller's identity";
  if (method !== "get" && door.pinnable !== true) return "only read (GET) doors can be pinned";
  return null;
}

/** A pin as the doors show it. */
export const PublicRoute = z.object({ method: z.string(), path: z.string(), pinned_by: z.string().nullable(), created_at: z.string() });
export type PublicRoute = z.infer<typeof PublicRoute>;

/** The raw D1 row (for backup and restore). */
export const PublicRouteRow = PublicRoute.strict();
export type PublicRouteRow = z.infer<typeof PublicRouteRow>;

export async function isPinned(db: D1Database, method: string, path: string): Promise<boolean> {
  return exists(d1(db)`SELECT 1 AS pinned FROM public_routes WHERE method = ${method.toUpperCase()} AND path = ${path}`);
}

/** Pins (idempotent); `created` is false when the door was pinned already. */
export async function pin(db: D1Database, method: string, path: string, by: string | null, now: string): Promise<{ created: boolean }> {
  const meta = await run(d1(db)`INSERT INTO public_routes (method, path, pinned_by, created_at) VALUES (${method.toUpperCase()}, ${path}, ${by}, ${now})
    ON CONFLICT(method, path) DO NOTHING`);
  return { created: (meta.changes ?? 0) > 0 };
}

export async function unpin(db: D1Database, method: string, path: string): Promise<boolean> {
  return ((await run(d1(db)`DELETE FROM public_routes WHERE method = ${method.toUpperCase()} AND path = ${path}`)).changes ?? 0) > 0;
}

export async function listPins(db: D1Database, offset: number, limit: number): Promise<{ items: PublicRoute[]; total: number }> {
  const rows = d1(db)`SELECT method, path, pinned_by, created_at FROM public_routes ORDER BY path, method LIMIT ${limit} OFFSET ${offset}`;
  const count = d1(db)`SELECT COUNT(*) AS n FROM public_routes`;
  const [page, counted] = await batch(db, [rows, count]);
  return { items: rowsOf(PublicRoute, page.results, rows.text), total: rowsOf(CountRow, counted.results, count.text)[0]?.n ?? 0 };
}

const PinRow = PublicRoute.pick({ method: true, path: true });

/** Every pin as `METHOD path` (the route listing and `me`: a small table). */
export async function pinnedSet(db: D1Database): Promise<Set<string>> {
  const rows = await all(PinRow, d1(db)`SELECT method, path FROM public_routes`);
  return new Set(rows.map((r) => `${r.method} ${r.path}`));
}
