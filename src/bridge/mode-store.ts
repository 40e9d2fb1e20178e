/**
 * Control-mode overrides (spec §3.2). An override is per-thread state, so it lives in the
 * thread's own object (meta `mode_override`), read without a network hop right before each turn.
 * This module holds its pure rules; src/thread/thread-mode.ts keeps it in the object's storage.
 */

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
