/**
 * Control-mode overrides (spec §3.2). An override is per-thread state, so it lives in the
 * thread's own object (meta `mode_override`), read without a network hop right before each turn.
 * This module holds its pure rules; src/conversations/thread/thread-mode.ts keeps it in the object's storage.
 */
import { z } from "zod";
import { Mode } from "../../shared/kinds";

/**
 * A stored override: the mode, when it lapses, and the route incarnation it was set under. A
 * linked person's thread spans routes, so its override is person-wide: stamped null, it lapses by
 * time (or forget, or erase), never by one route's deletion.
 */
export const StoredOverride = z.object({
  mode: Mode,
  expires_at: z.number(),
  route_created_at: z.string().nullable(),
});
export type StoredOverride = z.infer<typeof StoredOverride>;

/**
 * Whose incarnation an override is checked against: a route thread's route (`created_at`), or
 * null on a person thread, whose override belongs to no single route.
 */
export interface ModeStamp {
  created_at: string | null;
}

/** The override's mode while it is live for this stamp, else null (pure). */
export function liveOverride(o: StoredOverride, stamp: ModeStamp, nowMs: number): Mode | null {
  return o.route_created_at === stamp.created_at && o.expires_at > nowMs ? o.mode : null;
}

/**
 * The mode a linked person's thread defaults to (spec §3.2): manual when any route the person's
 * address rows name is manual, else agent. `manualRoutes` are the target's routes whose
 * initial_mode is manual; a deleted route is in neither list, so it imposes nothing.
 */
export function personDefaultMode(personRoutes: Iterable<string>, manualRoutes: readonly string[]): Mode {
  const manual = new Set(manualRoutes);
  for (const r of personRoutes) if (manual.has(r)) return "manual";
  return "agent";
}
