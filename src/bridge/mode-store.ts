import { type KeyWithOwner, keyWithOwnerByUserId, parseKeyWithOwner } from "../auth/key-store";
import { type RouteRow, routeFromResult, routeStatement } from "./routes-store";

/** Per-thread control-mode overrides in D1 (spec §3.2). Expired overrides read as absent. */
export type Mode = "agent" | "manual";

export async function readOverride(db: D1Database, threadId: string, nowMs: number): Promise<Mode | null> {
  const r = await db
    .prepare("SELECT mode FROM mode_overrides WHERE thread_id = ? AND expires_at > ?")
    .bind(threadId, nowMs)
    .first<{ mode: Mode }>();
  return r?.mode ?? null;
}

export async function setOverride(db: D1Database, routeName: string, threadId: string, mode: Mode, expiresAtMs: number): Promise<void> {
  await db
    .prepare(
      "INSERT INTO mode_overrides (thread_id, route_name, mode, expires_at) VALUES (?, ?, ?, ?) ON CONFLICT(thread_id) DO UPDATE SET mode = excluded.mode, route_name = excluded.route_name, expires_at = excluded.expires_at",
    )
    .bind(threadId, routeName, mode, expiresAtMs)
    .run();
}

/** Pushes an existing override's expiry forward (each accepted inbound and operator send). */
export async function refreshOverride(db: D1Database, threadId: string, nowMs: number, expiresAtMs: number): Promise<void> {
  await db.prepare("UPDATE mode_overrides SET expires_at = ? WHERE thread_id = ? AND expires_at > ?").bind(expiresAtMs, threadId, nowMs).run();
}

/**
 * What a turn reads right before it runs, in one D1 round trip: the route (unless the door read
 * it moments ago), the thread's live override (re-checked here so an answer never goes out after
 * a takeover) and the execution key with its owner (the fire-time read of the turn's authority).
 */
export async function turnReads(
  db: D1Database,
  args: { routeName: string; threadId: string; nowMs: number; route?: RouteRow; key?: KeyWithOwner | null },
): Promise<{ route: RouteRow | null; override: Mode | null; key: KeyWithOwner | null | undefined }> {
  const overrideStmt = db.prepare("SELECT mode FROM mode_overrides WHERE thread_id = ? AND expires_at > ?").bind(args.threadId, args.nowMs);
  const modeOf = (r: D1Result) => ((r.results[0] as { mode?: Mode } | undefined)?.mode ?? null) as Mode | null;
  if (args.route && args.key !== undefined) {
    // The door read route and key moments ago: only the override is left to read.
    return { route: args.route, override: modeOf(await overrideStmt.all()), key: args.key };
  }
  const stmts: D1PreparedStatement[] = [overrideStmt];
  if (args.route) stmts.push(keyWithOwnerByUserId(db, args.route.execution_key));
  else stmts.push(routeStatement(db, args.routeName));
  const [override, second] = await db.batch(stmts);
  const mode = modeOf(override);
  if (args.route) return { route: args.route, override: mode, key: parseKeyWithOwner(second.results[0] as Record<string, unknown> | undefined) };
  // Without a snapshot the key is read by the authorizer itself (`undefined`: not prefetched).
  return { route: routeFromResult(second), override: mode, key: undefined };
}
