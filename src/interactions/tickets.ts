/**
 * Callback tickets (docs/interactions.md "Callback tickets"): a one-time answer link for
 * a person without an api key (an e-mail, a chat button). `itk-` + 43 url-safe characters (32
 * random bytes); only its SHA-256 is stored (the Interaction object and the listing row, which the
 * public door looks it up by). It lives `INTERACTIONS_TICKET_TTL_SECONDS`, never past its
 * interaction's expiry, and is spent by the answer it gives.
 */
import { capabilityTokenKind } from "../access-control/capability-tokens";
import { numberedQuestion } from "./ask";
import type { InteractionState } from "./record";

const TICKET = capabilityTokenKind("itk-");

/**
 * A fresh ticket; whether a string is shaped like one (a misshapen one is just another miss: the
 * door answers the same 404); its stored form (src/access-control/capability-tokens.ts).
 */
export const mintTicket = TICKET.mint;
export const isTicketShaped = TICKET.isShaped;
export const ticketHash = TICKET.hash;

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
