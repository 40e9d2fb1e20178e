/**
 * The notification shapes (spec §2.8, §4.9; platform-facts A1 "Field caps"): one zod schema per
 * shape with its type under the same name. They reuse the rich-part shapes of operator sends
 * (src/channels/rich/types.ts, src/shared/media.ts) where those fit and carry the notification
 * caps where they differ: an operator send's option rows are capped by what providers accept
 * (10), a notification's by the contract (100 options; 10 sections of at most 100 rows in all),
 * because a notification may go to the internal sink, where no provider limits it. A channel that
 * cannot express a shape refuses it when the send is planned (400), never by truncating it.
 *
 * The rules across fields (composition) are the pure `compositionIssues` (./composition.ts).
 */
import { z } from "zod";
import { Attachment, LocationInput, Location, MAX_ATTACHMENTS, MAX_URL, MediaKind, inferKind } from "../shared/media";
import { RichTemplate } from "../channels/rich/types";
import { JsonObject, jsonObjectSchema } from "../platform/http/bounded-json";
import { identifierSchema, isIntactIdentifier, nonBlankText } from "../platform/http/identifiers";
import { compositionIssues } from "./composition";

/** Field caps of platform-facts A1. */
export const NOTIFICATION_CAPS = {
  message: 65_536,
  address: 512,
  mediaItems: MAX_ATTACHMENTS,
  url: MAX_URL,
  caption: 1000,
  filename: 255,
  options: 100,
  sections: 10,
  /** Rows summed across all sections. */
  sectionRows: 100,
  optionText: 1000,
  optionId: 256,
  footer: 1000,
  channel: 64,
} as const;

const LINE_BREAK_OR_CONTROL = /[\u0000-\u001F\u007F-\u009F]/;

function isAbsoluteUrl(s: string, protocols: readonly string[]): boolean {
  if (/\s/.test(s) || LINE_BREAK_OR_CONTROL.test(s)) return false;
  try {
    const u = new URL(s);
    return protocols.includes(u.protocol) && u.hostname.length > 0;
  } catch {
    return false;
  }
}

/** A media item's url: the provider fetches it, so it is an absolute https URL on one line. */
const mediaUrl = z
  .string()
  .max(NOTIFICATION_CAPS.url)
  .refine((s) => isAbsoluteUrl(s, ["https:"]), { message: "must be an absolute https URL on one line" });

/**
 * One media item as a send gives it (spec §4.9 `{url, caption, filename}`). `kind` (image,
 * document, video, audio) may be given; left out it is inferred (`document` with a filename, else
 * by the url's extension, else `document`: src/shared/media.ts `inferKind`). The stored item
 * always carries it (spec §2.8), so the output is an `Attachment`.
 */
export const NotificationMedia = z
  .object({
    kind: MediaKind.optional(),
    url: mediaUrl,
    caption: nonBlankText(NOTIFICATION_CAPS.caption).optional(),
    filename: z
      .string()
      .min(1, { message: "must not be empty" })
      .max(NOTIFICATION_CAPS.filename)
      .refine((s) => !LINE_BREAK_OR_CONTROL.test(s), { message: "must be one line without control characters" })
      .optional(),
  })
  .strict()
  .superRefine((m, ctx) => {
    if (m.filename !== undefined && m.kind !== undefined && m.kind !== "document") {
      ctx.addIssue({ code: "custom", path: ["filename"], message: "is only for document media" });
    }
  })
  .transform((m) => ({ ...m, kind: m.kind ?? inferKind(m) }))
  .pipe(Attachment);
export type NotificationMedia = z.infer<typeof NotificationMedia>;

/** An author-set option id: at most 256 characters, no whitespace or control characters. */
const optionId = z
  .string()
  .min(1, { message: "must not be empty" })
  .max(NOTIFICATION_CAPS.optionId)
  .refine((s) => !/\s/.test(s) && isIntactIdentifier(s), { message: "must not contain whitespace or control characters" });

/**
 * A tappable option (spec §4.9 `{text, description, id, kind}`): a reply option submits its text
 * as the next message; a link option opens its `url` (the project's rich-part shape: a link
 * option keeps `text` as its label, where the reference calls it `label`).
 */
export const NotificationOption = z
  .object({
    text: nonBlankText(NOTIFICATION_CAPS.optionText),
    description: nonBlankText(NOTIFICATION_CAPS.optionText).optional(),
    id: optionId.optional(),
    kind: z.enum(["reply", "link"]),
    url: z.string().max(NOTIFICATION_CAPS.url).optional(),
  })
  .strict()
  .superRefine((o, ctx) => {
    if (o.kind === "link" && (o.url === undefined || !isAbsoluteUrl(o.url, ["https:", "http:"]))) {
      ctx.addIssue({ code: "custom", path: ["url"], message: "a link option needs an absolute http(s) url" });
    }
    if (o.kind === "reply" && o.url !== undefined) ctx.addIssue({ code: "custom", path: ["url"], message: "is only for link options" });
  });
export type NotificationOption = z.infer<typeof NotificationOption>;

export const NotificationSection = z
  .object({
    title: nonBlankText(NOTIFICATION_CAPS.optionText),
    rows: z.array(NotificationOption).min(1, { message: "must not be empty" }).max(NOTIFICATION_CAPS.sectionRows),
  })
  .strict();
export type NotificationSection = z.infer<typeof NotificationSection>;

/** An ask-less form's answer schema: a non-empty JSON object, transport-bounded like a form. */
export const NotificationFormSchema = jsonObjectSchema.refine((o) => Object.keys(o).length > 0, { message: "must not be empty" });
export type NotificationFormSchema = z.infer<typeof NotificationFormSchema>;

/**
 * `sender_identity` is reserved for the platform's own sends (platform-facts A1 step 1): any
 * non-null value is refused. Declared first in the body so its refusal leads the message.
 */
const reservedSenderIdentity = z
  .unknown()
  .refine((v) => v === undefined || v === null, { message: "is reserved for the platform's own sends and must not be set" })
  .optional();

/** `POST /api/notifications` body (spec §4.9). */
export const NotificationSendBody = z
  .object({
    sender_identity: reservedSenderIdentity,
    message: z.string().max(NOTIFICATION_CAPS.message),
    channel: identifierSchema(NOTIFICATION_CAPS.channel).optional(),
    recipient: identifierSchema(NOTIFICATION_CAPS.address).optional(),
    audience: identifierSchema(NOTIFICATION_CAPS.address).optional(),
    media: z.array(NotificationMedia).min(1, { message: "must not be empty" }).max(NOTIFICATION_CAPS.mediaItems).optional(),
    location: LocationInput.optional(),
    template: RichTemplate.optional(),
    options: z.array(NotificationOption).min(1, { message: "must not be empty" }).max(NOTIFICATION_CAPS.options).optional(),
    sections: z.array(NotificationSection).min(1, { message: "must not be empty" }).max(NOTIFICATION_CAPS.sections).optional(),
    header: NotificationMedia.optional(),
    footer: nonBlankText(NOTIFICATION_CAPS.footer).optional(),
    schema: NotificationFormSchema.optional(),
  })
  .strict()
  .superRefine((b, ctx) => {
    for (const i of compositionIssues(b)) ctx.addIssue({ code: "custom", path: [i.field], message: i.message });
  });
export type NotificationSendBody = z.infer<typeof NotificationSendBody>;

/**
 * A stored notification (spec §2.8): minted `id` (UUID v4) and `created_at` (ISO-8601 UTC), the
 * message, and whichever optional fields the send carried (absent ones are left out). `header`
 * and each `media` item carry their `kind`.
 */
export const Notification = z.object({
  id: z.string(),
  created_at: z.string(),
  message: z.string(),
  audience: z.string().optional(),
  recipient: z.string().optional(),
  media: z.array(Attachment).optional(),
  location: Location.optional(),
  template: RichTemplate.optional(),
  options: z.array(NotificationOption).optional(),
  sections: z.array(NotificationSection).optional(),
  header: Attachment.optional(),
  footer: z.string().optional(),
  schema: JsonObject.optional(),
});
export type Notification = z.infer<typeof Notification>;

/** `GET /api/notifications` answer (the `data` payload). */
export const NotificationFeedAnswer = z.object({ notifications: z.array(Notification) });
export type NotificationFeedAnswer = z.infer<typeof NotificationFeedAnswer>;
