/**
 * Presence between consoles on one route (docs/console.md "Presence"): "sam is viewing", "sam is
 * typing". Pure. A console sends a small frame on its live socket; the hub names the sender from
 * the socket's own holder (never from the frame), gives the announcement a short lifetime and fans
 * it out to the other consoles watching the route. Nothing is stored but the socket's attachment,
 * which dies with the socket, and every frame is bounded in size and rate.
 */
import { parseThreadId } from "../shared/thread-id";

export const PRESENCE_STATES = ["viewing", "typing", "left"] as const;
export type PresenceState = (typeof PRESENCE_STATES)[number];

/**
 * How long an announcement holds without being repeated. A console repeats "viewing" about every
 * 15 s while the thread is open and "typing" at most every 3 s while the operator types, so a
 * console that vanished without a word stops showing within these.
 */
export const PRESENCE_TTL_MS: Readonly<Record<PresenceState, number>> = { viewing: 30_000, typing: 8_000, left: 0 };

/** The longest presence frame a console may send, and the longest thread id it may name. */
export const PRESENCE_FRAME_MAX_CHARS = 1024;
export const PRESENCE_THREAD_ID_MAX_CHARS = 512;

/** A socket's presence frames per window: the ones past it are dropped, not fanned out. */
export const PRESENCE_FRAMES_PER_WINDOW = 20;
export const PRESENCE_WINDOW_MS = 10_000;

/** What a console announced, as the sender's socket keeps it (epoch ms). */
export interface PresenceMark {
  thread_id: string;
  state: Exclude<PresenceState, "left">;
  until: number;
}

/** A socket's frame budget: the window's start and the frames counted in it. */
export interface PresenceBudget {
  from: number;
  n: number;
}

/** One announcement as the other consoles get it. */
export interface PresenceEntry {
  route_name: string;
  thread_id: string;
  user_id: string;
  state: PresenceState;
  /** When it stops holding (ISO); a `left` holds no longer than now. */
  until: string;
}

/**
 * A console's presence frame `{"type":"presence","thread_id":…,"state":…}`, or null when the text
 * is anything else: too long, not that shape, an unknown state, or a thread that cannot be on
 * `routeName` (a route thread of another route; a person thread may span this one).
 */
export function parsePresenceFrame(text: string, routeName: string): { thread_id: string; state: PresenceState } | null {
  if (text.length > PRESENCE_FRAME_MAX_CHARS) return null;
  let frame: unknown;
  try {
    frame = JSON.parse(text);
  } catch {
    return null;
  }
  if (!frame || typeof frame !== "object" || Array.isArray(frame)) return null;
  const f = frame as Record<string, unknown>;
  if (f.type !== "presence" || Object.keys(f).length !== 3) return null;
  const { thread_id, state } = f;
  if (typeof thread_id !== "string" || thread_id.length > PRESENCE_THREAD_ID_MAX_CHARS || /\p{Cc}/u.test(thread_id)) return null;
  if (typeof state !== "string" || !(PRESENCE_STATES as readonly string[]).includes(state)) return null;
  const parsed = parseThreadId(thread_id);
  if (parsed.kind === "invalid" || (parsed.kind === "route" && parsed.route_name !== routeName)) return null;
  return { thread_id, state: state as PresenceState };
}

/** Counts one frame against `budget` at `now`: whether it may pass, and the budget to keep. */
export function spendPresenceBudget(budget: PresenceBudget | undefined, now: number): { ok: boolean; budget: PresenceBudget } {
  const current = budget && now - budget.from < PRESENCE_WINDOW_MS ? budget : { from: now, n: 0 };
  if (current.n >= PRESENCE_FRAMES_PER_WINDOW) return { ok: false, budget: current };
  return { ok: true, budget: { from: current.from, n: current.n + 1 } };
}

/** The mark a socket keeps after announcing `state` on `threadId` (null once it left). */
export function presenceMark(threadId: string, state: PresenceState, now: number): PresenceMark | null {
  return state === "left" ? null : { thread_id: threadId, state, until: now + PRESENCE_TTL_MS[state] };
}

/** The entry the other consoles get for `userId`'s announcement. */
export function presenceEntry(routeName: string, userId: string, threadId: string, state: PresenceState, now: number): PresenceEntry {
  return { route_name: routeName, thread_id: threadId, user_id: userId, state, until: new Date(now + PRESENCE_TTL_MS[state]).toISOString() };
}

/** A frame of entries, as the hub sends it. */
export function presenceFrame(entries: PresenceEntry[]): string {
  return JSON.stringify({ type: "presence", presence: entries });
}
