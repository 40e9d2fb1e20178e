/**
 * Control-mode overrides (spec §3.2). An override is per-thread state, so it lives in the
 * thread's own object (meta `mode_override`), read without a network hop right before each turn.
 * This module holds its pure rules; src/thread/thread-mode.ts keeps it in the object's storage.
 */
import { z } from "zod";

export const Mode = z.enum(["agent", "manual"]);
export type Mode = z.infer<typeof Mode>;

/** A stored override: the mode, when it lapses, and the route incarnation it was set under. */
export const StoredOverride = z.object({
  mode: Mode,
  expires_at: z.number(),
  route_created_at: z.string(),
});
export type StoredOverride = z.infer<typeof StoredOverride>;

/** The override's mode while it is live for this route incarnation, else null (pure). */
export function liveOverride(o: StoredOverride, routeCreatedAt: string, nowMs: number): Mode | null {
  return o.route_created_at === routeCreatedAt && o.expires_at > nowMs ? o.mode : null;
}
