/**
 * What a notification stores, from a validated send body (pure): the record the sink keeps (spec
 * §2.8). The part a channel carries is `richPartOf` (src/channels/rich/types.ts), shared with the
 * operator send.
 */
import type { Notification, NotificationSendBody } from "./schemas";

const RICH_FIELDS = ["media", "location", "template", "options", "sections", "header", "footer", "schema"] as const;

/**
 * The stored record: minted `id` and `created_at`, the message, the audience after the clamp, the
 * recipient the send used (the body's, or a channel's default), and the rich fields the body
 * carried. Absent optional fields are left out rather than stored as null.
 */
export function mintNotification(b: NotificationSendBody, to: { audience?: string; recipient?: string }, id: string, now: Date): Notification {
  const n: Notification = { id, created_at: now.toISOString(), message: b.message };
  if (to.audience !== undefined) n.audience = to.audience;
  if (to.recipient !== undefined) n.recipient = to.recipient;
  for (const k of RICH_FIELDS) {
    if (b[k] !== undefined) (n as Record<string, unknown>)[k] = b[k];
  }
  return n;
}
