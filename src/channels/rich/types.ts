/**
 * The rich part of an operator message (spec §4.7, with the shapes of §4.9): media, location,
 * template, options or sections (with header and footer) and an ask-less form schema. It is
 * stored on the answer record (`answer_part`) and delivered as one rich part after the text, but
 * only through a channel whose capability flags cover every field it carries; otherwise the record
 * fails loudly. Nothing here is validated: the operator door's schema did that already.
 */
import type { ChannelCapabilities, Location, SendDeps, SendResult } from "../adapter";

export interface MediaItem {
  kind: "image" | "document" | "video" | "audio";
  url: string;
  caption?: string;
  filename?: string;
}

/** A tappable option: a reply submits its text as the next message; a link opens its url. */
export interface RichOption {
  text: string;
  description?: string;
  /** Author-set stable id (comes back as `params.reply_id` where the channel carries it). */
  id?: string;
  kind: "reply" | "link";
  url?: string;
}

export interface RichSection {
  title: string;
  rows: RichOption[];
}

/** A pre-approved message template (out-of-window send) with its named components. */
export interface RichTemplate {
  name: string;
  language: string;
  body_parameters?: string[];
  buttons?: Array<{ payload: string; kind: "quick_reply" }>;
  header_media?: MediaItem;
}

export interface RichPart {
  media?: MediaItem[];
  location?: Location;
  template?: RichTemplate;
  options?: RichOption[];
  sections?: RichSection[];
  /** Media header above an interactive message. */
  header?: MediaItem;
  /** Trailing line under an interactive message. */
  footer?: string;
  /** An ask-less form's answer schema; the submission comes back as an ordinary inbound. */
  schema?: Record<string, unknown>;
}

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
  send(step: RichStep, args: { to: string; from: string }, deps: SendDeps): Promise<SendResult>;
}
