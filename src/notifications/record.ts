/**
 * What a notification is made of, from a validated send body (pure): the rich part a channel
 * carries, and the record the sink stores (spec §2.8).
 */
import type { RichPart } from "../channels/rich/types";
import { isEmptyPart } from "../channels/rich/types";
import type { Notification, NotificationSendBody } from "./schemas";

const RICH_FIELDS = ["media", "location", "template", "options", "sections", "header", "footer", "schema"] as const;

/** The body's rich fields as one part for the channel's rich sender; null when it has none. */
export function richPartOf(b: NotificationSendBody): RichPart | null {
  const part: RichPart = {};
  if (b.media) part.media = b.media;
  if (b.location) part.location = b.location;
  if (b.template) part.template = b.template;
  if (b.options) part.options = b.options;
  if (b.sections) part.sections = b.sections;
  if (b.header) part.header = b.header;
  if (b.footer) part.footer = b.footer;
  if (b.schema) part.schema = b.schema;
  return isEmptyPart(part) ? null : part;
}

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
