/**
 * Console live tickets (docs/console.md "Live updates"). A browser cannot set a header on
 * a WebSocket, and the api key must never travel in a URL, so the console first asks for a ticket
 * with its key (`POST /api/conversations/{route_name}/live-tickets`) and opens the socket with the
 * ticket in the query. A ticket is `ctk-` + 43 url-safe characters (32 random bytes), works once,
 * for one route, within TICKET_TTL_MS; only its SHA-256 is stored (in the route's ConsoleHub).
 */
import { capabilityTokenKind } from "../access-control/capability-tokens";

const TICKET = capabilityTokenKind("ctk-");

/** How long a minted ticket may wait for its socket. */
export const TICKET_TTL_MS = 30_000;

/**
 * How long one socket lives before the hub closes it (code SESSION_OVER_CODE); the console then
 * asks for a new ticket, so the key's grants are checked again at least this often.
 */
export const SOCKET_MAX_AGE_MS = 10 * 60_000;

/** The close code a socket gets when its session is over (the console reconnects with a new ticket). */
export const SESSION_OVER_CODE = 4001;

/**
 * The close code a socket gets when its key was revoked, disabled or narrowed (or its owner's was):
 * a new ticket needs a key that may read the route.
 */
export const KEY_REVOKED_CODE = 4003;

/**
 * How many sockets one key may hold open on one route's hub: an operator's tabs and reloads. A
 * new socket past it closes that key's oldest (code SUPERSEDED_CODE), so a console that reloads
 * keeps working and one key cannot fill the hub.
 */
export const SOCKETS_PER_KEY = 8;

/**
 * How many sockets one route's hub holds in all: a ticket past it is refused with 429
 * (`too_many_consoles`), so the hub's sockets and their attachments stay bounded.
 */
export const SOCKETS_PER_HUB = 256;

/** The close code of a key's oldest socket when the same key opened one more than SOCKETS_PER_KEY. */
export const SUPERSEDED_CODE = 4008;

/** A fresh ticket; whether a string is shaped like one; its stored form (src/access-control/capability-tokens.ts). */
export const mintTicket = TICKET.mint;
export const isTicketShaped = TICKET.isShaped;
export const ticketHash = TICKET.hash;

/** The socket path of a route (the ticket rides in its query). */
export function livePath(routeName: string): string {
  return `/api/conversations/${routeName}/live`;
}
