/**
 * Whether a console socket may still hear its route (docs/console.md "Live updates"): the key
 * that minted its ticket must still exist, be enabled (its owner too) and still be granted what
 * the ticket door asked of it, reading the route's transcripts. The hub asks when a ticket is
 * spent and before every push (src/access-control/live-key.ts says what that costs).
 */
import { keyStillAllows } from "../access-control/live-key";
import type { Env } from "../platform/env";

/** What a ticket and its socket hold of the key that minted them. */
export interface TicketHolder {
  user_id: string;
  /** SHA-256 (hex) of the key, as the key table stores it: the socket never holds the key itself. */
  key_hash: string;
  route_name: string;
}

/** The door a console socket stands on: the transcript read of its route. */
export function consoleDoor(routeName: string) {
  return {
    need: { tag: "conversations", action: "read" as const },
    request: { method: "GET", path: `/api/conversations/${routeName}/transcript` },
  };
}

/** True while `holder`'s key may still read its route's transcripts. */
export function holderStillAllowed(env: Env, holder: TicketHolder, nowMs = Date.now()): Promise<boolean> {
  return keyStillAllows(env, holder.key_hash, consoleDoor(holder.route_name), nowMs);
}
