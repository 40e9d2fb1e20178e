/**
 * Control-mode overrides (spec §3.2). An override is per-thread state, so it lives in the
 * thread's own object (meta `mode_override`), read without a network hop right before each turn.
 * This module holds its pure rules and the turn's D1 reads.
 */
import { type KeyWithOwner, keyWithOwnerByUserId, parseKeyWithOwner } from "../auth/key-store";
import { type RouteRow, routeFromResult, routeStatement } from "./routes-store";

export type Mode = "agent" | "manual";

/** A stored override: the mode, when it lapses, and the route incarnation it was set under. */
export interface StoredOverride {
  mode: Mode;
  expires_at: number;
  route_created_at: string;
}

/** The override's mode while it is live for this route incarnation, else null (pure). */
export function liveOverride(o: StoredOverride, routeCreatedAt: string, nowMs: number): Mode | null {
  return o.route_created_at === routeCreatedAt && o.expires_at > nowMs ? o.mode : null;
}

/**
 * What a turn reads from D1 right before it runs: nothing when the door read the route and its
 * key moments ago; otherwise the route and the execution key with its owner, in one round trip.
 */
export async function turnReads(
  db: D1Database,
  args: { routeName: string; route?: RouteRow; key?: KeyWithOwner | null },
): Promise<{ route: RouteRow | null; key: KeyWithOwner | null | undefined }> {
  if (args.route && args.key !== undefined) return { route: args.route, key: args.key };
  if (args.route) {
    const row = await keyWithOwnerByUserId(db, args.route.execution_key).first<Record<string, unknown>>();
    return { route: args.route, key: parseKeyWithOwner(row) };
  }
  const route = routeFromResult(await routeStatement(db, args.routeName).all());
  // Without a snapshot the authorizer reads the key itself (`undefined`: not prefetched).
  return { route, key: undefined };
}
