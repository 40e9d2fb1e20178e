/**
 * The ConsoleHub objects' RPC contract (docs/console.md "Live updates"). One hub per
 * conversation route (`idFromName(route_name)`) holds the operator consoles watching that route,
 * as hibernatable WebSockets, and the one-time tickets that open them. The route's IndexShards
 * announce each listing push to it (fire-and-forget, off the push's answer), and the hub passes
 * the notice on to every socket: ids and a status only, never message text.
 */
import type { Env } from "../platform/env";
import type { TicketHolder } from "./live-check";
import type { TurnState } from "../conversations/model/live";

/** What a console learns about a change: which thread moved, never what was said. */
export type ConsoleNotice =
  | { type: "thread"; route_name: string; thread_id: string; status: string; at: string }
  | { type: "failed"; route_name: string; thread_id: string; message_id: string }
  /** A turn of the thread changed state (its draft is read through `GET …/thread/live`, never sent here). */
  | { type: "turn"; route_name: string; thread_id: string; message_id: string; state: TurnState };

export interface ConsoleHubRpc {
  /** Keeps a ticket's SHA-256 until `expiresAtMs`, with the key it was minted for (and drops expired ones). */
  keepTicket(ticketHash: string, holder: TicketHolder, expiresAtMs: number): Promise<void>;
  /**
   * Sends `notices` to every live socket whose key may still read the route, closing the others
   * (code KEY_REVOKED_CODE) without sending; answers how many sockets got them. Never throws for a bad socket.
   */
  notify(notices: ConsoleNotice[]): Promise<number>;
  /** The WebSocket upgrade (`GET /api/conversations/{route_name}/live?ticket=`): spends the ticket, checks its key again, accepts the socket. */
  fetch(request: Request): Promise<Response>;
}

/** The hub of route `routeName`. */
export function consoleHubStub(env: Env, routeName: string): ConsoleHubRpc {
  return env.CONSOLE_HUBS.get(env.CONSOLE_HUBS.idFromName(routeName));
}
