/**
 * Callback tickets (issue 17; docs/interactions.md "Callback tickets"): a one-time answer link for
 * a person without an api key (an e-mail, a chat button). `itk-` + 43 url-safe characters (32
 * random bytes); only its SHA-256 is stored (the Interaction object and the listing row, which the
 * public door looks it up by). It lives `INTERACTIONS_TICKET_TTL_SECONDS`, never past its
 * interaction's expiry, and is spent by the answer it gives.
 */
import { randomToken, sha256Hex } from "../auth/crypto";
import { numberedQuestion } from "./ask";
import type { InteractionState } from "./record";

export const TICKET_PREFIX = "itk-";
const TICKET_SHAPE = /^itk-[A-Za-z0-9_-]{43}$/;

/** A fresh ticket. */
export function mintTicket(): string {
  return TICKET_PREFIX + randomToken();
}

/** Is `s` shaped like a ticket? (A misshapen one is just another miss: the door answers the same 404.) */
export function isTicketShaped(s: string): boolean {
  return TICKET_SHAPE.test(s);
}

/** The stored form of a ticket. */
export function ticketHash(ticket: string): Promise<string> {
  return sha256Hex(ticket);
}

/** The public path of a ticket. */
export function ticketPath(ticket: string): string {
  return `/api/interactions/callback/${ticket}`;
}

/** When a ticket minted at `nowMs` stops working: its TTL, capped by the interaction's expiry. Pure. */
export function ticketExpiry(nowMs: number, ttlSeconds: number, interactionExpiresAt: number): number {
  return Math.min(nowMs + ttlSeconds * 1000, interactionExpiresAt);
}

/** The notification an audience receives with its ticket: the question, its options, the link. Pure. */
export function ticketNotificationText(s: Pick<InteractionState, "question" | "options">, ticket: string): string {
  return `${numberedQuestion(s.question, s.options)}\n\nAnswer: ${ticketPath(ticket)} (GET shows the question; POST {"text"} or {"option_id"} answers once)`;
}
