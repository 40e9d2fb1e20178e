/**
 * The rich part of an operator message (spec §4.7, with the shapes of §4.9): media, location,
 * template, options or sections (with header and footer) and an ask-less form schema. It is
 * stored on the answer record (`answer_part`) and delivered as one rich part after the text, but
 * only through a channel whose capability flags cover every field it carries; otherwise the record
 * fails loudly.
 *
 * Each shape is one zod schema with its type under the same name, carrying the contract's rules
 * for one field (bounds, non-blank texts, typed options). The operator door composes its body from
 * `RichPart` and adds the rules across fields; the answer record validates its stored part with it.
 */
import { z } from "zod";
import { jsonObjectSchema } from "../../platform/http/bounded-json";
import { identifierSchema, nonBlankText } from "../../platform/http/identifiers";
import type { ChannelCapabilities, SendDeps, SendResult } from "../channel-types";
import { AttachmentInput, LocationInput, MAX_ATTACHMENTS, MAX_URL } from "../../shared/media";

/** Rows of options across all sections (the spec leaves the cap open; WhatsApp lists hold 10). */
export const MAX_OPTION_ROWS = 10;
export const MAX_OPTION_TEXT = 256;
export const MAX_OPTION_DESCRIPTION = 512;
export const MAX_OPTION_ID = 256;
export const MAX_FOOTER = 256;
export const MAX_TEMPLATE_PARAMETERS = 32;
export const MAX_TEMPLATE_PARAMETER = 1024;
export const MAX_TEMPLATE_BUTTONS = 10;

function isWebUrl(s: string): boolean {
  try {
    const u = new URL(s);
    return (u.protocol === "https:" || u.protocol === "http:") && u.hostname.length > 0;
  } catch {
    return false;
  }
}

/** A tappable option: a reply submits its text as the next message; a link opens its url. A bare string is refused. */
export const RichOption = z
  .object({
    text: nonBlankText(MAX_OPTION_TEXT),
    description: nonBlankText(MAX_OPTION_DESCRIPTION).optional(),
    /** Author-set stable id (comes back as `params.reply_id` where the channel carries it). */
    id: identifierSchema(MAX_OPTION_ID).optional(),
    kind: z.enum(["reply", "link"]),
    url: z.string().max(MAX_URL).optional(),
  })
  .strict()
  .superRefine((o, ctx) => {
    if (o.kind === "link" && (!o.url || !isWebUrl(o.url)))
      ctx.addIssue({ code: "custom", path: ["url"], message: "a link option needs an absolute http(s) url" });
    if (o.kind === "reply" && o.url !== undefined) ctx.addIssue({ code: "custom", path: ["url"], message: "is only for link options" });
  });
export type RichOption = z.infer<typeof RichOption>;

export const RichSection = z
  .object({
    title: nonBlankText(MAX_OPTION_TEXT),
    rows: z.array(RichOption).min(1, { message: "must not be empty" }),
  })
  .strict();
export type RichSection = z.infer<typeof RichSection>;

/** A pre-approved message template (out-of-window send) with its named components. */
export const RichTemplate = z
  .object({
    name: identifierSchema(512),
    language: identifierSchema(32),
    body_parameters: z.array(z.string().max(MAX_TEMPLATE_PARAMETER)).min(1, { message: "must not be empty" }).max(MAX_TEMPLATE_PARAMETERS).optional(),
    buttons: z
      .array(z.object({ payload: nonBlankText(256), kind: z.literal("quick_reply") }).strict())
      .min(1, { message: "must not be empty" })
      .max(MAX_TEMPLATE_BUTTONS)
      .optional(),
    header_media: AttachmentInput.optional(),
  })
  .strict();
export type RichTemplate = z.infer<typeof RichTemplate>;

/** `{}` is contract-invalid ("empty dict"), the rest is transport-bounded like a form. */
const formSchema = jsonObjectSchema.refine((o) => Object.keys(o).length > 0, { message: "must not be empty" });

export const RichPart = z
  .object({
    media: z.array(AttachmentInput).min(1, { message: "must not be empty" }).max(MAX_ATTACHMENTS).optional(),
    location: LocationInput.optional(),
    template: RichTemplate.optional(),
    options: z.array(RichOption).min(1, { message: "must not be empty" }).max(MAX_OPTION_ROWS).optional(),
    sections: z.array(RichSection).min(1, { message: "must not be empty" }).optional(),
    /** Media header above an interactive message. */
    header: AttachmentInput.optional(),
    /** Trailing line under an interactive message. */
    footer: nonBlankText(MAX_FOOTER).optional(),
    /** An ask-less form's answer schema; the submission comes back as an ordinary inbound. */
    schema: formSchema.optional(),
  })
  .strict();
export type RichPart = z.infer<typeof RichPart>;

export type Capability = keyof ChannelCapabilities;

/** The capabilities a channel must advertise to carry `part` (pure). */
export function requiredCapabilities(part: RichPart): Capability[] {
  const need = new Set<Capability>();
  if (part.media?.length) need.add("media");
  if (part.location) need.add("location");
  if (part.template) need.add("template");
  if (part.options?.length || part.sections?.length || part.header || part.footer) need.add("interactive");
  if (part.schema) need.add("form");
  return [...need];
}

/** True when the part carries nothing (no rich field set). */
export function isEmptyPart(part: RichPart | null | undefined): boolean {
  return !part || requiredCapabilities(part).length === 0;
}

/**
 * The rich fields of a send body (an operator send, a notification) as one part; absent fields stay
 * absent and a body with none gives null. Bodies carry other fields too, which are left out.
 */
export function richPartOf(b: RichPart): RichPart | null {
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

/** One provider request of a rich part, as plain JSON (stable across re-drives). */
export type RichStep = Record<string, unknown>;

export type RichPlan = { ok: true; steps: RichStep[] } | { ok: false; reason: string };

/**
 * How a channel carries rich parts. `plan` is pure and deterministic, so a delivery that resumes
 * after its last accepted request re-plans to the same steps; `send` performs one step and never
 * throws (every failure is a classified SendResult, as for text chunks).
 */
export interface RichSender {
  /** Whether the part needs a body text (interactive messages, forms): it then carries the last text chunk. */
  takesBody(part: RichPart): boolean;
  /** The provider requests for `part`; a shape the provider cannot express is refused here (`ok: false`). */
  plan(part: RichPart, body: string): RichPlan;
  /**
   * `body` (an answer's last text chunk) with the answer feedback buttons of record `messageId`
   * under it (src/channels/rich/feedback.ts); refused (`ok: false`) when the body cannot carry
   * them. Absent on a channel without reply buttons.
   */
  feedback?(body: string, messageId: string): RichPlan;
  send(step: RichStep, args: { to: string; from: string }, deps: SendDeps): Promise<SendResult>;
}
