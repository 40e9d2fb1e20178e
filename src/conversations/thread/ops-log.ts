/**
 * Structured operator log lines: one JSON object per line, `event` first, so `wrangler tail`,
 * Workers Logs or a grep can filter them. Fields are ids, counts and short classes only: never a
 * URL (it may hold a token), header, body, user text or a provider's error text.
 * docs/operations.md lists every event.
 */

/** Why one delivery attempt failed: a short class, never the platform's error text. */
export type AttemptFailureClass = "timeout" | "transport" | "refused" | `http_${number}`;

export interface DeliveryAttemptFailed {
  message_id: string;
  /** `callback` for an api route's signed callback, else the channel's name. */
  via: string;
  /** The record's attempt count including this one. */
  attempt: number;
  reason: AttemptFailureClass;
  /** True when this attempt ends the delivery (`failed`); false when a retry is scheduled. */
  final: boolean;
}

/** A failed callback POST or channel send the service handled (it retries or fails the record). */
export function logDeliveryAttemptFailed(entry: DeliveryAttemptFailed): void {
  // warn, not log: a handled failure, and visible at wrangler's `--log-level warn`.
  console.warn(JSON.stringify({ event: "delivery_attempt_failed", ...entry }));
}

/** A turn whose runs kept ending its thread object, settled with the error outcome. */
export function logTurnAbandoned(entry: { message_id: string; attempts: number }): void {
  console.error(JSON.stringify({ event: "turn_abandoned", ...entry }));
}

/** The class of a channel send failure (`SendResult`): its HTTP status, else its transport reason. */
export function channelFailureClass(r: { status?: number; reason: string }): AttemptFailureClass {
  if (typeof r.status === "number") return `http_${r.status}`;
  if (r.reason === "timeout") return "timeout";
  if (r.reason === "network error") return "transport";
  return "refused"; // failed before any request left (e.g. a capability the channel lacks)
}
