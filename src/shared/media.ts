/**
 * Media and location (spec §4.3, decisions §6 transport shape): one zod schema per shape with its
 * type under the same name. The api message door, the operator door, the channel adapters, the
 * answer record, the turn input and the rich parts all use these.
 *
 * A leaf: it imports nothing from the project but zod, so the bridge, the channels and their rich
 * parts can all import it without forming a circle.
 *
 * The shapes carry no length caps. The caps of decisions §6 bound what the api and operator doors
 * accept (`AttachmentInput`, `LocationInput`); channel media is bounded by the adapters instead
 * (channels/common.ts), so a record's inbound media need not meet the doors' caps, and a stored
 * record validates it against the shape alone: capping the shape would make such a record
 * unreadable.
 */
import { z } from "zod";

/** Most attachments one inbound carries (decisions §6). */
export const MAX_ATTACHMENTS = 50;
/** Longest media URL or provider reference (decisions §6); also bounds option links. */
export const MAX_URL = 8192;
const MAX_CAPTION = 4096;
const MAX_FILENAME = 512;
const MAX_PLACE_TEXT = 1024;

export const MediaKind = z.enum(["image", "document", "video", "audio"]);
export type MediaKind = z.infer<typeof MediaKind>;

/** One media item: an inbound attachment, or an operator's media, template header or interactive header. */
export const Attachment = z
  .object({
    kind: MediaKind,
    /**
     * Where the media lives. A fetchable URL where the provider gives one (Twilio `MediaUrl{i}`,
     * Slack `url_private`, which needs the bot token to download), else a provider reference:
     * `whatsapp-media:<media id>` (resolve with Graph `GET /{media id}`) or
     * `telegram-file:<file_id>` (resolve with Bot API `getFile`). Adapters never download media.
     */
    url: z.string().min(1),
    caption: z.string().optional(),
    filename: z.string().optional(),
  })
  .strict();
export type Attachment = z.infer<typeof Attachment>;

/**
 * An attachment as a channel adapter normalizes it: the provider's MIME type rides along where it
 * names one. It never reaches a record or a turn (the bridge keeps the shape's keys only).
 */
export const InboundAttachment = Attachment.extend({ mime_type: z.string().optional() });
export type InboundAttachment = z.infer<typeof InboundAttachment>;

/** A shared location (spec §4.3 `location`). */
export const Location = z
  .object({
    latitude: z.number().min(-90).max(90),
    longitude: z.number().min(-180).max(180),
    name: z.string().optional(),
    address: z.string().optional(),
  })
  .strict();
export type Location = z.infer<typeof Location>;

const EXT_KIND: Array<[RegExp, MediaKind]> = [
  [/\.(png|jpe?g|gif|webp|heic|bmp|svg)$/i, "image"],
  [/\.(mp4|mov|webm|3gp|mkv|avi)$/i, "video"],
  [/\.(mp3|ogg|oga|opus|wav|m4a|aac|amr|flac)$/i, "audio"],
];

/** Infers an attachment kind when absent: `document` with a filename, else by URL extension, else document. */
export function inferKind(a: { url: string; filename?: string }): MediaKind {
  if (a.filename) return "document";
  let path = a.url;
  try {
    path = new URL(a.url).pathname;
  } catch {
    /* not absolute: use as is */
  }
  return EXT_KIND.find(([re]) => re.test(path))?.[1] ?? "document";
}

/**
 * An attachment as the api and operator doors accept it: the decisions §6 caps, and `kind` may be
 * left out (inferred by `inferKind`). Its output is an `Attachment`; the pipe states that in the
 * schema too, so the OpenAPI document shows a record's media as the shape it is.
 */
export const AttachmentInput = Attachment.extend({
  kind: MediaKind.optional(),
  url: Attachment.shape.url.max(MAX_URL),
  caption: Attachment.shape.caption.unwrap().max(MAX_CAPTION).optional(),
  filename: Attachment.shape.filename.unwrap().max(MAX_FILENAME).optional(),
})
  .transform((a) => ({ ...a, kind: a.kind ?? inferKind(a) }))
  .pipe(Attachment);

/** A location as the api and operator doors accept it: the decisions §6 caps on its texts. */
export const LocationInput = Location.extend({
  name: Location.shape.name.unwrap().max(MAX_PLACE_TEXT).optional(),
  address: Location.shape.address.unwrap().max(MAX_PLACE_TEXT).optional(),
});
