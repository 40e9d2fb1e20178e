/**
 * The conversation vocabulary both halves share, one definition each (a zod enum and its type
 * under the same name): the door a route is reached by, a thread's control mode, and the kind of
 * target a route, config, subject or run names. Everything that spells one of these imports it
 * from here, so a new value is added once. This module imports only zod, so any layer may use it.
 */
import { z } from "zod";

/** How a route is reached: the api door (an authenticated client) or a channel's inbound webhook. */
export const Door = z.enum(["api", "channel"]);
export type Door = z.infer<typeof Door>;

/** Who answers a thread: the route's target (`agent`), or an operator by hand (`manual`). */
export const Mode = z.enum(["agent", "manual"]);
export type Mode = z.infer<typeof Mode>;

/** What a route, a conversation config, a state subject or a run targets: an agent or a tool. */
export const TargetKind = z.enum(["agent", "tool"]);
export type TargetKind = z.infer<typeof TargetKind>;

/**
 * The target kinds with a door's own refusal text in place of zod's (a door whose 400 names the
 * rule in words keeps that text).
 */
export function targetKindRefusing(message: string) {
  return z.enum(TargetKind.options, { message });
}
